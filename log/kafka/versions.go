package kafka

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionRange is the versions of one request this server answers.
type versionRange struct{ min, max int16 }

// apis is every request the server answers, with the versions it answers,
// as ApiVersions announces them. The maxima stop before versions that need
// what this log does not have: topic ids in Fetch (v13+), OffsetCommit and
// OffsetFetch (v9+, the new consumer protocol), transactions v2 in Produce
// (v12+), tiered storage in ListOffsets (v8+). Clients negotiate down to
// these.
var apis = map[int16]versionRange{
	0:  {3, 11}, // Produce: record batch v2 only
	1:  {4, 12}, // Fetch
	2:  {1, 7},  // ListOffsets: v7 for -3, the max timestamp (KIP-734)
	3:  {0, 12}, // Metadata
	8:  {0, 8},  // OffsetCommit
	9:  {0, 8},  // OffsetFetch
	10: {0, 4},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 5},  // DescribeGroups
	16: {0, 4},  // ListGroups
	17: {0, 1},  // SaslHandshake (only with SASL on)
	18: {0, 4},  // ApiVersions
	19: {0, 7},  // CreateTopics
	20: {0, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 4},  // InitProducerId
	32: {0, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	36: {0, 2},  // SaslAuthenticate (only with SASL on)
	37: {0, 3},  // CreatePartitions
	42: {0, 2},  // DeleteGroups
	44: {0, 1},  // IncrementalAlterConfigs
	47: {0, 0},  // OffsetDelete
}

func supported(key int16, sasl bool) (versionRange, bool) {
	if !sasl && (key == 17 || key == 36) {
		return versionRange{}, false
	}
	v, ok := apis[key]
	return v, ok
}

// apiVersions answers ApiVersions. A version newer than this server knows
// is answered in v0 with UNSUPPORTED_VERSION and the list, so the client
// retries with a version from it (KIP-511).
func (cc *conn) apiVersions(h requestHeader, body []byte) ([]byte, error) {
	resp := kmsg.NewPtrApiVersionsResponse()
	v := apis[18]
	version := h.version
	if version > v.max || version < v.min {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		version = 0
	}
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		if r, ok := supported(key, cc.s.saslRequired()); ok {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MinVersion: r.min, MaxVersion: r.max})
		}
	}
	resp.SetVersion(version)
	if resp.ErrorCode == 0 {
		// Decode the body only to reject garbage; nothing in it changes
		// the answer.
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(version)
		if req.IsFlexible() {
			b, err := skipTags(body)
			if err != nil {
				return nil, err
			}
			body = b
		}
		if err := req.ReadFrom(body); err != nil {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
	}
	return frameResponse(h.corr, resp), nil
}

// unsupported answers a request at a version (or of a kind) this server
// does not serve, as Kafka does: the response of that request with
// UNSUPPORTED_VERSION in its error code. Requests whose response has no
// top-level error code get an empty response.
func (cc *conn) unsupported(h requestHeader, req kmsg.Request) []byte {
	resp := req.ResponseKind()
	v := h.version
	if v > resp.MaxVersion() {
		v = resp.MaxVersion()
	}
	resp.SetVersion(v)
	setErrorCode(resp, kerr.UnsupportedVersion.Code)
	return frameResponse(h.corr, resp)
}

func (cc *conn) unsupportedResponse(h requestHeader, req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	setErrorCode(resp, kerr.UnsupportedVersion.Code)
	return resp
}

// setErrorCode sets the top-level ErrorCode field of a kmsg response, when
// it has one.
func setErrorCode(resp kmsg.Response, code int16) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("ErrorCode"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int16 {
		f.SetInt(int64(code))
	}
}
