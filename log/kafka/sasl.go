package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL/PLAIN (RFC 4616) and SCRAM (sasl_scram.go). A handshake names the
// mechanism; the tokens then come in SaslAuthenticate requests (handshake
// v1), or for handshake v0 as frames on their own, without a request
// header, answered by frames holding only the server's token (empty for
// PLAIN). Until it succeeds the connection may only send ApiVersions,
// SaslHandshake and SaslAuthenticate.

var errSASLFailed = errors.New("sasl authentication failed")

// mechanisms returns the SASL mechanisms the listener offers.
func (s *Server) mechanisms() []string {
	var out []string
	if s.opts.SASLPlain != nil {
		out = append(out, "PLAIN")
	}
	if s.opts.SASLScram != nil {
		out = append(out, ScramSHA256, ScramSHA512)
	}
	return out
}

// saslRequired reports whether clients must authenticate.
func (s *Server) saslRequired() bool { return s.opts.SASLPlain != nil || s.opts.SASLScram != nil }

func (cc *conn) saslHandshake(req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = cc.s.mechanisms()
	if !slices.Contains(resp.SupportedMechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	if cc.authed {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	cc.saslMec = req.Mechanism
	cc.scram = nil
	if req.Mechanism != "PLAIN" {
		h, _ := scramHash(req.Mechanism)
		cc.scram = &scramServer{mechanism: req.Mechanism, h: h, lookup: cc.s.opts.SASLScram, fakeKey: cc.s.scramKey}
	}
	cc.rawAuthNext = req.Version == 0
	return resp
}

func (cc *conn) saslAuthenticate(req *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if cc.saslMec == "" || cc.authed {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake before it")
		return resp, nil
	}
	answer, done, ok := cc.authStep(req.SASLAuthBytes)
	if !ok {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("authentication failed: invalid user name or password (SASL mechanism " + cc.saslMec + ")")
		cc.saslMec, cc.scram = "", nil // a new handshake starts over
		return resp, nil
	}
	resp.SASLAuthBytes = answer
	cc.authed = done
	return resp, nil
}

// authStep takes the client's next token for the mechanism chosen in the
// handshake: the server's answer, whether the client is now authenticated,
// and false when authentication failed.
func (cc *conn) authStep(tok []byte) (answer []byte, done, ok bool) {
	if cc.scram == nil {
		ok := cc.checkPlain(tok)
		return nil, ok, ok
	}
	answer, done, err := cc.scram.next(tok)
	if err != nil {
		cc.s.logger.Warn("kafka sasl authentication failed", "mechanism", cc.saslMec, "user", cc.scram.user, "remote", cc.c.RemoteAddr().String(), "error", err)
		return nil, false, false
	}
	return answer, done, true
}

// checkPlain checks a PLAIN token: [authzid] NUL user NUL password.
func (cc *conn) checkPlain(tok []byte) bool {
	parts := bytes.SplitN(tok, []byte{0}, 3)
	if len(parts) != 3 {
		return false
	}
	user, pass := string(parts[1]), string(parts[2])
	if len(parts[0]) > 0 && string(parts[0]) != user {
		return false
	}
	ok := cc.s.opts.SASLPlain(user, pass)
	if !ok {
		cc.s.logger.Warn("kafka sasl authentication failed", "user", user, "remote", cc.c.RemoteAddr().String())
	}
	return ok
}

// rawAuth handles a frame after a v0 handshake: a bare token, answered by
// a frame holding only the server's token. A failure closes the connection,
// as Kafka does.
func (cc *conn) rawAuth(frame []byte) ([]byte, error) {
	answer, done, ok := cc.authStep(frame)
	if !ok {
		cc.rawAuthNext = false
		return nil, errSASLFailed
	}
	cc.rawAuthNext = !done
	cc.authed = done
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(answer)), uint32(len(answer)))
	return append(out, answer...), nil
}
