//go:build linux

package postgres

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// sockopts reads the TCP keepalive and user-timeout settings of c's socket.
func sockopts(t *testing.T, c net.Conn) [5]int {
	t.Helper()
	if w, ok := c.(*watchedConn); ok {
		c = w.Conn
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		t.Fatalf("connection is a %T, not TCP", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var out [5]int
	var gerr error
	err = rc.Control(func(fd uintptr) {
		for i, o := range [][2]int{{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE}, {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL}, {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT}, {syscall.IPPROTO_TCP, tcpUserTimeout}} {
			if out[i], gerr = syscall.GetsockoptInt(int(fd), o[0], o[1]); gerr != nil {
				return
			}
		}
	})
	if err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return out
}

// sysctl returns the system's default of a TCP setting.
func sysctl(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConnections_TCPSettings: every connection the source opens has TCP
// keepalives and TCP_USER_TIMEOUT derived from wal.receiver.timeout, so
// that the kernel notices a peer that stopped answering; libpq's keywords
// in the DSN win (and are not sent to the server, which would refuse them
// as unknown settings).
func TestConnections_TCPSettings(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	for _, c := range []struct {
		name, dsn, timeout string
		want               [5]int // SO_KEEPALIVE, idle s, interval s, count, user timeout ms
	}{
		{"derived", db.dsn, "60s", [5]int{1, 10, 5, 10, 60000}},
		{"short", db.dsn, "3s", [5]int{1, 1, 1, 10, 3000}},
		{"dsn", db.dsn + "&keepalives_idle=7&keepalives_interval=3&keepalives_count=4&tcp_user_timeout=1234", "60s", [5]int{1, 7, 3, 4, 1234}},
		{"dsn off", db.dsn + "&keepalives=0&tcp_user_timeout=0", "60s", [5]int{0, -1, -1, -1, 0}},
		{"dsn system", db.dsn + "&keepalives_idle=0&keepalives_interval=0&keepalives_count=0", "60s",
			[5]int{1, sysctl(t, "tcp_keepalive_time"), sysctl(t, "tcp_keepalive_intvl"), sysctl(t, "tcp_keepalive_probes"), 60000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := tryOpen(t, c.dsn, map[string]string{"snapshot.mode": "never", "tables": "public.t", "wal.receiver.timeout": c.timeout}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(t.Context())
			check := func(what string, got [5]int) {
				t.Helper()
				want := c.want
				if want[0] == 0 {
					got[1], got[2], got[3] = -1, -1, -1 // not in use
				}
				if got != want {
					t.Errorf("%s connection: SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT = %v, want %v", what, got, want)
				}
			}
			check("catalogue", sockopts(t, s.meta.PgConn().Conn()))
			check("replication", sockopts(t, s.repl.Conn()))
			conn, err := connectSQL(t.Context(), c.dsn, s.set.deadAfter, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(t.Context())
			check("snapshot", sockopts(t, conn.PgConn().Conn()))
		})
	}
}
