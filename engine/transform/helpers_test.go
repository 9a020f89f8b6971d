package transform

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// rec returns a sink-side record with value v ("" for a tombstone).
func rec(v string) connect.Record {
	r := connect.Record{
		Topic: "orders", Partition: 2, Offset: 41, Key: []byte(`{"id":7}`),
		Timestamp: time.UnixMilli(1714564800123),
		Headers:   []connect.Header{{Key: "h", Value: []byte("1")}},
	}
	if v != "" {
		r.Value = []byte(v)
	}
	return r
}

// with returns r changed by fn, for expected records.
func with(r connect.Record, fn func(*connect.Record)) connect.Record {
	fn(&r)
	return r
}

// value returns r with value v ("" for a tombstone).
func value(r connect.Record, v string) connect.Record {
	return with(r, func(r *connect.Record) {
		r.Value = nil
		if v != "" {
			r.Value = []byte(v)
		}
	})
}

func mustNew(t testing.TB, typ string, cfg map[string]string) Transform {
	t.Helper()
	tr, err := Builtin().New(typ, cfg)
	if err != nil {
		t.Fatalf("New(%q, %v): %v", typ, cfg, err)
	}
	return tr
}

// applyCase is one record through one configured transform.
type applyCase struct {
	name string
	cfg  map[string]string
	in   connect.Record
	want []connect.Record
	// err, when set, is a part of the expected error, which must be a bad
	// record carrying an *Error.
	err string
}

func runApply(t *testing.T, typ string, cases []applyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustNew(t, typ, tc.cfg)
			in := tc.in.Clone()
			got, err := tr.Apply(tc.in)
			if !tc.in.Equal(in) {
				t.Errorf("Apply modified its input: %s", show([]connect.Record{tc.in}))
			}
			if tc.err != "" {
				checkBadRecord(t, err, typ, tc.err)
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !equalRecords(got, tc.want) {
				t.Errorf("Apply:\n got  %s\n want %s", show(got), show(tc.want))
			}
		})
	}
}

func checkBadRecord(t *testing.T, err error, typ, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Apply succeeded, want an error containing %q", want)
	}
	if !connect.IsBadRecord(err) {
		t.Errorf("error %q is not marked as a bad record", err)
	}
	var te *Error
	if !errors.As(err, &te) || te.Transform != typ {
		t.Errorf("error %q does not carry an *Error of transform %s", err, typ)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// configCase is a configuration New must reject.
type configCase struct {
	name string
	cfg  map[string]string
	err  string // a part of the expected error
}

func runConfig(t *testing.T, typ string, cases []configCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Builtin().New(typ, tc.cfg)
			if err == nil {
				t.Fatalf("New(%v) = %T, want an error containing %q", tc.cfg, tr, tc.err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %q is not a *ConfigError", err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q does not contain %q", err, tc.err)
			}
		})
	}
}

func equalRecords(a, b []connect.Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func show(rs []connect.Record) string {
	if len(rs) == 0 {
		return "(no records)"
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("\n      ")
		}
		v := "null"
		if r.Value != nil {
			v = string(r.Value)
		}
		k := "null"
		if r.Key != nil {
			k = string(r.Key)
		}
		b.WriteString("topic=" + r.Topic + " key=" + k + " value=" + v)
		for _, h := range r.Headers {
			b.WriteString(" header " + h.Key + "=" + string(h.Value))
		}
	}
	return b.String()
}
