package mysql

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestMariaTypes_RoundTrip writes UUID, INET4 and INET6 values (random,
// and the edge cases of INET6's text form) and checks that the streamed
// events, the snapshot's events and MariaDB's own text of each value are
// the same strings; a UUID key is updated to another (a key change).
func TestMariaTypes_RoundTrip(t *testing.T) {
	d := newDB(t, "CREATE TABLE m (id uuid PRIMARY KEY, a inet4, b inet6, n int)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	v6 := []string{"::", "::1", "::ffff:1.2.3.4", "::1.2.3.4", "::0.1.0.0", "1::", "1:0:2:3:4:5:6:7", "1:0:0:2:0:0:0:3",
		"1:0:0:2:3:0:0:4", "2001:db8::ff00:42:8329", "fe80::1:0:0:1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "0:0:0:0:0:1:0:0",
		"::ffff:0.0.0.0", "0:0:0:0:1::"}
	const n = 60
	var rows [][3]string
	for i := range n {
		u := make([]byte, 16)
		for j := range u {
			u[j] = byte(rng.IntN(256))
		}
		if i%3 == 0 {
			u[6] = u[6]&0x0f | 0x10 // version 1: MariaDB once stored these with swapped parts
			u[8] = u[8]&0x3f | 0x80
		}
		var w [16]byte
		for j := range w {
			if rng.IntN(3) > 0 { // many zero bytes, so zero words and runs
				w[j] = byte(rng.IntN(256))
			}
		}
		addr := netip.AddrFrom16(w).String()
		if i < len(v6) {
			addr = v6[i]
		}
		ip4 := fmt.Sprintf("%d.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256), rng.IntN(256))
		uuid, _ := mariaText(mariaUUID, u)
		if _, err := d.db.Exec("INSERT INTO m VALUES (?, ?, ?, ?)", uuid, ip4, addr, i); err != nil {
			// MariaDB refuses some version and variant bits: an RFC 4122
			// version 4 UUID then.
			u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
			uuid, _ = mariaText(mariaUUID, u)
			d.exec(t, "INSERT INTO m VALUES (?, ?, ?, ?)", uuid, ip4, addr, i)
		}
		rows = append(rows, [3]string{uuid, ip4, addr})
	}
	d.exec(t, "UPDATE m SET id = '00000000-0000-0000-0000-0000000000ff' WHERE n = 1")

	// MariaDB's own text of every row, by n.
	want := map[int64]string{}
	q, err := d.db.Query("SELECT n, id, a, b FROM m")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var nn int64
		var id, a, b string
		if err := q.Scan(&nn, &id, &a, &b); err != nil {
			t.Fatal(err)
		}
		want[nn] = id + " " + a + " " + b
	}
	q.Close()

	text := func(r connect.Row) (int64, string) {
		get := func(name string) string {
			v, _ := r.Get(name)
			str, ok := v.(string)
			if !ok {
				t.Fatalf("%s is %T (%v), want a string", name, v, v)
			}
			return str
		}
		nv, _ := r.Get("n")
		return nv.(int64), get("id") + " " + get("a") + " " + get("b")
	}
	streamed := map[int64]string{}
	recs := readRecords(t, s, n+3, 30*time.Second) // n creates, then delete, tombstone, create
	for _, e := range decode(t, recs) {
		if e.Ev == nil {
			continue
		}
		if e.Ev.Op == connect.OpDelete {
			if !strings.Contains(string(e.Rec.Key), rows[1][0]) {
				t.Errorf("the key change's delete has key %s, want %s", e.Rec.Key, rows[1][0])
			}
			continue
		}
		nn, txt := text(e.Ev.After)
		streamed[nn] = txt
	}
	s.Close(context.Background())

	snap := openSource(t, d, map[string]string{"snapshot.mode": "initial_only"}, nil)
	snapped := map[int64]string{}
	for _, e := range decode(t, readRecords(t, snap, n, 30*time.Second)) {
		nn, txt := text(e.Ev.After)
		snapped[nn] = txt
	}
	for i := range int64(n) {
		if streamed[i] != want[i] || snapped[i] != want[i] {
			t.Errorf("row %d (inserted %q):\n  mariadb  %s\n  streamed %s\n  snapshot %s", i, rows[i], want[i], streamed[i], snapped[i])
		}
	}
}

func TestInet6Text(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"::", "::"}, {"::1", "::1"}, {"::ffff:1.2.3.4", "::ffff:1.2.3.4"}, {"::1.2.3.4", "::1.2.3.4"},
		{"1:0:0:2:0:0:0:3", "1:0:0:2::3"}, {"1:0:0:2:3:0:0:4", "1::2:3:0:0:4"}, {"2001:db8::ff00:42:8329", "2001:db8::ff00:42:8329"},
		{"1:0:2:3:4:5:6:7", "1::2:3:4:5:6:7"}, {"1:2:3:4:5:6:7:0", "1:2:3:4:5:6:7::"}, {"0:1:2:3:4:5:6:7", "::1:2:3:4:5:6:7"},
	} {
		a := netip.MustParseAddr(tc.in).As16()
		if got := inet6Text(a[:]); got != tc.want {
			t.Errorf("inet6Text(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
