package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
)

// envServer sets --server.
const envServer = "TRIBUTARY_SERVER"

// restClient talks to a running worker's REST API: the connectors commands
// always, and the log commands under --server (while that worker holds the
// data directory).
type restClient struct {
	base string
	http *http.Client
}

var _ logClient = (*restClient)(nil)

func newRESTClient(server string) *restClient {
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return &restClient{base: strings.TrimRight(server, "/"), http: &http.Client{Timeout: 60 * time.Second}}
}

// apiError is an error answer of the API.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *restClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	var connected atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	}))
	resp, err := c.http.Do(req)
	if err != nil {
		return c.callError(ctx, method, path, connected.Load(), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if !isJSON(resp.Header.Get("Content-Type")) && (resp.StatusCode >= 300 || out != nil) {
		return notAWorker(c.base, resp)
	}
	if resp.StatusCode >= 300 {
		ae := &apiError{Code: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || ae.Message == "" {
			ae.Message = fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, firstLine(string(data)))
		}
		return mapAPIError(ae)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// callError is the error of a call that got no answer. Only when no
// connection was made is the worker's address in doubt; a call the worker
// took but did not answer in time, or that a signal (Ctrl-C, timeout(1))
// interrupted, says so.
func (c *restClient) callError(ctx context.Context, method, path string, connected bool, err error) error {
	call := method + " " + c.base + path
	// net/http names the call again (Get "http://…": …): keep its cause.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case ctx.Err() != nil && connected:
		return fmt.Errorf("%s: interrupted while waiting for the worker's answer (%v); the worker may still carry the request out", call, context.Cause(ctx))
	case ctx.Err() != nil:
		return fmt.Errorf("%s: interrupted before the worker answered (%v)", call, context.Cause(ctx))
	case connected:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%s: the worker did not answer within %s; it may still carry the request out", call, c.http.Timeout)
		}
		return fmt.Errorf("%s: %w", call, err)
	}
	return fmt.Errorf("%s: %w (is `tributary run` serving its REST API there? set --server or %s)", call, err, envServer)
}

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(strings.ToLower(mt)) == "application/json"
}

// notAWorker is the one-line error for a --server that answers, but not
// as a Tributary worker (another web server, a proxy's error page).
func notAWorker(base string, resp *http.Response) error {
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Errorf("%s: not a Tributary worker (got %s %s); check --server / %s", base, strings.TrimSpace(ct), resp.Status, envServer)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// mapAPIError turns answers back into the log's sentinels where commands
// branch on them.
func mapAPIError(e *apiError) error {
	switch {
	case e.Code == 404 && strings.Contains(e.Message, tlog.ErrUnknownTopic.Error()):
		return fmt.Errorf("%w: %s", tlog.ErrUnknownTopic, e.Message)
	case e.Code == 409 && strings.Contains(e.Message, tlog.ErrTopicExists.Error()):
		return fmt.Errorf("%w: %s", tlog.ErrTopicExists, e.Message)
	case e.Code == 400 && strings.Contains(e.Message, tlog.ErrOffsetOutOfRange.Error()):
		return fmt.Errorf("%w: %s", tlog.ErrOffsetOutOfRange, e.Message)
	case e.Code == 400 && strings.HasPrefix(e.Message, tlog.ErrPolicyViolation.Error()):
		return &hintError{msg: e.Message, err: tlog.ErrPolicyViolation}
	case e.Code == 409 && strings.Contains(e.Message, tlog.ErrGroupNotEmpty.Error()):
		return &hintError{msg: e.Message, err: tlog.ErrGroupNotEmpty}
	case e.Code == 404 && e.Message == rest.NoLogEndpoints:
		return errors.New(rest.NoLogEndpoints)
	case e.Code == 404 && strings.HasPrefix(e.Message, "Connector ") && strings.HasSuffix(e.Message, " not found"):
		return &hintError{msg: e.Message + "; list the worker's connectors with `tributary connectors list`", err: e}
	}
	return e
}

func (c *restClient) Close() error { return nil }

func (c *restClient) CreateTopic(ctx context.Context, name string, partitions int, config map[string]string) error {
	return c.do(ctx, "POST", "/topics", rest.TopicRequest{Name: name, Partitions: partitions, Config: config}, nil)
}

func (c *restClient) ListTopics(ctx context.Context) ([]string, error) {
	var out []string
	return out, c.do(ctx, "GET", "/topics", nil, &out)
}

func (c *restClient) NotOpenedTopics(ctx context.Context) ([]tlog.TopicNotOpenedError, error) {
	var raw json.RawMessage
	if err := c.do(ctx, "GET", "/topics?expand=status", nil, &raw); err != nil {
		return nil, err
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		return nil, nil // a worker older than ?expand=status lists open topics only
	}
	var all map[string]rest.TopicListEntry
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("GET /topics?expand=status: %w", err)
	}
	var out []tlog.TopicNotOpenedError
	for n, e := range all {
		if e.Status.State == rest.TopicNotOpened {
			out = append(out, tlog.TopicNotOpenedError{Topic: n, Partitions: e.Status.Partitions, Limit: e.Status.Limit})
		}
	}
	slices.SortFunc(out, func(a, b tlog.TopicNotOpenedError) int { return strings.Compare(a.Topic, b.Topic) })
	return out, nil
}

// DescribeTopic describes an open topic; a topic the worker's log left
// closed is a *tlog.TopicNotOpenedError, as in process.
func (c *restClient) DescribeTopic(ctx context.Context, name string) (tlog.TopicDescription, error) {
	t, err := c.getTopic(ctx, name)
	if err != nil {
		return tlog.TopicDescription{}, err
	}
	if st := t.Status; st != nil && st.State == rest.TopicNotOpened {
		return tlog.TopicDescription{}, &tlog.TopicNotOpenedError{Topic: t.Name, ID: t.ID, Partitions: st.Partitions, Limit: st.Limit}
	}
	d := tlog.TopicDescription{Name: t.Name, ID: t.ID, Overrides: t.Overrides, Config: t.Config}
	for _, p := range t.Partitions {
		if p.LogStartOffset == nil || p.LogEndOffset == nil || p.Size == nil {
			return tlog.TopicDescription{}, fmt.Errorf("GET /topics/%s: the worker at %s answered partition %d without its offsets, and no status saying why; run a worker of this version of tributary, or run without --server", name, c.base, p.Partition)
		}
		d.Partitions = append(d.Partitions, tlog.PartitionStats{Topic: t.Name, Partition: p.Partition, LogStartOffset: *p.LogStartOffset, LogEndOffset: *p.LogEndOffset, Size: *p.Size})
	}
	return d, nil
}

// DescribeTopicConfig returns the id and configs of a topic, open or
// closed.
func (c *restClient) DescribeTopicConfig(ctx context.Context, name string) (tlog.TopicDescription, error) {
	t, err := c.getTopic(ctx, name)
	if err != nil {
		return tlog.TopicDescription{}, err
	}
	return tlog.TopicDescription{Name: t.Name, ID: t.ID, Overrides: t.Overrides, Config: t.Config}, nil
}

func (c *restClient) getTopic(ctx context.Context, name string) (rest.TopicJSON, error) {
	var t rest.TopicJSON
	err := c.do(ctx, "GET", "/topics/"+url.PathEscape(name), nil, &t)
	return t, err
}

func (c *restClient) DeleteTopic(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/topics/"+url.PathEscape(name), nil, nil)
}

func (c *restClient) CreatePartitions(ctx context.Context, name string, total int) error {
	return c.do(ctx, "PATCH", "/topics/"+url.PathEscape(name), rest.AlterTopicJSON{Partitions: total}, nil)
}

func (c *restClient) AlterTopicConfig(ctx context.Context, name string, set map[string]string, remove []string) error {
	return c.do(ctx, "PATCH", "/topics/"+url.PathEscape(name), rest.AlterTopicJSON{Config: set, DeleteConfig: remove}, nil)
}

func (c *restClient) DeleteRecords(ctx context.Context, name string, partition int32, offset int64) (int64, error) {
	var out rest.DeleteRecordsJSON
	err := c.do(ctx, "POST", fmt.Sprintf("/topics/%s/partitions/%d/delete-records", url.PathEscape(name), partition), rest.DeleteRecordsJSON{Offset: offset}, &out)
	if err == nil && out.LowWatermark == nil {
		return 0, fmt.Errorf("POST /topics/%s/partitions/%d/delete-records: the worker at %s answered no low watermark; upgrade the worker to this version of tributary, or run without --server", name, partition, c.base)
	}
	if err != nil {
		return 0, err
	}
	return *out.LowWatermark, nil
}

func (c *restClient) Partitions(ctx context.Context, topic string, create bool) (int, error) {
	d, err := c.DescribeTopic(ctx, topic)
	var notOpened *tlog.TopicNotOpenedError
	if errors.Is(err, tlog.ErrUnknownTopic) && !errors.As(err, &notOpened) && create {
		// The worker's log creates the topic on first produce; ask for
		// its default by creating it with one partition per default.
		if err := c.CreateTopic(ctx, topic, 1, nil); err != nil && !errors.Is(err, tlog.ErrTopicExists) {
			return 0, err
		}
		d, err = c.DescribeTopic(ctx, topic)
	}
	if err != nil {
		return 0, err
	}
	return len(d.Partitions), nil
}

func (c *restClient) Append(ctx context.Context, topic string, partition int32, recs []tlog.Record) (int64, error) {
	// Bytes travel in base64: JSON strings would turn bytes that are not
	// UTF-8 into U+FFFD.
	enc := rest.RecordEncoding(rest.EncodingBase64)
	body := rest.ProduceJSON{Records: make([]rest.ProduceRecordJSON, len(recs))}
	for i, r := range recs {
		p := partition
		body.Records[i] = rest.ProduceRecordJSON{Partition: &p, Key: enc.Encode(r.Key), Value: enc.Encode(r.Value)}
		for _, h := range r.Headers {
			body.Records[i].Headers = append(body.Records[i].Headers, enc.EncodeHeader(h))
		}
	}
	_, before, err := c.Offsets(ctx, topic, partition)
	if err != nil && !errors.Is(err, tlog.ErrUnknownTopic) {
		return 0, err
	}
	path := "/topics/" + url.PathEscape(topic) + "/records?encoding=" + rest.EncodingBase64
	var ack rest.ProducedJSON
	if err := c.do(ctx, "POST", path, body, &ack); err != nil {
		return before, err
	}
	if ack.Encoding != enc {
		return before, fmt.Errorf("POST %s: the worker at %s does not know encoding=%s and stored the %d records' keys and values as base64 text; upgrade the worker to this version of tributary, or produce without --server", path, c.base, rest.EncodingBase64, len(recs))
	}
	return before, nil
}

func (c *restClient) Offsets(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	var o rest.OffsetsJSON
	err := c.do(ctx, "GET", fmt.Sprintf("/topics/%s/partitions/%d/offsets", url.PathEscape(topic), partition), nil, &o)
	return o.LogStartOffset, o.LogEndOffset, err
}

func (c *restClient) OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, bool, error) {
	var o rest.OffsetsJSON
	err := c.do(ctx, "GET", fmt.Sprintf("/topics/%s/partitions/%d/offsets?timestamp=%d", url.PathEscape(topic), partition, t.UnixMilli()), nil, &o)
	if err != nil || o.Offset == nil {
		return o.LogEndOffset, false, err
	}
	return *o.Offset, o.Found, nil
}

func (c *restClient) Read(ctx context.Context, topic string, partition int32, offset int64, opts tlog.ReadOptions) (tlog.ReadResult, error) {
	q := url.Values{}
	q.Set("offset", strconv.FormatInt(offset, 10))
	q.Set("max_bytes", strconv.Itoa(opts.MaxBytes))
	q.Set("max_wait_ms", strconv.FormatInt(opts.MaxWait.Milliseconds(), 10))
	// Bytes travel in base64: JSON strings would turn bytes that are not
	// UTF-8 into U+FFFD.
	enc := rest.RecordEncoding(rest.EncodingBase64)
	q.Set("encoding", rest.EncodingBase64)
	path := fmt.Sprintf("/topics/%s/partitions/%d/records?%s", url.PathEscape(topic), partition, q.Encode())
	var r rest.ReadJSON
	if err := c.do(ctx, "GET", path, nil, &r); err != nil {
		return tlog.ReadResult{NextOffset: offset}, err
	}
	if r.Encoding != enc {
		return tlog.ReadResult{NextOffset: offset}, fmt.Errorf("GET %s: the worker at %s does not know encoding=%s, so keys and values that are not UTF-8 would print changed; upgrade the worker to this version of tributary, or consume without --server", path, c.base, rest.EncodingBase64)
	}
	res := tlog.ReadResult{NextOffset: r.NextOffset, HighWatermark: r.HighWatermark, LogStartOffset: r.LogStartOffset}
	for _, rec := range r.Records {
		lr, err := decodeRead(enc, topic, rec)
		if err != nil {
			return tlog.ReadResult{NextOffset: offset}, fmt.Errorf("GET %s: record at offset %d: %w", path, rec.Offset, err)
		}
		res.Records = append(res.Records, lr)
	}
	return res, nil
}

// decodeRead returns the log's record of a record read in enc.
func decodeRead(enc rest.RecordEncoding, topic string, rec rest.RecordJSON) (tlog.Record, error) {
	lr := tlog.Record{Topic: topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: time.UnixMilli(rec.Timestamp)}
	var err error
	if lr.Key, err = enc.Decode(rec.Key); err != nil {
		return tlog.Record{}, fmt.Errorf("key: %w", err)
	}
	if lr.Value, err = enc.Decode(rec.Value); err != nil {
		return tlog.Record{}, fmt.Errorf("value: %w", err)
	}
	for _, h := range rec.Headers {
		hh, err := enc.DecodeHeader(h)
		if err != nil {
			return tlog.Record{}, err
		}
		lr.Headers = append(lr.Headers, hh)
	}
	return lr, nil
}

func (c *restClient) ListGroups(ctx context.Context) ([]string, error) {
	var out []string
	return out, c.do(ctx, "GET", "/groups", nil, &out)
}

func (c *restClient) DescribeGroup(ctx context.Context, group string) ([]tlog.PartitionLag, error) {
	var body rest.GroupJSON
	if err := c.do(ctx, "GET", "/groups/"+url.PathEscape(group), nil, &body); err != nil {
		return nil, err
	}
	var out []tlog.PartitionLag
	for _, p := range body.Partitions {
		out = append(out, tlog.PartitionLag{Group: group, Topic: p.Topic, Partition: p.Partition, CurrentOffset: p.CurrentOffset, LogEndOffset: p.LogEndOffset, Lag: p.Lag,
			ConsumerID: p.ConsumerID, Host: p.Host, ClientID: p.ClientID})
	}
	return out, nil
}

// GroupMembers returns a group's active members: consumers joined through
// the worker's Kafka listener and the sink connectors that consume as the
// group; none for a group that does not exist.
func (c *restClient) GroupMembers(ctx context.Context, group string) ([]rest.GroupMemberJSON, error) {
	var body rest.GroupJSON
	if err := c.do(ctx, "GET", "/groups/"+url.PathEscape(group), nil, &body); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == 404 {
			return nil, nil
		}
		return nil, err
	}
	return body.Members, nil
}

func (c *restClient) PlanReset(ctx context.Context, group string, spec tlog.ResetSpec) ([]tlog.ResetPlan, error) {
	var out struct {
		Plan []tlog.ResetPlan `json:"plan"`
	}
	return out.Plan, c.do(ctx, "POST", "/groups/"+url.PathEscape(group)+"/reset", rest.ResetJSON{Spec: spec}, &out)
}

func (c *restClient) ApplyReset(ctx context.Context, group string, plan []tlog.ResetPlan) error {
	return c.do(ctx, "POST", "/groups/"+url.PathEscape(group)+"/reset", rest.ResetJSON{Plan: plan, Execute: true}, nil)
}

func (c *restClient) DeleteGroup(ctx context.Context, group string) error {
	return c.do(ctx, "DELETE", "/groups/"+url.PathEscape(group), nil, nil)
}

func (c *restClient) CommittedOffset(ctx context.Context, group, topic string, partition int32) (int64, bool, error) {
	lags, err := c.DescribeGroup(ctx, group)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == 404 {
			return 0, false, nil
		}
		return 0, false, err
	}
	for _, l := range lags {
		if l.Topic == topic && l.Partition == partition && l.CurrentOffset >= 0 {
			return l.CurrentOffset, true, nil
		}
	}
	return 0, false, nil
}

func (c *restClient) Commit(ctx context.Context, group string, offsets []tlog.OffsetCommit) error {
	var body rest.CommitJSON
	for _, o := range offsets {
		body.Offsets = append(body.Offsets, rest.GroupPartitionJSON{Topic: o.Topic, Partition: o.Partition, CurrentOffset: o.Offset})
	}
	return c.do(ctx, "POST", "/groups/"+url.PathEscape(group)+"/offsets", body, nil)
}

// serverClient returns the REST client of --server (default 127.0.0.1:8083).
func (a *app) serverClient() *restClient {
	addr := a.server
	if addr == "" {
		addr = rest.DefaultAddr
	}
	return newRESTClient(addr)
}
