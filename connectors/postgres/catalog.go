package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
)

// catalog resolves types and keys from the system catalogue and builds the
// relations events are made from. It is used by one goroutine at a time.
type catalog struct {
	conn   *pgx.Conn
	set    *settings
	mapper *mapper
	types  map[uint32]*pgType
	log    *slog.Logger
}

func newCatalog(conn *pgx.Conn, set *settings, m *mapper, log *slog.Logger) *catalog {
	return &catalog{conn: conn, set: set, mapper: m, types: map[uint32]*pgType{}, log: log}
}

// typ resolves a type OID: built-ins from a table, others from pg_type
// (domains to their base type, arrays to their element type, enums with
// their labels).
func (c *catalog) typ(ctx context.Context, oid uint32) (*pgType, error) {
	if t, ok := c.types[oid]; ok {
		return t, nil
	}
	if b, ok := builtinKinds[oid]; ok {
		t := &pgType{oid: oid, name: b.name, kind: b.kind, typmod: -1}
		c.types[oid] = t
		return t, nil
	}
	var name, typtype, category, delim string
	var base, elem uint32
	var typmod int32
	var labels []string
	err := c.conn.QueryRow(ctx, `
SELECT t.typname, t.typtype::text, t.typcategory::text, t.typdelim::text, t.typbasetype, t.typelem, t.typtypmod,
       COALESCE((SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid), '{}')
FROM pg_type t WHERE t.oid = $1`, oid).Scan(&name, &typtype, &category, &delim, &base, &elem, &typmod, &labels)
	if errors.Is(err, pgx.ErrNoRows) {
		// Dropped since the change being streamed (the stream can be
		// behind the catalogue): its values are text all the same.
		c.log.Warn("postgres: a column type of the stream is no longer in the catalogue (dropped since?), mapped to text", "oid", oid)
		t := &pgType{oid: oid, name: strconv.FormatUint(uint64(oid), 10), kind: kindUnknown, typmod: -1}
		c.types[oid] = t
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up type %d: %w", oid, err)
	}
	t := &pgType{oid: oid, name: name, kind: kindText, typmod: -1}
	switch {
	case typtype == "d":
		bt, err := c.typ(ctx, base)
		if err != nil {
			return nil, err
		}
		cp := *bt
		cp.oid, cp.name, cp.typmod = oid, name, typmod
		t = &cp
	case typtype == "e":
		t.kind, t.labels = kindEnum, labels
	case category == "A" && elem != 0:
		et, err := c.typ(ctx, elem)
		if err != nil {
			return nil, err
		}
		t.kind, t.elem, t.delim = kindArray, et, ','
		if delim != "" {
			t.delim = delim[0]
		}
		if et.kind == kindArray || et.kind == kindUnknown && et.elem != nil {
			t.kind = kindText
		}
	case typtype == "b" && oid >= 16384 && name == "hstore":
		t.kind = kindHstore
	case typtype == "b" && oid >= 16384:
		// An extension's base type (citext, hstore, ltree, PostGIS, ...).
		t.kind = kindUnknown
		c.log.Warn("postgres: unknown column type mapped to text", "type", name, "oid", oid)
	}
	c.types[oid] = t
	return t, nil
}

// relation is a captured table as the events describe it.
type relation struct {
	ref     tableRef
	columns []column
	keyIdx  []int // indices of the key columns, in key order
	ident   byte  // replica identity: 'd', 'f', 'i' or 'n'
	topic   string
	schema  *connect.EventSchema // nil unless schemas are embedded
	skip    bool                 // not a captured table (a publication FOR ALL TABLES sends every table)
	signal  bool                 // the signal table: its inserts are signals, not events

}

// colDef is a column as the stream or the catalogue describes it.
type colDef struct {
	name   string
	oid    uint32
	typmod int32
	key    bool // the stream's Relation message flags it as part of the replica identity
}

// relation builds the relation of a table from its columns: types, key
// columns (the primary key, or the replica identity index), nullability
// and schemas. Keys and nullability come from the catalogue as it is now:
// pgoutput's Relation message carries neither. pgoutput describes a table
// again after every change to its definition (a relcache invalidation,
// which ALTER TABLE … SET/DROP NOT NULL is), before the table's next
// change, so a relation built from that message reads them again.
//
// relid is the table's OID as the stream gives it (0 from the snapshot):
// the stream may be behind the catalogue, so the table is looked up by
// OID, which a rename keeps. A table dropped since has nothing left in the
// catalogue: its key is then the columns the stream flags as its replica
// identity (none under REPLICA IDENTITY FULL), with a warning.
func (c *catalog) relation(ctx context.Context, ref tableRef, relid uint32, cols []colDef, ident byte) (*relation, error) {
	rel := &relation{ref: ref, ident: ident, topic: c.set.topicFor(ref.schema, ref.name)}
	rel.signal = c.set.signalTable != "" && ref.String() == c.set.signalTable
	if !rel.signal && !matchAny(c.set.tables, ref.String()) {
		rel.skip = true
		return rel, nil
	}
	keys, notNull, err := c.attributes(ctx, ref, relid, ident)
	if err != nil {
		return nil, err
	}
	flagged := func() []string {
		var out []string
		if ident != 'f' { // under FULL every column is flagged
			for _, d := range cols {
				if d.key {
					out = append(out, d.name)
				}
			}
		}
		return out
	}
	if notNull == nil {
		// Gone from the catalogue.
		keys = flagged()
		c.log.Warn("postgres: a table of the stream is no longer in the catalogue (dropped since?): its key is taken from the stream's description, its columns are described as nullable",
			"table", ref.String(), "key", keys)
	} else if relid != 0 {
		for _, k := range keys {
			if !slices.ContainsFunc(cols, func(d colDef) bool { return d.name == k }) {
				// A key column renamed (or the key changed) since the
				// change being streamed.
				keys = flagged()
				c.log.Warn("postgres: the key columns of a table in the catalogue are not all among the columns the stream describes (renamed since?): its key is taken from the stream's description",
					"table", ref.String(), "key", keys)
				break
			}
		}
	}
	for _, d := range cols {
		t, err := c.typ(ctx, d.oid)
		if err != nil {
			return nil, fmt.Errorf("table %s, column %s: %w", ref, d.name, err)
		}
		rel.columns = append(rel.columns, column{name: d.name, typ: t, typmod: d.typmod, notNull: notNull[d.name]})
	}
	for _, k := range keys {
		for i := range rel.columns {
			if rel.columns[i].name == k {
				rel.columns[i].key = true
				rel.keyIdx = append(rel.keyIdx, i)
			}
		}
	}
	if c.set.schemas {
		fields := make([]connect.Schema, len(rel.columns))
		names := make([]string, len(rel.keyIdx))
		for i := range rel.columns {
			fields[i] = c.mapper.schema(&rel.columns[i])
		}
		for i, k := range rel.keyIdx {
			names[i] = rel.columns[k].name
		}
		if rel.schema, err = connect.NewEventSchema(rel.topic, fields, names); err != nil {
			return nil, fmt.Errorf("table %s: %w", ref, err)
		}
	}
	return rel, nil
}

// attributes returns the record key columns of a table, in key order, and
// which of its columns are NOT NULL: declared so (pg_attribute.attnotnull)
// or of a NOT NULL domain, the rule of information_schema.columns and of
// the JDBC driver's column metadata, which Debezium reads. The key is
// the replica identity index under REPLICA IDENTITY USING INDEX, else the
// primary key; none for a table without (REPLICA IDENTITY FULL). The table
// is relid when not 0, else ref; a relid no longer in the catalogue (a
// dropped table) returns a nil map.
func (c *catalog) attributes(ctx context.Context, ref tableRef, relid uint32, ident byte) ([]string, map[string]bool, error) {
	cond := "i.indisprimary"
	if ident == 'i' {
		cond = "i.indisreplident"
	}
	table := ref.quoted()
	if relid != 0 {
		table = strconv.FormatUint(uint64(relid), 10) // regclass reads an OID without checking that it exists
	}
	rows, err := c.conn.Query(ctx, `
SELECT a.attname::text, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), k.ord
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN (
	SELECT u.attnum, u.ord
	FROM pg_index i, unnest(i.indkey) WITH ORDINALITY AS u(attnum, ord)
	WHERE i.indrelid = $1::regclass AND `+cond+`
) k ON k.attnum = a.attnum
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY k.ord NULLS LAST, a.attnum`, table)
	if err != nil {
		return nil, nil, fmt.Errorf("read the key and nullability of %s: %w", ref, err)
	}
	var keys []string
	var notNull map[string]bool
	for rows.Next() {
		if notNull == nil {
			notNull = map[string]bool{}
		}
		var name string
		var nn bool
		var ord *int64
		if err := rows.Scan(&name, &nn, &ord); err != nil {
			return nil, nil, fmt.Errorf("read the key and nullability of %s: %w", ref, err)
		}
		notNull[name] = nn
		if ord != nil {
			keys = append(keys, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read the key and nullability of %s: %w", ref, err)
	}
	return keys, notNull, nil
}

// tableColumns reads the published columns of a table and its replica
// identity, for the snapshot.
func (c *catalog) tableColumns(ctx context.Context, ref tableRef) ([]colDef, byte, error) {
	rows, err := c.conn.Query(ctx, `
SELECT a.attname::text, a.atttypid, a.atttypmod
FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attnum`, ref.quoted())
	if err != nil {
		return nil, 0, fmt.Errorf("read the columns of %s: %w", ref, err)
	}
	var cols []colDef
	for rows.Next() {
		var d colDef
		if err := rows.Scan(&d.name, &d.oid, &d.typmod); err != nil {
			return nil, 0, fmt.Errorf("read the columns of %s: %w", ref, err)
		}
		cols = append(cols, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read the columns of %s: %w", ref, err)
	}
	var ident string
	if err := c.conn.QueryRow(ctx, "SELECT relreplident::text FROM pg_class WHERE oid = $1::regclass", ref.quoted()).Scan(&ident); err != nil {
		return nil, 0, fmt.Errorf("read the replica identity of %s: %w", ref, err)
	}
	return cols, ident[0], nil
}
