package httptrack

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// BenchmarkServeHTTP measures the source's CPU per request through its
// ServeHTTP (no network), acknowledged at once by a loop that reads as the
// worker does, with a log that costs nothing: decode, enrich, dedup (and
// its journal), queue, Read, Ack, answer.
func BenchmarkServeHTTP(b *testing.B) {
	for _, c := range []struct {
		name, path string
		n          int
	}{{"single", "/v1/track", 1}, {"batch100", "/v1/batch", 100}} {
		b.Run(c.name, func(b *testing.B) {
			src := Connector().NewSource().(*Source)
			cfg := connect.Config{Pipeline: "bench", Connector: "web", Spec: Connector().Spec,
				Values: map[string]string{"listen": "127.0.0.1:0", "write.keys": "k", "state.dir": b.TempDir()}}
			if err := src.Open(b.Context(), cfg); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					recs, err := src.Read(ctx)
					if err != nil {
						return
					}
					for i := len(recs) - 1; i >= 0; i-- {
						if recs[i].Position != nil {
							src.Ack(ctx, recs[i].Position)
							break
						}
					}
				}
			}()
			body := benchBody(c.n)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				// Unique messageIds, as new events have.
				n++
				req := httptest.NewRequest(http.MethodPost, c.path, bytes.NewReader(bytes.ReplaceAll(body, []byte(`-7"`), []byte(`-`+strconv.Itoa(n)+`"`))))
				req.SetBasicAuth("k", "")
				w := httptest.NewRecorder()
				src.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
			cancel()
			<-done
			src.Close(context.Background())
		})
	}
}
