package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// captureLogs makes the sources opened from now on log as JSON into the
// returned buffer (a source takes its logger from slog.Default), and
// makes the driver's own default logger (the one writing to stderr)
// write into the second buffer instead. The driver's default logger is
// a log.Logger made of os.Stderr when the package was initialised, so
// swapping os.Stderr would not catch it: replacing it is what tells
// whether a message would have gone to stderr.
func captureLogs(t *testing.T) (logs, stderr *syncbuf.Buffer) {
	t.Helper()
	logs, stderr = new(syncbuf.Buffer), new(syncbuf.Buffer)
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err := mysql.SetLogger(log.New(stderr, "[mysql] ", 0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		slog.SetDefault(old)
		mysql.SetLogger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime))
	})
	return logs, stderr
}

// logRecords returns the JSON log records of buf that have attribute
// component=want.
func logRecords(t *testing.T, buf *syncbuf.Buffer, want string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["component"] == want {
			out = append(out, rec)
		}
	}
	return out
}

// TestDriverLog_InSourceLogger kills the source's idle pool connections
// from another session, as an administrator would, and has the source
// use its pool: the driver's message about the dead connection arrives in
// the source's logger, with the source's attributes and
// component=go-sql-driver/mysql, and not on stderr.
func TestDriverLog_InSourceLogger(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	dsn := withReplUser(t, d, "drvlog")
	logs, stderr := captureLogs(t)
	s, err := tryOpen(t, dsn, withTables(d, map[string]string{"snapshot.mode": "never"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	// Kill the pool's idle connections (the user's sessions but the
	// binlog dump), then have the source use its pool: the killed
	// connections fail ("invalid connection", or dropped as bad) and the
	// driver says so. A ping first leaves a connection idle in the pool,
	// and the whole round repeats: a session listed as Sleep may be one
	// the source was about to close, or the pool's may be busy for a
	// moment.
	ctx := t.Context()
	for deadline := time.Now().Add(20 * time.Second); len(logRecords(t, logs, "go-sql-driver/mysql")) == 0; {
		if time.Now().After(deadline) {
			break
		}
		if err := s.db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range sleepingSessions(t, d, "drvlog") {
			d.db.ExecContext(ctx, fmt.Sprintf("KILL %d", id)) // it may have ended meanwhile
		}
		for range 5 {
			var one int
			s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			time.Sleep(20 * time.Millisecond)
		}
	}
	recs := logRecords(t, logs, "go-sql-driver/mysql")
	if len(recs) == 0 {
		t.Fatalf("no driver message in the source's logger; stderr got %q; the source logged:\n%s", stderr.String(), logs.String())
	}
	for _, r := range recs {
		if r["pipeline"] != "p" || r["source"] != "src" || r["connector"] != Name || r["level"] != "WARN" {
			t.Errorf("driver message without the source's attributes or not at WARN: %v", r)
		}
	}
	t.Logf("driver said: %v", recs[0]["msg"])
	if stderr.String() != "" {
		t.Errorf("the driver wrote to stderr: %q", stderr.String())
	}
}

// sleepingSessions returns the ids of user's idle sessions.
func sleepingSessions(t *testing.T, d *testDB, user string) []int64 {
	t.Helper()
	rows, err := d.db.QueryContext(t.Context(), "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND = 'Sleep'", user)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestBinlogClientLog_InSourceLogger checks that the binlog client's
// messages arrive in the source's logger with its attributes and
// component=go-mysql, at debug level (see demoted).
func TestBinlogClientLog_InSourceLogger(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	logs, _ := captureLogs(t)
	openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	// The stream starts on a goroutine of the source: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "mysql: streaming") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	recs := logRecords(t, logs, componentBinlog)
	if len(recs) == 0 {
		t.Fatalf("no message of the binlog client with component=%s; the source logged:\n%s", componentBinlog, logs.String())
	}
	for _, r := range recs {
		if r["pipeline"] != "p" || r["source"] != "src" || r["level"] != "DEBUG" {
			t.Errorf("binlog client message without the source's attributes or not at DEBUG: %v", r)
		}
	}
}
