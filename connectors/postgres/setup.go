package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary-io/tributary/connect"
)

// connectSQL opens an ordinary connection with the connector's session
// settings, bounded against a dead network by deadAfter
// (wal.receiver.timeout; see configureNet).
func connectSQL(ctx context.Context, dsn string, deadAfter time.Duration, log *slog.Logger) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, connect.Permanent(fmt.Errorf("parse dsn: %s", redactErr(err, dsn)))
	}
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	// Heartbeats and watermarks come back through the slot only once the
	// WAL holding them is flushed: flush at commit, whatever the server's
	// default.
	cfg.RuntimeParams["synchronous_commit"] = "on"
	if err := configureNet(&cfg.Config, deadAfter, true, log); err != nil {
		return nil, connect.Permanent(fmt.Errorf("dsn: %w", err))
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectErr(err, dsn, "connect to %s: %s")
	}
	if wantsUTF8(conn.PgConn().ParameterStatus) {
		if _, err := conn.Exec(ctx, setUTF8); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("ask the server for text in UTF-8 (%s): %w", setUTF8, deadErr(conn.PgConn().Conn(), err))
		}
	}
	return conn, nil
}

// setUTF8 asks the server to send text in UTF-8 whatever the database's
// encoding, as the JDBC driver under Debezium does: events are JSON.
const setUTF8 = "SET client_encoding TO 'UTF8'"

// wantsUTF8 reports whether a session with these parameters (its
// ParameterStatus) needs setUTF8: not when it has it, nor in a SQL_ASCII
// database, whose bytes have no encoding the server could convert from
// (and which it would refuse, as not UTF-8, in a query's parameters: a
// snapshot's last key); those go out as they are stored.
func wantsUTF8(param func(string) string) bool {
	return param("client_encoding") != "UTF8" && param("server_encoding") != "SQL_ASCII"
}

// connectReplication opens a logical replication connection
// (replication=database) with the connector's session settings, and the
// TCP settings of deadAfter. Its reads are watched as an ordinary
// connection's until the stream starts (stopWatching), which watches it
// itself (streamer.alive): the commands before, CREATE_REPLICATION_SLOT
// above all, would otherwise wait forever through a proxy whose side to
// the server is cut.
func connectReplication(ctx context.Context, dsn string, deadAfter time.Duration, log *slog.Logger) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, connect.Permanent(fmt.Errorf("parse dsn: %s", redactErr(err, dsn)))
	}
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	cfg.RuntimeParams["replication"] = "database"
	if err := configureNet(cfg, deadAfter, true, log); err != nil {
		return nil, connect.Permanent(fmt.Errorf("dsn: %w", err))
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connectErr(err, dsn, "open a replication connection to %s: %s")
	}
	if wantsUTF8(conn.ParameterStatus) {
		// pgoutput converts the rows it sends to the session's encoding.
		if _, err := conn.Exec(ctx, setUTF8).ReadAll(); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("ask the server for text in UTF-8 (%s): %w", setUTF8, deadErr(conn.Conn(), err))
		}
	}
	return conn, nil
}

// connectErr formats a failed connection attempt with format (given the
// redacted DSN and the redacted error), and marks it connect.Permanent
// when the server refused it for a reason no retry cures: the database
// does not exist (3D000), the role does not exist or pg_hba.conf rejects
// it (28000), or the password is wrong (28P01). Network errors and a
// server that is starting or shutting down stay retryable, so that a
// server that comes up later is picked up.
func connectErr(err error, dsn, format string) error {
	var e error = &redactedError{msg: fmt.Sprintf(format, redactDSN(dsn), redactErr(err, dsn)), err: err}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "3D000", "28000", "28P01":
			return connect.Permanent(e)
		}
	}
	return e
}

// redactedError is an error whose text hides the DSN's password and which
// still unwraps to its cause, so that callers tell a dead connection
// (errDeadConn), a cancellation or a server error apart.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// tableRef is a captured table.
type tableRef struct {
	schema, name string
}

func (t tableRef) String() string { return t.schema + "." + t.name }

// quoted returns the table as a quoted SQL identifier.
func (t tableRef) quoted() string { return pgx.Identifier{t.schema, t.name}.Sanitize() }

// checkServer checks what logical replication needs from the server and
// the user, and says what to run when something is missing.
func checkServer(ctx context.Context, conn *pgx.Conn) error {
	var version int
	var versionText string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version')").Scan(&version, &versionText); err != nil {
		return fmt.Errorf("read the server version: %w", err)
	}
	if err := checkVersion(version, versionText); err != nil {
		return err
	}
	var walLevel string
	if err := conn.QueryRow(ctx, "SHOW wal_level").Scan(&walLevel); err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if walLevel != "logical" {
		return connect.Permanent(fmt.Errorf("wal_level is %q, but logical replication needs %q; run: ALTER SYSTEM SET wal_level = logical; then restart the PostgreSQL server", walLevel, "logical"))
	}
	var user string
	var ok bool
	err := conn.QueryRow(ctx, "SELECT current_user, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &ok)
	if err != nil {
		return fmt.Errorf("read the privileges of the current user: %w", err)
	}
	if !ok {
		return connect.Permanent(fmt.Errorf("user %q lacks the REPLICATION attribute that logical replication needs; run as a superuser: ALTER ROLE %s WITH REPLICATION;", user, pgx.Identifier{user}.Sanitize()))
	}
	return nil
}

// minVersion is the oldest server the connector works with: pgoutput sends
// logical decoding messages (heartbeats, incremental snapshot watermarks)
// from PostgreSQL 14 on, and refuses the messages option before.
const minVersion = 140000

// checkVersion fails for a server older than minVersion.
func checkVersion(num int, text string) error {
	if num < minVersion {
		return connect.Permanent(fmt.Errorf("PostgreSQL %s is too old: the connector needs PostgreSQL 14 or later (whose pgoutput sends the logical decoding messages that heartbeats and incremental snapshots use); upgrade the server", text))
	}
	return nil
}

// resolveTables lists the tables matching the patterns (every user table
// when there are none) and checks that each can be captured: it needs a
// primary key or a replica identity that identifies rows. A partitioned
// table is captured as one table (the publication publishes its
// partitions' changes as its own: publish_via_partition_root); its
// partitions are not listed.
func resolveTables(ctx context.Context, conn *pgx.Conn, patterns []string) ([]tableRef, error) {
	rows, err := conn.Query(ctx, `
SELECT n.nspname, c.relname, c.relreplident::text,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	type info struct {
		ref           tableRef
		ident         string
		hasPK, hasIdx bool
	}
	var all []info
	for rows.Next() {
		var i info
		if err := rows.Scan(&i.ref.schema, &i.ref.name, &i.ident, &i.hasPK, &i.hasIdx); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		all = append(all, i)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []tableRef
	var errs []error
	for _, p := range patterns {
		if strings.ContainsAny(p, "*?[") {
			continue
		}
		found := false
		for _, i := range all {
			if i.ref.String() == p {
				found = true
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("table %s (in tables) does not exist, or is not an ordinary or partitioned table (a partition is captured through its partitioned table: name that one)", p))
		}
	}
	for _, i := range all {
		if !matchAny(patterns, i.ref.String()) {
			continue
		}
		q := i.ref.quoted()
		switch {
		case i.ident == "n":
			errs = append(errs, fmt.Errorf("table %s has REPLICA IDENTITY NOTHING, so its updates and deletes cannot be captured; run: ALTER TABLE %s REPLICA IDENTITY DEFAULT; (it has a primary key) or ALTER TABLE %s REPLICA IDENTITY FULL;", i.ref, q, q))
		case i.ident == "d" && !i.hasPK:
			errs = append(errs, fmt.Errorf("table %s has no primary key, so its updates and deletes cannot be captured; add one (ALTER TABLE %s ADD PRIMARY KEY (…);) or run: ALTER TABLE %s REPLICA IDENTITY FULL;", i.ref, q, q))
		case i.ident == "i" && !i.hasIdx:
			errs = append(errs, fmt.Errorf("table %s has REPLICA IDENTITY USING INDEX, but the index is gone; run: ALTER TABLE %s REPLICA IDENTITY DEFAULT; or ALTER TABLE %s REPLICA IDENTITY FULL;", i.ref, q, q))
		}
		out = append(out, i.ref)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table matches tables=%s; create the tables first, or fix the patterns", strings.Join(patterns, ","))
	}
	return out, nil
}

func matchAny(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	schema, table, _ := strings.Cut(name, ".")
	for _, p := range patterns {
		ps, pt, _ := strings.Cut(p, ".")
		if ok1, _ := path.Match(ps, schema); ok1 {
			if ok2, _ := path.Match(pt, table); ok2 {
				return true
			}
		}
	}
	return false
}

// ensurePublication makes sure the publication covers the tables, as
// mode (publication.autocreate.mode) allows: under filtered it is created
// for the tables when missing, and tables missing from one the connector's
// user owns (one it created, typically: tables created since) are added;
// under all_tables it is created FOR ALL TABLES when missing; under
// disabled nothing is created or changed. A missing publication or table
// that cannot be helped so is a permanent error saying what to run.
func ensurePublication(ctx context.Context, conn *pgx.Conn, log *slog.Logger, name, mode string, tables []tableRef) error {
	var allTables, owned, viaRoot, ins, upd, del bool
	err := conn.QueryRow(ctx, "SELECT puballtables, pg_get_userbyid(pubowner) = current_user, pubviaroot, pubinsert, pubupdate, pubdelete FROM pg_publication WHERE pubname = $1", name).
		Scan(&allTables, &owned, &viaRoot, &ins, &upd, &del)
	list := make([]string, len(tables))
	for i, t := range tables {
		list[i] = t.quoted()
	}
	ident := pgx.Identifier{name}.Sanitize()
	// A partitioned table's changes must come as its own, not as its
	// partitions' (which are not captured tables, and would be dropped).
	partitioned, perr := hasPartitioned(ctx, conn, list)
	if perr != nil {
		return perr
	}
	with := ""
	if partitioned {
		with = " WITH (publish_via_partition_root = true)"
	}
	if errors.Is(err, pgx.ErrNoRows) {
		create := fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s%s", ident, strings.Join(list, ", "), with)
		if mode == pubAllTables {
			create = fmt.Sprintf("CREATE PUBLICATION %s FOR ALL TABLES%s", ident, with)
		}
		if mode == pubDisabled {
			return connect.Permanent(fmt.Errorf("publication %s does not exist and publication.autocreate.mode is disabled; run: %s; (or let the connector create it: publication.autocreate.mode: filtered)", name, create))
		}
		if _, err := conn.Exec(ctx, create); err != nil {
			// CREATE PUBLICATION needs the CREATE privilege on the
			// database as well as owning the tables (FOR ALL TABLES:
			// a superuser).
			e := fmt.Errorf("create publication %s: %w; have the tables' owner (or a superuser) run: %s; "+
				"the owner also needs CREATE on the database (GRANT CREATE ON DATABASE %s TO %s;)",
				name, err, create, pgx.Identifier{conn.Config().Database}.Sanitize(), pgx.Identifier{conn.Config().User}.Sanitize())
			if refused(err) {
				return connect.Permanent(e)
			}
			return e
		}
		if mode == pubAllTables {
			log.Info("postgres: created publication for all tables", "publication", name)
		} else {
			log.Info("postgres: created publication", "publication", name, "tables", len(tables))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read publication %s: %w", name, err)
	}
	var unpublishedOps []string
	for _, op := range []struct {
		on   bool
		name string
	}{{ins, "insert"}, {upd, "update"}, {del, "delete"}} {
		if !op.on {
			unpublishedOps = append(unpublishedOps, op.name)
		}
	}
	if len(unpublishedOps) > 0 {
		// On purpose, maybe (an insert-only feed): a warning, not an error.
		log.Warn(fmt.Sprintf("postgres: publication %s does not publish %s: PostgreSQL leaves those changes of the captured tables out of the stream. "+
			"If they should be captured, run: ALTER PUBLICATION %s SET (publish = 'insert, update, delete, truncate');", name, strings.Join(unpublishedOps, ", "), ident),
			"publication", name)
	}
	if partitioned && !viaRoot {
		set := fmt.Sprintf("ALTER PUBLICATION %s SET (publish_via_partition_root = true);", ident)
		if mode == pubDisabled || !owned {
			return connect.Permanent(fmt.Errorf("publication %s publishes the changes of partitioned tables as their partitions', which are not captured (their changes would be lost); run: %s", name, set))
		}
		if _, err := conn.Exec(ctx, set); err != nil {
			e := fmt.Errorf("set publish_via_partition_root on publication %s: %w; have its owner (or a superuser) run: %s", name, err, set)
			if refused(err) {
				return connect.Permanent(e)
			}
			return e
		}
		log.Warn("postgres: set publish_via_partition_root on the publication, so that partitioned tables are published as themselves: their changes now come as the partitioned table's (on its topic), no longer as their partitions'", "publication", name)
	}
	if allTables {
		return nil
	}
	rows, err := conn.Query(ctx, "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1", name)
	if err != nil {
		return fmt.Errorf("read the tables of publication %s: %w", name, err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var t tableRef
		if err := rows.Scan(&t.schema, &t.name); err != nil {
			return fmt.Errorf("read the tables of publication %s: %w", name, err)
		}
		have[t.String()] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the tables of publication %s: %w", name, err)
	}
	var missing, names []string
	for i, t := range tables {
		if !have[t.String()] {
			missing = append(missing, list[i])
			names = append(names, t.String())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	alter := fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s;", ident, strings.Join(missing, ", "))
	if mode == pubFiltered && owned {
		if _, err := conn.Exec(ctx, alter); err != nil {
			e := fmt.Errorf("add %s to publication %s: %w; have the tables' owner (or a superuser) run: %s", strings.Join(missing, ", "), name, err, alter)
			if refused(err) {
				return connect.Permanent(e)
			}
			return e
		}
		log.Info("postgres: added tables to the publication (they match tables but were not in it: created since the last start?); "+
			"their changes are captured from now on, rows written before are not: take an incremental snapshot of them (execute-snapshot signal) for those",
			"publication", name, "tables", strings.Join(names, ","))
		return nil
	}
	why := "it is not owned by the connector's user, so the connector leaves it alone"
	if mode == pubDisabled {
		why = "publication.autocreate.mode is disabled"
	}
	return connect.Permanent(fmt.Errorf("publication %s does not publish %s (%s); run: %s", name, strings.Join(missing, ", "), why, alter))
}

// hasPartitioned reports whether any of the tables (quoted names) is a
// partitioned table.
func hasPartitioned(ctx context.Context, conn *pgx.Conn, quoted []string) (bool, error) {
	var yes bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = ANY($1::regclass[]) AND relkind = 'p')", quoted).Scan(&yes)
	if err != nil {
		return false, fmt.Errorf("look for partitioned tables: %w", err)
	}
	return yes, nil
}

// unpublished lists the ordinary and partitioned tables that match patterns but are not
// in the publication (none when it is FOR ALL TABLES, or missing): tables
// created since the start, whose changes pgoutput does not send.
func unpublished(ctx context.Context, conn *pgx.Conn, publication string, patterns []string) ([]tableRef, error) {
	rows, err := conn.Query(ctx, `
SELECT n.nspname, c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
  AND NOT (SELECT puballtables FROM pg_publication WHERE pubname = $1)
  AND NOT EXISTS (SELECT 1 FROM pg_publication_tables pt
                  WHERE pt.pubname = $1 AND pt.schemaname = n.nspname AND pt.tablename = c.relname)
ORDER BY 1, 2`, publication)
	if err != nil {
		return nil, fmt.Errorf("list tables missing from publication %s: %w", publication, err)
	}
	var out []tableRef
	for rows.Next() {
		var t tableRef
		if err := rows.Scan(&t.schema, &t.name); err != nil {
			return nil, fmt.Errorf("list tables missing from publication %s: %w", publication, err)
		}
		if matchAny(patterns, t.String()) {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables missing from publication %s: %w", publication, err)
	}
	return out, nil
}

// slotInfo is a row of pg_replication_slots.
type slotInfo struct {
	plugin, database string
	active           bool
	activePID        *int32
	confirmed        pglogrepl.LSN
	walStatus        *string
}

// readSlot returns the slot called name, or nil when there is none.
func readSlot(ctx context.Context, conn *pgx.Conn, name string) (*slotInfo, error) {
	var s slotInfo
	var plugin, db, confirmed *string
	err := conn.QueryRow(ctx, `
SELECT plugin, database, active, active_pid, confirmed_flush_lsn::text, wal_status
FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&plugin, &db, &s.active, &s.activePID, &confirmed, &s.walStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read replication slot %s: %w", name, err)
	}
	if plugin != nil {
		s.plugin = *plugin
	}
	if db != nil {
		s.database = *db
	}
	if confirmed != nil {
		if s.confirmed, err = pglogrepl.ParseLSN(*confirmed); err != nil {
			return nil, fmt.Errorf("read replication slot %s: %w", name, err)
		}
	}
	return &s, nil
}

// checkSlot checks that an existing slot can be used by this source.
func checkSlot(s *slotInfo, name, db string) error {
	if s.plugin != "pgoutput" {
		return connect.Permanent(fmt.Errorf("replication slot %s uses the output plugin %q, not pgoutput; choose another slot name, or drop it: SELECT pg_drop_replication_slot('%s');", name, s.plugin, name))
	}
	if s.database != db {
		return connect.Permanent(fmt.Errorf("replication slot %s belongs to database %q, not %q; choose another slot name", name, s.database, db))
	}
	if s.active {
		// Not permanent: the other consumer may be a previous instance
		// letting go of the slot, and a retry then succeeds.
		pid := "another process"
		if s.activePID != nil {
			pid = fmt.Sprintf("the process with pid %d", *s.activePID)
		}
		return fmt.Errorf("replication slot %s is in use by %s; stop the other consumer (is this source running twice?) or end it with: SELECT pg_terminate_backend(%s);", name, pid, strings.TrimPrefix(pid, "the process with pid "))
	}
	if s.walStatus != nil && *s.walStatus == "lost" {
		return connect.Permanent(fmt.Errorf("replication slot %s has lost WAL it needed (wal_status lost): changes are missing. Drop it (SELECT pg_drop_replication_slot('%s');) and start again with a snapshot (delete the source's stored offsets, or set snapshot.mode=always)", name, name))
	}
	return nil
}

// refused reports whether the server refused a statement for a reason no
// retry cures: an error of class 42 (a missing privilege, such as CREATE
// on the database or owning a table, or an undefined object).
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "42")
}
