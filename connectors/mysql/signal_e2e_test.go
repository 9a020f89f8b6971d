package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/mysql"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// TestWorker_SignalIncrementalSnapshot asks the worker (as its REST API
// and CLI do) for an incremental snapshot of a table whose rows predate
// the stream, and finds every row in the log as an op r event; the pause
// and resume signals reach the source too.
func TestWorker_SignalIncrementalSnapshot(t *testing.T) {
	setup := []string{"CREATE TABLE orders (id int PRIMARY KEY, v bigint NOT NULL)",
		"CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)",
		"INSERT INTO orders SELECT seq, seq * 10 FROM seq_1_to_25"}
	dsn, dbName, _ := mysql.NewTestDB(t, setup...)
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), NumPartitions: 1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	backend := engine.NewEmbedded(l, logger)
	w, err := engine.NewWorker(ctx, engine.Options{Backend: backend, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(context.Background())
	err = w.Start(ctx, engine.ConnectorSpec{Pipeline: "sig", Name: "shop", Kind: connect.KindSource, Connector: "mysql",
		Config: map[string]string{"dsn": dsn, "tables": dbName + ".orders", "snapshot.mode": "never", "heartbeat.interval": "0",
			"signal.data.collection": dbName + ".debezium_signal", "snapshot.chunk.size": "4"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	// The source is running once the worker takes signals for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = w.Signal(ctx, "shop", engine.SignalPauseSnapshot, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause-snapshot: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w.Signal(ctx, "shop", engine.SignalResumeSnapshot, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Signal(ctx, "shop", engine.SignalExecuteSnapshot, []string{dbName + ".orders"}); err != nil {
		t.Fatal(err)
	}
	topic := "shop." + dbName + ".orders"
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		reads := map[int64]bool{}
		err := backend.ReadAll(ctx, topic, func(r connect.Record) error {
			ev, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
			if errors.Is(err, connect.ErrTombstone) {
				return nil
			}
			if err != nil {
				return err
			}
			if ev.Op != connect.OpRead || ev.Source.Snapshot != connect.SnapshotIncremental {
				return fmt.Errorf("unexpected event %s", r.Value)
			}
			id, _ := ev.After.Get("id")
			reads[id.(int64)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(reads) == 25 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 25 rows read by the incremental snapshot within 60 s", len(reads))
		}
	}
}
