package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// syncerRead reads the binlog from one position to another with go-mysql's
// BinlogSyncer, raw (events not parsed, only their headers: the transport
// limit) or parsed (as the source's client does), and returns the bytes of
// events read.
func syncerRead(srv *server, from, to coordsOf, raw bool) (int64, error) {
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: 7_000_001, Flavor: gomysql.MariaDBFlavor, Host: "127.0.0.1", Port: uint16(srv.port), User: "root",
		RawModeEnabled: raw, DisableRetrySync: true, TimestampStringLocation: time.UTC, EventCacheCount: 4096,
		Logger: slog.New(slog.DiscardHandler),
	})
	defer syncer.Close()
	bs, err := syncer.StartSync(gomysql.Position{Name: from.file, Pos: from.pos})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var n int64
	file := from.file
	for {
		ev, err := bs.GetEvent(ctx)
		if err != nil {
			return n, err
		}
		n += int64(ev.Header.EventSize)
		if ev.Header.EventType == replication.ROTATE_EVENT {
			if r, ok := ev.Event.(*replication.RotateEvent); ok {
				file = string(r.NextLogName)
			} else if len(ev.RawData) > replication.EventHeaderSize+8 {
				file = string(ev.RawData[replication.EventHeaderSize+8 : len(ev.RawData)-4])
			}
			continue
		}
		if file == to.file && ev.Header.LogPos >= to.pos {
			return n, nil
		}
		if file != to.file && file > to.file {
			return n, fmt.Errorf("read past %s", to.file)
		}
	}
}
