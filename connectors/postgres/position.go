package postgres

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// position is the source position, JSON in Debezium's shape for Postgres
// offsets ({"lsn":…,"txId":…,"ts_usec":…}) plus the progress of an
// unfinished snapshot.
//
// While streaming, lsn is the end of the last committed transaction (or
// the LSN of the last heartbeat): everything before it has been emitted.
// It is what Ack confirms to the server (write = flush = apply = lsn) and
// where streaming resumes. During a snapshot, lsn is where streaming will
// start once the snapshot is done, and snapshot says how far it got.
type position struct {
	LSN      uint64    `json:"lsn"`
	TxID     uint32    `json:"txId,omitempty"`
	TsUsec   int64     `json:"ts_usec,omitempty"`
	Snapshot *progress `json:"snapshot,omitempty"`
	// Incremental is the state of an incremental snapshot in progress.
	Incremental *incState `json:"incremental,omitempty"`
}

// progress is how far an unfinished snapshot got: tables fully read, and
// for tables being read the key (as text) of the last row of the last
// finished chunk, and the rows emitted so far per table.
type progress struct {
	Done []string            `json:"done,omitempty"`
	Last map[string][]string `json:"last,omitempty"`
	Rows map[string]int64    `json:"rows,omitempty"` // rows emitted per table, for the progress report
	// Split holds the boundaries of the parts of a table read in parts
	// (on its first key column); Done and Last then hold the parts as
	// "schema.table#i" until the whole table is done.
	Split map[string][]string `json:"split,omitempty"`
}

func (p position) encode() connect.Position {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return b
}

func decodePosition(b connect.Position) (position, error) {
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("stored position %q is not a postgres position: %w", truncate(string(b)), err)
	}
	return p, nil
}

// clone returns a deep copy of p.
func (p *progress) clone() *progress {
	c := &progress{Done: append([]string(nil), p.Done...), Last: make(map[string][]string, len(p.Last))}
	for k, v := range p.Last {
		c.Last[k] = v
	}
	if p.Split != nil {
		c.Split = make(map[string][]string, len(p.Split))
		for k, v := range p.Split {
			c.Split[k] = v
		}
	}
	if p.Rows != nil {
		c.Rows = make(map[string]int64, len(p.Rows))
		for k, v := range p.Rows {
			c.Rows[k] = v
		}
	}
	return c
}

func (p *progress) isDone(table string) bool {
	for _, d := range p.Done {
		if d == table {
			return true
		}
	}
	return false
}

// markDone records a table as done, in place of its parts.
func (p *progress) markDone(table string) {
	done := p.Done[:0]
	for _, d := range p.Done {
		if !strings.HasPrefix(d, table+"#") {
			done = append(done, d)
		}
	}
	p.Done = append(done, table)
	delete(p.Last, table)
	delete(p.Split, table)
}
