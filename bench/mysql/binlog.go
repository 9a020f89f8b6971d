package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// How syncerRead reads.
type readMode int

const (
	// readRaw: events not parsed, only their headers (the transport
	// limit), handed over through the BinlogStreamer's channel.
	readRaw readMode = iota
	// readRawSync: events not parsed, handled on the client's reading
	// goroutine (SynchronousEventHandler), as the source handles them.
	readRawSync
	// readParsed: events parsed by go-mysql, through the channel.
	readParsed
)

// syncerRead reads the binlog from one position to another with go-mysql's
// BinlogSyncer, as mode says, and returns the bytes of events read.
func syncerRead(srv *server, from, to coordsOf, mode readMode) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r := &rangeReader{file: from.file, to: to, done: make(chan struct{})}
	cfg := replication.BinlogSyncerConfig{
		ServerID: 7_000_001, Flavor: gomysql.MariaDBFlavor, Host: "127.0.0.1", Port: uint16(srv.port), User: "root",
		RawModeEnabled: mode != readParsed, DisableRetrySync: true, TimestampStringLocation: time.UTC, EventCacheCount: 4096,
		Logger: slog.New(slog.DiscardHandler),
	}
	if mode == readRawSync {
		cfg.SynchronousEventHandler = r
	}
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	bs, err := syncer.StartSync(gomysql.Position{Name: from.file, Pos: from.pos})
	if err != nil {
		return 0, err
	}
	if mode == readRawSync {
		errc := make(chan error, 1)
		go func() {
			_, err := bs.GetEvent(ctx) // only errors: the events go to r
			errc <- err
		}()
		select {
		case <-r.done:
			return r.n, r.err
		case err := <-errc:
			return r.n, err
		}
	}
	for {
		ev, err := bs.GetEvent(ctx)
		if err != nil {
			return r.n, err
		}
		if end, err := r.step(ev); end || err != nil {
			return r.n, err
		}
	}
}

// rangeReader follows the events up to a binlog position.
type rangeReader struct {
	n    int64 // bytes of events read
	file string
	to   coordsOf
	err  error
	done chan struct{} // closed at the end (SynchronousEventHandler)
}

// step takes one event and reports whether it reached the end.
func (r *rangeReader) step(ev *replication.BinlogEvent) (bool, error) {
	r.n += int64(ev.Header.EventSize)
	if ev.Header.EventType == replication.ROTATE_EVENT {
		if e, ok := ev.Event.(*replication.RotateEvent); ok {
			r.file = string(e.NextLogName)
		} else if len(ev.RawData) > replication.EventHeaderSize+8 {
			r.file = string(ev.RawData[replication.EventHeaderSize+8 : len(ev.RawData)-4])
		}
		return false, nil
	}
	if r.file == r.to.file && ev.Header.LogPos >= r.to.pos {
		return true, nil
	}
	if r.file != r.to.file && r.file > r.to.file {
		return true, fmt.Errorf("read past %s", r.to.file)
	}
	return false, nil
}

// HandleEvent is step on the client's reading goroutine; after the end it
// ignores the events until the client is closed.
func (r *rangeReader) HandleEvent(ev *replication.BinlogEvent) error {
	select {
	case <-r.done:
		return nil
	default:
	}
	if end, err := r.step(ev); end || err != nil {
		r.err = err
		close(r.done)
	}
	return nil
}
