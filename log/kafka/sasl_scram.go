package kafka

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SASL/SCRAM (RFC 5802, RFC 7677) as Kafka serves it (KIP-84): mechanisms
// SCRAM-SHA-256 and SCRAM-SHA-512, no channel binding, the user's
// credential stored salted (never the password). Two round trips:
//
//	client-first  n,,n=<user>,r=<client nonce>[,<extensions>]
//	server-first  r=<client nonce><server nonce>,s=<salt>,i=<iterations>
//	client-final  c=biws,r=<nonce>,p=<client proof>
//	server-final  v=<server signature>
//
// An unknown user gets a made-up salt and fails at the proof, exactly as a
// wrong password does, so that user names cannot be probed.

// SCRAM mechanism names, as Kafka clients send them.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ScramCredential is what the listener stores for a SCRAM user: the salted
// keys of RFC 5802 (Kafka's SCRAM credential), never the password.
type ScramCredential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte // H(ClientKey)
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// minScramIterations is the least iteration count accepted (RFC 7677 and
// Kafka's minimum).
const minScramIterations = 4096

// NewScramCredential derives the credential of password for mechanism
// (ScramSHA256 or ScramSHA512) with a random salt; iterations <= 0 means
// 4096, Kafka's default and minimum.
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	if iterations <= 0 {
		iterations = minScramIterations
	}
	if iterations < minScramIterations {
		return ScramCredential{}, fmt.Errorf("scram credential: %d iterations; use at least %d", iterations, minScramIterations)
	}
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, fmt.Errorf("scram credential: salt: %w", err)
	}
	return deriveScram(h, password, salt, iterations)
}

func deriveScram(h func() hash.Hash, password string, salt []byte, iterations int) (ScramCredential, error) {
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("scram credential: %w", err)
	}
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{Salt: salt, Iterations: iterations, StoredKey: stored.Sum(nil), ServerKey: hmacOf(h, salted, []byte("Server Key"))}, nil
}

func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("scram: unknown mechanism %q (valid: %s, %s)", mechanism, ScramSHA256, ScramSHA512)
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// scramServer is one SCRAM exchange on a connection.
type scramServer struct {
	mechanism string
	h         func() hash.Hash
	lookup    func(mechanism, user string) (ScramCredential, bool)
	fakeKey   []byte // per listener: salts made up for unknown users
	snonce    string // the server's nonce; random when empty (tests set it)

	step        int // 0: expects client-first, 1: client-final, 2: done
	user        string
	known       bool
	cred        ScramCredential
	gs2Header   string
	nonce       string
	clientFirst string // client-first-message-bare
	serverFirst string
}

var errScram = errors.New("scram")

// next takes the client's message and returns the server's answer; done
// is true once the client is authenticated. An error fails the exchange.
func (x *scramServer) next(msg []byte) (answer []byte, done bool, err error) {
	switch x.step {
	case 0:
		a, err := x.first(string(msg))
		if err != nil {
			x.step = 2
			return nil, false, err
		}
		x.step = 1
		return a, false, nil
	case 1:
		x.step = 2
		a, err := x.final(string(msg))
		return a, err == nil, err
	}
	return nil, false, fmt.Errorf("%w: exchange already finished", errScram)
}

func (x *scramServer) first(msg string) ([]byte, error) {
	// gs2-header: cbind flag, authzid, then the bare message.
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first message without a gs2 header", errScram)
	}
	switch {
	case flag == "n", flag == "y":
	case strings.HasPrefix(flag, "p="):
		return nil, fmt.Errorf("%w: channel binding is not supported", errScram)
	default:
		return nil, fmt.Errorf("%w: bad gs2 channel binding flag %q", errScram, flag)
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, fmt.Errorf("%w: client-first message without a gs2 header", errScram)
	}
	x.gs2Header = flag + "," + authzid + ","
	x.clientFirst = bare
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-first message %q lacks n= and r=", errScram, bare)
	}
	user, err := saslName(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	if authzid != "" {
		az, err := saslName(strings.TrimPrefix(authzid, "a="))
		if err != nil || !strings.HasPrefix(authzid, "a=") || az != user {
			return nil, fmt.Errorf("%w: authorization id %q is not the user %q", errScram, authzid, user)
		}
	}
	cnonce := attrs[1][2:]
	if cnonce == "" || strings.ContainsAny(cnonce, ",") {
		return nil, fmt.Errorf("%w: empty client nonce", errScram)
	}
	// Extensions (attrs[2:]) such as Kafka's tokenauth are ignored:
	// delegation tokens are not served, so tokenauth=true fails at the proof.
	x.user = user
	x.cred, x.known = x.lookup(x.mechanism, user)
	if !x.known || x.cred.Iterations < minScramIterations {
		x.known = false
		salt := hmacOf(sha256.New, x.fakeKey, []byte(x.mechanism+"\x00"+user))[:24]
		x.cred = ScramCredential{Salt: salt, Iterations: minScramIterations}
	}
	if x.snonce == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("%w: nonce: %v", errScram, err)
		}
		x.snonce = base64.RawURLEncoding.EncodeToString(b)
	}
	x.nonce = cnonce + x.snonce
	x.serverFirst = "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(x.cred.Salt) + ",i=" + strconv.Itoa(x.cred.Iterations)
	return []byte(x.serverFirst), nil
}

func (x *scramServer) final(msg string) ([]byte, error) {
	withoutProof, proof, ok := strings.Cut(msg, ",p=")
	if !ok {
		return nil, fmt.Errorf("%w: client-final message without a proof", errScram)
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return nil, fmt.Errorf("%w: client-final message lacks c= and r=", errScram)
	}
	if cb, err := base64.StdEncoding.DecodeString(attrs[0][2:]); err != nil || string(cb) != x.gs2Header {
		return nil, fmt.Errorf("%w: channel binding data does not match the gs2 header", errScram)
	}
	// The nonce must end with the one of the server-first message, as
	// Kafka's ScramSaslServer checks it: librdkafka sends its own nonce in
	// front of it once more.
	if !strings.HasSuffix(attrs[1][2:], x.nonce) {
		return nil, fmt.Errorf("%w: nonce mismatch", errScram)
	}
	clientProof, err := base64.StdEncoding.DecodeString(proof)
	if err != nil || len(clientProof) != x.h().Size() {
		return nil, fmt.Errorf("%w: malformed client proof", errScram)
	}
	authMessage := []byte(x.clientFirst + "," + x.serverFirst + "," + withoutProof)
	if !x.known {
		return nil, fmt.Errorf("%w: invalid credentials", errScram)
	}
	sig := hmacOf(x.h, x.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(sig))
	for i := range sig {
		clientKey[i] = clientProof[i] ^ sig[i]
	}
	stored := x.h()
	stored.Write(clientKey)
	if subtle.ConstantTimeCompare(stored.Sum(nil), x.cred.StoredKey) != 1 {
		return nil, fmt.Errorf("%w: invalid credentials", errScram)
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(x.h, x.cred.ServerKey, authMessage))), nil
}

// saslName decodes a SCRAM user name: "=2C" is a comma, "=3D" an equals
// sign, and no other "=" may appear.
func saslName(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: bad escape in user name %q", errScram, s)
		}
		i += 2
	}
	return b.String(), nil
}
