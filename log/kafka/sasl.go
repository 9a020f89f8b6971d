package kafka

import (
	"bytes"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL/PLAIN (RFC 4616). A handshake names the mechanism; the token then
// comes in a SaslAuthenticate request (handshake v1), or for handshake v0
// as the next frame on its own, without a request header, answered by an
// empty frame. Until it succeeds the connection may only send ApiVersions,
// SaslHandshake and SaslAuthenticate.

var errSASLFailed = errors.New("sasl authentication failed")

func (cc *conn) saslHandshake(req *kmsg.SASLHandshakeRequest) *kmsg.SASLHandshakeResponse {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = []string{"PLAIN"}
	if req.Mechanism != "PLAIN" {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp
	}
	if cc.authed {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp
	}
	cc.saslMec = req.Mechanism
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
	if !cc.checkPlain(req.SASLAuthBytes) {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("authentication failed: invalid user name or password")
		return resp, nil
	}
	cc.authed = true
	return resp, nil
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

// rawAuth handles the frame after a v0 handshake: the bare token.
func (cc *conn) rawAuth(frame []byte) ([]byte, error) {
	cc.rawAuthNext = false
	if !cc.checkPlain(frame) {
		return nil, errSASLFailed
	}
	cc.authed = true
	return []byte{0, 0, 0, 0}, nil
}
