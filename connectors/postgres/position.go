package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
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
	Done []string             `json:"done,omitempty"`
	Last map[string]keyValues `json:"last,omitempty"`
	Rows map[string]int64     `json:"rows,omitempty"` // rows emitted per table, for the progress report
	// Split holds the boundaries of the parts of a table read in parts
	// (on its first key column); Done and Last then hold the parts as
	// "schema.table#i" until the whole table is done.
	Split map[string]keyValues `json:"split,omitempty"`
}

// keyValues is a key in a position (see cdc.KeyValues).
type keyValues = cdc.KeyValues

func (p position) encode() connect.Position {
	if p.Snapshot == nil && p.Incremental == nil {
		// The streaming position of every transaction: written here, as
		// encoding/json would, without reflection.
		b := make([]byte, 0, 64)
		b = strconv.AppendUint(append(b, `{"lsn":`...), p.LSN, 10)
		if p.TxID != 0 {
			b = strconv.AppendUint(append(b, `,"txId":`...), uint64(p.TxID), 10)
		}
		if p.TsUsec != 0 {
			b = strconv.AppendInt(append(b, `,"ts_usec":`...), p.TsUsec, 10)
		}
		return append(b, '}')
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // plain data: cannot fail
	}
	return b
}

// streamLSN reads the LSN of a streaming position as encode writes it
// ({"lsn":…[,"txId":…][,"ts_usec":…]}), without reflection; ok is false
// for any other shape (decodePosition reads those).
func streamLSN(b []byte) (lsn uint64, ok bool) {
	rest, found := bytes.CutPrefix(b, []byte(`{"lsn":`))
	if !found {
		return 0, false
	}
	num := func(signed bool) (uint64, bool) {
		i := 0
		if signed && len(rest) > 0 && rest[0] == '-' {
			i++
		}
		j := i
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == i || j-i > 19 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(rest[i:j]), 10, 64)
		rest = rest[j:]
		return v, err == nil
	}
	if lsn, ok = num(false); !ok {
		return 0, false
	}
	for _, f := range []string{`,"txId":`, `,"ts_usec":`} {
		if r, found := bytes.CutPrefix(rest, []byte(f)); found {
			rest = r
			if _, ok := num(f == `,"ts_usec":`); !ok {
				return 0, false
			}
		}
	}
	return lsn, string(rest) == "}"
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
	c := &progress{Done: append([]string(nil), p.Done...), Last: make(map[string]keyValues, len(p.Last))}
	for k, v := range p.Last {
		c.Last[k] = v
	}
	if p.Split != nil {
		c.Split = make(map[string]keyValues, len(p.Split))
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
