package mysql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// position is the source position, JSON in Debezium's shape for MySQL
// offsets ({"file","pos","gtids","row","event","server_id","ts_sec"}) plus
// the progress of an unfinished snapshot.
//
// While streaming, file and pos are the end of the last transaction
// emitted (the binlog coordinates of the next event), and gtids is the GTID
// set executed up to and including it, unless prepared XA transactions are
// undecided (see Emitted) (MariaDB: the last GTID of each
// domain, "0-1-42"; MySQL: uuid:interval sets). row and event are always 0:
// only transaction boundaries carry a position. A restart resumes from
// gtids when it is set, else from file/pos. During a snapshot, file, pos
// and gtids are where streaming will start once the snapshot is done.
type position struct {
	File     string    `json:"file"`
	Pos      uint32    `json:"pos"`
	GTIDs    string    `json:"gtids,omitempty"`
	Row      int       `json:"row"`
	Event    int       `json:"event"`
	ServerID uint32    `json:"server_id"`
	TsSec    int64     `json:"ts_sec,omitempty"`
	Snapshot *progress `json:"snapshot,omitempty"`
	// Incremental is the state of an incremental snapshot in progress.
	Incremental *incState `json:"incremental,omitempty"`
	// Emitted is set while prepared XA transactions are undecided: file,
	// pos and gtids are then the start of the oldest one's prepare (where
	// a restart must read again), and Emitted the end of the last
	// transaction read, up to which nothing is emitted again (xa.go).
	Emitted *emittedMark `json:"emitted,omitempty"`
}

// progress is how far an unfinished snapshot got: tables fully read, and
// for tables being read the key of the last row of the last emitted chunk.
type progress struct {
	Done []string             `json:"done,omitempty"`
	Last map[string]keyValues `json:"last,omitempty"`
}

// keyValues is a key in a position (see cdc.KeyValues).
type keyValues = cdc.KeyValues

// encode writes p as JSON, by hand when there is no snapshot progress:
// streaming encodes one position per transaction.
func (p position) encode() connect.Position {
	if p.Snapshot != nil || p.Incremental != nil || p.Emitted != nil || !plainASCII(p.File) || !plainASCII(p.GTIDs) {
		b, err := json.Marshal(p)
		if err != nil {
			panic(err) // plain data: cannot fail
		}
		return b
	}
	b := make([]byte, 0, 96+len(p.File)+len(p.GTIDs))
	b = append(b, `{"file":`...)
	b = append(append(append(b, '"'), p.File...), '"')
	b = append(b, `,"pos":`...)
	b = strconv.AppendUint(b, uint64(p.Pos), 10)
	if p.GTIDs != "" {
		b = append(b, `,"gtids":`...)
		b = append(append(append(b, '"'), p.GTIDs...), '"')
	}
	b = append(b, `,"row":`...)
	b = strconv.AppendInt(b, int64(p.Row), 10)
	b = append(b, `,"event":`...)
	b = strconv.AppendInt(b, int64(p.Event), 10)
	b = append(b, `,"server_id":`...)
	b = strconv.AppendUint(b, uint64(p.ServerID), 10)
	if p.TsSec != 0 {
		b = append(b, `,"ts_sec":`...)
		b = strconv.AppendInt(b, p.TsSec, 10)
	}
	return append(b, '}')
}

// plainASCII reports whether s is printable ASCII that JSON needs not
// escape.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func decodePosition(b connect.Position) (position, error) {
	var p position
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("stored position %q is not a mysql position: %w", truncate(string(b)), err)
	}
	if p.File == "" && p.GTIDs == "" {
		return p, fmt.Errorf("stored position %q has neither file nor gtids", truncate(string(b)))
	}
	if m := p.Emitted; m != nil && m.File == "" && m.GTIDs == "" {
		return p, fmt.Errorf("stored position %q has an emitted mark with neither file nor gtids", truncate(string(b)))
	}
	return p, nil
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// coords are binlog coordinates: a file and an offset in it.
type coords struct {
	File string
	Pos  uint32
}

func (c coords) String() string { return c.File + ":" + strconv.FormatUint(uint64(c.Pos), 10) }

// less orders coordinates by the file's sequence number, then the offset.
func (c coords) less(o coords) bool {
	if c.File != o.File {
		a, b := fileSeq(c.File), fileSeq(o.File)
		if a != b {
			return a < b
		}
		return c.File < o.File
	}
	return c.Pos < o.Pos
}

// fileSeq returns the number after the last dot of a binlog file name
// (binlog.000042 → 42), or -1.
func fileSeq(name string) int64 {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (p *progress) clone() *progress {
	c := &progress{Done: append([]string(nil), p.Done...), Last: make(map[string]keyValues, len(p.Last))}
	for k, v := range p.Last {
		c.Last[k] = v
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
