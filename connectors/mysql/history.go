package mysql

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// history is the schema history: the definitions of the captured tables
// at points of the binlog, so that a row event is decoded with the columns
// its table had when it was written, not with today's.
//
// A connector cannot read the log it writes to, so the history does not
// live there (as Debezium's schema-history topic does) but in a file under
// state.dir, one per source: <pipeline>.<source>.schema-history.json. It
// is written whole and atomically (temporary file, fsync, rename, fsync of
// the directory) after every change, and trimmed on Ack: what no stored
// position can need any more (every entry before the newest one at or
// before the acknowledged position, per table) is folded into one base
// entry.
//
// Entries are recorded when the stream meets DDL for a captured table (or
// a captured table first shows up): the definition is read from
// information_schema at that moment. That is exact while the stream is
// close to the server's head; a stream behind may record a later
// definition than the DDL made. The connector then stops with an error
// when the recorded column names are not those before the DDL plus what
// it does (ddlColumns; streamer.checkDDLDef), or when the recorded
// columns do not fit the rows' table map (resolve); a later change that
// keeps both goes unseen (docs/connectors/mysql.md lists when). With
// binlog_row_metadata=FULL the binlog describes every row event's columns
// itself and the history is only a cross-check.
//
// File format (JSON, version 1):
//
//	{"version":1,"entries":[{"file":"binlog.000003","pos":1234,
//	  "tables":[{"db":…,"name":…,"columns":[…],"key":[0]}],"dropped":["db.t"]}]}
type history struct {
	path string

	// mu guards entries and the file.
	mu      sync.Mutex
	entries []histEntry
}

type histEntry struct {
	File    string      `json:"file"`
	Pos     uint32      `json:"pos"`
	Tables  []*tableDef `json:"tables,omitempty"`
	Dropped []string    `json:"dropped,omitempty"`
}

func (e *histEntry) at() coords { return coords{e.File, e.Pos} }

type histFile struct {
	Version int         `json:"version"`
	Entries []histEntry `json:"entries"`
}

// openHistory loads (or starts) the history of one source.
func openHistory(dir, pipeline, source string) (*history, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	name := sanitizeFile(pipeline) + "." + sanitizeFile(source) + ".schema-history.json"
	h := &history{path: filepath.Join(dir, name)}
	b, err := os.ReadFile(h.path)
	if os.IsNotExist(err) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the schema history: %w", err)
	}
	var f histFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("schema history %s is damaged (%v); remove it and start over with a snapshot (delete the source's stored offsets), or restore it from a backup", h.path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("schema history %s has version %d; this connector reads version 1", h.path, f.Version)
	}
	h.entries = f.Entries
	return h, nil
}

func sanitizeFile(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// lookup returns the definition of db.name in effect at coordinates at:
// that of the newest entry at or before at, nil when there is none or the
// table was dropped.
func (h *history) lookup(db, name string, at coords) *tableDef {
	h.mu.Lock()
	defer h.mu.Unlock()
	ref := db + "." + name
	var def *tableDef
	for i := range h.entries {
		e := &h.entries[i]
		if at.less(e.at()) {
			break
		}
		for _, t := range e.Tables {
			if t.DB == db && t.Name == name {
				def = t
			}
		}
		for _, d := range e.Dropped {
			if d == ref {
				def = nil
			}
		}
	}
	return def
}

// reached reports whether the history has an entry at or after at: the
// binlog there is being read again after a restart, and what happened
// there is recorded already.
func (h *history) reached(at coords) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.entries)
	return n > 0 && !h.entries[n-1].at().less(at)
}

// record adds the definitions of tables changed (or dropped) at
// coordinates at, and writes the history. An entry at or after at means
// the binlog is being read again after a restart: the history already has
// what happened there, and nothing is recorded.
func (h *history) record(at coords, defs []*tableDef, dropped []tableRef) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && !h.entries[n-1].at().less(at) {
		last := &h.entries[n-1]
		if last.at() == at {
			// Same point: the first sighting of more tables.
			last.Tables = append(last.Tables, defs...)
			return h.write()
		}
		return nil
	}
	e := histEntry{File: at.File, Pos: at.Pos, Tables: defs}
	for _, d := range dropped {
		e.Dropped = append(e.Dropped, d.String())
	}
	h.entries = append(h.entries, e)
	return h.write()
}

// trim folds every entry at or before acked into one base entry holding
// the definitions in effect at acked.
func (h *history) trim(acked coords) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for n < len(h.entries) && !acked.less(h.entries[n].at()) {
		n++
	}
	if n < 2 {
		return nil
	}
	state := map[string]*tableDef{}
	var order []string
	for _, e := range h.entries[:n] {
		for _, t := range e.Tables {
			if _, ok := state[t.ref()]; !ok {
				order = append(order, t.ref())
			}
			state[t.ref()] = t
		}
		for _, d := range e.Dropped {
			state[d] = nil
		}
	}
	base := histEntry{File: h.entries[n-1].File, Pos: h.entries[n-1].Pos}
	for _, ref := range order {
		if t := state[ref]; t != nil {
			base.Tables = append(base.Tables, t)
		}
	}
	h.entries = append([]histEntry{base}, h.entries[n:]...)
	return h.write()
}

// write publishes the history atomically: temporary file, fsync, rename,
// fsync of the directory.
func (h *history) write() error {
	b, err := json.Marshal(histFile{Version: 1, Entries: h.entries})
	if err != nil {
		return fmt.Errorf("encode the schema history: %w", err)
	}
	tmp := h.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write the schema history: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write the schema history: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write the schema history: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the schema history: %w", err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return fmt.Errorf("write the schema history: %w", err)
	}
	d, err := os.Open(filepath.Dir(h.path))
	if err != nil {
		return fmt.Errorf("write the schema history: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write the schema history: %w", err)
	}
	return nil
}
