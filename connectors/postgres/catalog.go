package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
)

// catalog resolves types and keys from the system catalogue and builds the
// relations events are made from. It is used by one goroutine at a time.
type catalog struct {
	conn    *pgx.Conn
	set     *settings
	mapper  *mapper
	types   map[uint32]*pgType
	log     *slog.Logger
	version int // server_version_num, 0 until read
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
	// filter is the publication's row filter of the table, an SQL
	// expression on its columns that the snapshots read by; "" for
	// every row. Only snapshotRelation sets it.
	filter string
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

// snapshotRelation builds the relation of a table as the snapshots read
// it: what the publication publishes, as pgoutput sends it to the stream
// (PostgreSQL 15 and later): the columns of its column list, and, in
// filter, its row filter. So a snapshot record is the streamed insert of
// the same row but for source and op.
func (c *catalog) snapshotRelation(ctx context.Context, ref tableRef) (*relation, error) {
	pub, err := c.published(ctx, ref)
	if err != nil {
		return nil, err
	}
	cols, ident, err := c.tableColumns(ctx, ref, pub.columns)
	if err != nil {
		return nil, err
	}
	rel, err := c.relation(ctx, ref, 0, cols, ident)
	if err != nil {
		return nil, err
	}
	if pub.columns != nil && !rel.skip {
		// relation leaves out key columns that are not among cols.
		keys, _, err := c.attributes(ctx, ref, 0, ident)
		if err != nil {
			return nil, err
		}
		if missing := unpublishedKeys(keys, pub.columns); len(missing) > 0 {
			return nil, connect.Permanent(columnListErr(c.set.publication, ref, missing, pub))
		}
	}
	rel.filter = pub.filter
	return rel, nil
}

// pubTable is what a publication publishes of a table.
type pubTable struct {
	// filter is the row filter (pg_publication_tables.rowfilter), "" when
	// every row is published: no filter, a publication FOR ALL TABLES or
	// FOR TABLES IN SCHEMA of the table's schema (PostgreSQL shows no
	// filter for those, as pgoutput applies none), PostgreSQL 14.
	filter string
	// columns are the published columns (pg_publication_tables.attnames),
	// in table order; nil when every column is published: PostgreSQL 14,
	// or a table the publication does not publish.
	columns []string
}

// published reads what the source's publication publishes of a table.
// The connector streams one publication, so its row filter is the one
// pgoutput applies (with several, PostgreSQL ORs them, and one without a
// filter publishes every row). pg_publication_tables has rowfilter and
// attnames from PostgreSQL 15 on: to_jsonb reads them where they exist,
// so the one query works on 14 too. A table outside the publication
// (never streamed; initial_only without a publication) is read whole.
func (c *catalog) published(ctx context.Context, ref tableRef) (pubTable, error) {
	var filter *string
	var attnames []byte
	err := c.conn.QueryRow(ctx, `
SELECT to_jsonb(pt) ->> 'rowfilter', to_jsonb(pt) -> 'attnames'
FROM pg_publication_tables pt
WHERE pt.pubname = $1 AND pt.schemaname = $2 AND pt.tablename = $3`, c.set.publication, ref.schema, ref.name).Scan(&filter, &attnames)
	if errors.Is(err, pgx.ErrNoRows) {
		return pubTable{}, nil
	}
	if err != nil {
		return pubTable{}, fmt.Errorf("read what publication %s publishes of %s: %w", c.set.publication, ref, err)
	}
	var pub pubTable
	if filter != nil {
		pub.filter = *filter
	}
	if attnames != nil {
		if err := json.Unmarshal(attnames, &pub.columns); err != nil {
			return pubTable{}, fmt.Errorf("read the column list of %s in publication %s: %w", ref, c.set.publication, err)
		}
	}
	return pub, nil
}

// serverVersion returns server_version_num, read once.
func (c *catalog) serverVersion(ctx context.Context) (int, error) {
	if c.version == 0 {
		if err := c.conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&c.version); err != nil {
			return 0, fmt.Errorf("read the server version: %w", err)
		}
	}
	return c.version, nil
}

// tableColumns reads the published columns of a table and its replica
// identity, for the snapshots: those of the publication's column list
// (published, nil for all), in table order. Before PostgreSQL 18 pgoutput
// never sends generated columns, though attnames lists them when there is
// no column list; from 18 on attnames is exactly what it sends
// (publish_generated_columns, or generated columns in a column list).
func (c *catalog) tableColumns(ctx context.Context, ref tableRef, published []string) ([]colDef, byte, error) {
	version, err := c.serverVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	rows, err := c.conn.Query(ctx, `
SELECT a.attname::text, a.atttypid, a.atttypmod
FROM pg_attribute a
WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND ($2::text[] IS NULL OR a.attname = ANY($2::text[]))
  AND (a.attgenerated = '' OR $3 AND a.attname = ANY($2::text[]))
ORDER BY a.attnum`, ref.quoted(), published, version >= 180000)
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

// unpublishedKeys returns the key columns missing from the published ones.
func unpublishedKeys(keys, published []string) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(published, k) {
			out = append(out, k)
		}
	}
	return out
}

// columnListErr is the error of a column list that leaves out key
// columns: the events' keys (the primary key, or the replica identity
// index) could not be formed, and PostgreSQL itself refuses updates and
// deletes of the table while a publication of them does not cover its
// replica identity. PostgreSQL changes the column list of one table of a
// publication only by dropping and adding it again.
func columnListErr(publication string, ref tableRef, missing []string, pub pubTable) error {
	cols := slices.Clone(pub.columns)
	for _, m := range missing {
		if !slices.Contains(cols, m) {
			cols = append(cols, m)
		}
	}
	list := make([]string, len(cols))
	for i, col := range cols {
		list[i] = pgx.Identifier{col}.Sanitize()
	}
	where := ""
	if pub.filter != "" {
		where = " WHERE (" + pub.filter + ")"
	}
	ident := pgx.Identifier{publication}.Sanitize()
	return fmt.Errorf("publication %s publishes table %s without its key column(s) %s (left out of its column list), which the events' keys need; "+
		"add them to the column list: run ALTER PUBLICATION %s DROP TABLE %s; ALTER PUBLICATION %s ADD TABLE %s (%s)%s;",
		publication, ref, strings.Join(missing, ", "), ident, ref.quoted(), ident, ref.quoted(), strings.Join(list, ", "), where)
}

// checkColumnLists fails when the publication's column list of a captured
// table leaves out a column of its key (see columnListErr). Nothing to
// check before PostgreSQL 15, which has no column lists, nor when the
// publication does not exist yet.
func (c *catalog) checkColumnLists(ctx context.Context, tables []tableRef) error {
	version, err := c.serverVersion(ctx)
	if err != nil || version < 150000 {
		return err
	}
	captured := map[string]bool{}
	for _, t := range tables {
		captured[t.String()] = true
	}
	// The key columns of each published table that its attnames lack,
	// with the key as attributes reads it.
	rows, err := c.conn.Query(ctx, `
SELECT pt.schemaname::text, pt.tablename::text, a.attname::text
FROM pg_publication_tables pt
JOIN pg_namespace n ON n.nspname = pt.schemaname
JOIN pg_class r ON r.relnamespace = n.oid AND r.relname = pt.tablename
JOIN pg_index i ON i.indrelid = r.oid AND CASE WHEN r.relreplident = 'i' THEN i.indisreplident ELSE i.indisprimary END
JOIN unnest(i.indkey) WITH ORDINALITY AS u(attnum, ord) ON true
JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = u.attnum
WHERE pt.pubname = $1 AND NOT a.attname = ANY(pt.attnames)
ORDER BY 1, 2, u.ord`, c.set.publication)
	if err != nil {
		return fmt.Errorf("read the column lists of publication %s: %w", c.set.publication, err)
	}
	missing := map[tableRef][]string{}
	var order []tableRef
	for rows.Next() {
		var t tableRef
		var col string
		if err := rows.Scan(&t.schema, &t.name, &col); err != nil {
			return fmt.Errorf("read the column lists of publication %s: %w", c.set.publication, err)
		}
		if !captured[t.String()] {
			continue
		}
		if missing[t] == nil {
			order = append(order, t)
		}
		missing[t] = append(missing[t], col)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the column lists of publication %s: %w", c.set.publication, err)
	}
	var errs []error
	for _, t := range order {
		pub, err := c.published(ctx, t)
		if err != nil {
			return err
		}
		errs = append(errs, columnListErr(c.set.publication, t, missing[t], pub))
	}
	if len(errs) > 0 {
		return connect.Permanent(errors.Join(errs...))
	}
	return nil
}
