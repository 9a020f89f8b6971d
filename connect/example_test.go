package connect_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// counter is a tiny source: it emits numbered records and resumes after the
// last durable one. Its Position is the number as text.
type counter struct {
	next  int
	acked int
}

var _ connect.Source = (*counter)(nil)

func (c *counter) Open(ctx context.Context, cfg connect.Config) error {
	c.next = 1
	if cfg.Position != nil {
		last, err := strconv.Atoi(string(cfg.Position))
		if err != nil {
			return fmt.Errorf("open counter: position %q: %w", cfg.Position, err)
		}
		c.next = last + 1
	}
	return nil
}

func (c *counter) Read(ctx context.Context) ([]connect.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	batch := make([]connect.Record, 3)
	for i := range batch {
		n := strconv.Itoa(c.next)
		batch[i] = connect.Record{Value: []byte(`{"seq":` + n + `}`), Position: connect.Position(n)}
		c.next++
	}
	return batch, nil
}

func (c *counter) Ack(ctx context.Context, pos connect.Position) error {
	// Here a real source tells its upstream (e.g. a Postgres standby
	// status update) that everything up to pos is safe.
	n, err := strconv.Atoi(string(pos))
	if err != nil {
		return fmt.Errorf("ack counter: position %q: %w", pos, err)
	}
	c.acked = n
	return nil
}

func (c *counter) Close(ctx context.Context) error { return nil }

// The worker's side of a source, reduced to its core: read a batch, make it
// durable, store the last position, then acknowledge it. After a restart
// the source resumes after the stored position.
func Example_source() {
	ctx := context.Background()
	var stored connect.Position // what the worker keeps in the offsets topic

	for run := 1; run <= 2; run++ {
		src := &counter{}
		if err := src.Open(ctx, connect.Config{Pipeline: "demo", Connector: "counter", Position: stored}); err != nil {
			fmt.Println(err)
			return
		}
		batch, err := src.Read(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		// ... append batch to the log and wait until it is durable ...
		stored = batch[len(batch)-1].Position
		if err := src.Ack(ctx, stored); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("run %d: first %s, acked up to %d\n", run, batch[0].Value, src.acked)
		src.Close(ctx)
	}
	// Output:
	// run 1: first {"seq":1}, acked up to 3
	// run 2: first {"seq":4}, acked up to 6
}

func ExampleDebeziumJSON_Encode() {
	e := &connect.ChangeEvent{
		Op:    connect.OpCreate,
		Key:   connect.Row{{Name: "id", Value: 1001}},
		After: connect.Row{{Name: "id", Value: 1001}, {Name: "email", Value: "sally@example.org"}, {Name: "score", Value: 4.0}},
		Source: connect.SourceInfo{
			Version:   "0.1.0",
			Connector: connect.ConnectorPostgres,
			Name:      "dbserver1",
			Snapshot:  connect.SnapshotFalse,
			DB:        "inventory",
			Extra:     connect.Row{{Name: "schema", Value: "public"}, {Name: "table", Value: "customers"}, {Name: "lsn", Value: 24023128}},
		},
	}
	e.Source.SetTime(time.UnixMilli(1714000000000))
	e.SetTime(time.UnixMilli(1714000000142))

	key, value, err := connect.DebeziumJSON{}.Encode(e)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n%s\n", key, value)
	// Output:
	// {"id":1001}
	// {"before":null,"after":{"id":1001,"email":"sally@example.org","score":4.0},"source":{"version":"0.1.0","connector":"postgresql","name":"dbserver1","ts_ms":1714000000000,"snapshot":"false","db":"inventory","sequence":null,"ts_us":1714000000000000,"ts_ns":1714000000000000000,"schema":"public","table":"customers","lsn":24023128},"op":"c","ts_ms":1714000000142,"ts_us":1714000000142000,"ts_ns":1714000000142000000,"transaction":null}
}

func ExampleDebeziumJSON_RecordIn() {
	// A source encoding a batch: the records' bytes share blocks, and
	// each record stays valid after later ones are written.
	var blk connect.Blocks
	var batch []connect.Record
	for id := range 3 {
		row := connect.Row{{Name: "id", Value: int64(id)}, {Name: "name", Value: "item"}}
		e := &connect.ChangeEvent{Op: connect.OpRead, Key: row[:1], After: row,
			Source: connect.SourceInfo{Version: "0.1.0", Connector: "demo", Name: "srv", Snapshot: connect.SnapshotTrue, DB: "shop"}}
		rec, err := connect.DebeziumJSON{}.RecordIn(&blk, "srv.shop.items", e)
		if err != nil {
			fmt.Println(err)
			return
		}
		batch = append(batch, rec)
	}
	for _, rec := range batch {
		fmt.Printf("%s %s\n", rec.Key, rec.Value[:45])
	}
	// Output:
	// {"id":0} {"before":null,"after":{"id":0,"name":"item"}
	// {"id":1} {"before":null,"after":{"id":1,"name":"item"}
	// {"id":2} {"before":null,"after":{"id":2,"name":"item"}
}

func ExampleDebeziumJSON_Decode() {
	value := []byte(`{
	  "schema": {"type": "struct", "optional": false, "name": "srv.public.t.Envelope", "fields": [
	    {"field": "after", "type": "struct", "optional": true, "fields": [
	      {"field": "id", "type": "int32", "optional": false},
	      {"field": "photo", "type": "bytes", "optional": true}]},
	    {"field": "op", "type": "string", "optional": false}]},
	  "payload": {"after": {"id": 7, "photo": "iVBO"}, "op": "r"}}`)

	e, err := connect.DebeziumJSON{}.Decode(nil, value)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := e.After.Get("id")
	photo, _ := e.After.Get("photo")
	fmt.Printf("op %s, id %v (%T), photo % x, envelope %s\n", e.Op, id, id, photo, e.Schema.Name)

	_, err = connect.DebeziumJSON{}.Decode([]byte(`{"id":7}`), nil)
	fmt.Println(errors.Is(err, connect.ErrTombstone))
	// Output:
	// op r, id 7 (int64), photo 89 50 4e, envelope srv.public.t.Envelope
	// true
}

func ExampleNewEventSchema() {
	es, err := connect.NewEventSchema("dbserver1.public.orders", []connect.Schema{
		{Field: "id", Type: connect.SchemaInt64},
		{Field: "placed_at", Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalMicroTimestamp, Version: 1},
	}, []string{"id"})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := &connect.ChangeEvent{Op: connect.OpCreate, Key: connect.Row{{Name: "id", Value: 1}}, Schema: es}
	key, err := connect.DebeziumJSON{Schemas: true}.EncodeKey(e)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(es.Name)
	fmt.Printf("%s\n", key)
	// Output:
	// dbserver1.public.orders.Envelope
	// {"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"dbserver1.public.orders.Key"},"payload":{"id":1}}
}

func ExampleRow() {
	var r connect.Row
	r.Set("id", 1)
	r.Set("email", "a@example.org")
	r.Set("id", 2)
	r.Delete("email")
	r.Set("tier", "gold")
	fmt.Println(r)
	// Output:
	// {"id":2,"tier":"gold"}
}

func ExampleRegistry() {
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{
		Name:        "stdout",
		Kind:        connect.KindSink,
		Version:     "0.1.0",
		Description: "Prints every record.",
		NewSink:     func() connect.Sink { return nil /* a real sink here */ },
	})
	c, err := reg.Lookup(connect.KindSink, "stdout")
	fmt.Println(c.Name, c.Version, err)
	_, err = reg.Lookup(connect.KindSink, "stdou")
	fmt.Println(err)
	// Output:
	// stdout 0.1.0 <nil>
	// unknown connector: sink "stdou" (valid: stdout)
}

func ExampleConfig() {
	spec := connect.Spec{Params: []connect.Param{
		{Name: "url", Type: connect.TypeString, Required: true, Description: "Endpoint."},
		{Name: "timeout", Type: connect.TypeDuration, Default: "10s", Description: "Request timeout."},
		{Name: "batch.size", Type: connect.TypeInt, Default: "100", Description: "Records per request."},
		{Name: "secret", Type: connect.TypePassword, Description: "Signing secret."},
	}}
	cfg := connect.Config{
		Pipeline: "crm", Connector: "hubspot", Spec: spec,
		Values: map[string]string{"url": "https://api.example.com", "batch.size": "lots", "secret": "whsec_x"},
	}
	timeout, err := cfg.Duration("timeout")
	fmt.Println(timeout, err)
	_, err = cfg.Int("batch.size")
	fmt.Println(err)
	fmt.Println(cfg)
	// Output:
	// 10s <nil>
	// batch.size: "lots" is not an integer
	// {pipeline=crm connector=hubspot task=0 values={batch.size=lots secret=******** url=https://api.example.com}}
}

func ExampleSpec_Markdown() {
	spec := connect.Spec{Params: []connect.Param{
		{Name: "path", Type: connect.TypeString, Required: true, Description: "File to append to."},
		{Name: "fsync", Type: connect.TypeString, Default: "always", Enum: []string{"always", "never"}, Description: "When to fsync."},
	}}
	fmt.Print(spec.Markdown())
	// Output:
	// | Parameter | Type | Default | Required | Allowed values | Description |
	// |---|---|---|---|---|---|
	// | `path` | string |  | yes |  | File to append to. |
	// | `fsync` | string | `always` | no | `always`, `never` | When to fsync. |
}

func ExampleBadRecordAt() {
	// A sink learns that the third record of a batch was rejected.
	err := fmt.Errorf("post batch: %w", connect.BadRecordAt(2, errors.New("http 400: invalid email")))

	var bad *connect.BadRecordError
	if errors.As(err, &bad) {
		fmt.Printf("dead-letter record %d (%v); records before it were delivered\n", bad.Index, bad.Err)
	}
	fmt.Println(connect.IsRetryable(connect.RetryAfter(30*time.Second, errors.New("http 429"))))
	// Output:
	// dead-letter record 2 (http 400: invalid email); records before it were delivered
	// true
}
