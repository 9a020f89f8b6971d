package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// Name is the connector's name in pipeline files.
const Name = "postgres"

// version is the connector's version; it is also source.version in events.
const version = "0.1.0"

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the Postgres CDC source.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSource,
		Version:     version,
		Description: "Captures row changes from PostgreSQL with logical replication (pgoutput) as Debezium change events, after an optional consistent snapshot.",
		Spec:        spec(),
		NewSource:   func() connect.Source { return &Source{} },
	}
}

// Snapshot modes, with Debezium's meanings.
const (
	snapshotInitial     = "initial"      // snapshot when there is no stored position, then stream
	snapshotNever       = "never"        // stream only
	snapshotInitialOnly = "initial_only" // snapshot when there is no stored position, then stop
	snapshotAlways      = "always"       // snapshot at every start, then stream
)

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "dsn", Type: connect.TypeString, Required: true, Secret: true,
			Description: "Connection string of the database to capture, as libpq takes it (postgres://user:password@host:5432/db or key=value pairs). The user needs the REPLICATION attribute."},
		{Name: "tables", Type: connect.TypeList,
			Description: "Tables to capture as schema.table; * and ? glob within a part (public.order_*). Empty captures every table outside the system schemas."},
		{Name: "publication", Type: connect.TypeString,
			Description: "Publication to stream (see publication.autocreate.mode). Default: tributary_<source name>."},
		{Name: "publication.autocreate.mode", Type: connect.TypeString, Default: pubFiltered,
			Enum:        []string{pubFiltered, pubAllTables, pubDisabled},
			Description: "Debezium's values. filtered: create the publication for the captured tables when missing, and at each start add the tables that match tables but are missing from it (tables created since the last start) when the connector's user owns it, as it does one the connector created; all_tables: create it FOR ALL TABLES when missing (needs a superuser); disabled: never create or change it, fail when it is missing or lacks a table."},
		{Name: "slot", Type: connect.TypeString,
			Description: "Logical replication slot (pgoutput); created when missing. Default: tributary_<source name>, without the pipeline's name: two pipelines with a source of the same name on one database would share it (each missing the changes the other consumed), so give each its own. A source without a stored position that finds the slot existing, not created by this worker, warns and continues from the slot's confirmed LSN."},
		{Name: "snapshot.mode", Type: connect.TypeString, Default: snapshotInitial,
			Enum:        []string{snapshotInitial, snapshotNever, snapshotInitialOnly, snapshotAlways},
			Description: "initial: snapshot the tables when there is no stored position (or the stored snapshot is unfinished), then stream; never: stream only; initial_only: snapshot, then stop; always: snapshot at every start, then stream."},
		{Name: "topic.prefix", Type: connect.TypeString,
			Description: "Prefix of the topic names and source.name of the events (Debezium's topic.prefix). Default: the source name."},
		{Name: "topic", Type: connect.TypeString, Default: "{prefix}.{schema}.{table}",
			Description: "Topic of a table's events; {prefix}, {schema} and {table} are replaced. Required in a pipeline file, as the source's own topic key (topic: shop.{schema}.{table}), which the worker passes here (config.topic, if also given, must agree with it); the default applies only to a program that opens the source without one."},
		{Name: "heartbeat.interval", Type: connect.TypeDuration, Min: "0s", Default: "10s",
			Description: "How often to write a heartbeat into the WAL (pg_logical_emit_message) and emit it to __debezium-heartbeat.<prefix>, so the slot advances while the captured tables are idle. 0 disables heartbeats."},
		{Name: "wal.receiver.timeout", Type: connect.TypeDuration, Min: "0s", Default: "60s",
			Description: "How long the replication connection may stay silent before the connector takes it for dead (a vanished server host, a dropped NAT or firewall flow, a network partition: no reset ever comes), as the server's own wal_receiver_timeout does for its subscribers: after half of it without a message the connector asks the server for a reply, and when none comes it closes the connection and fails the task, which the worker restarts from the last acknowledged position. The heartbeats and slot readings made while streaming give up after it too. Never shorter than the server's wal_sender_timeout (a walsender busy decoding a large transaction answers only every half of that). It also bounds every other connection (catalogue, snapshot, incremental-snapshot chunks): TCP keepalives (after a sixth of it, every twelfth, ten probes) and TCP_USER_TIMEOUT (Linux) of it, unless the DSN sets libpq's keepalives* or tcp_user_timeout; and a query that has waited it for an answer makes the connector ask the server on a new connection, taking the query's connection for dead when that gets no answer within it either (a slow query on a reachable server goes on); so are the replication connection's commands before the stream starts (creating the slot, which waits for running transactions to end). 0 disables the check."},
		{Name: "decimal.handling.mode", Type: connect.TypeString, Default: string(decimalString),
			Enum:        []string{string(decimalString), string(decimalPrecise), string(decimalDouble)},
			Description: "How numeric and money values are written: string (\"12.34\", exact; our default), precise (Kafka Connect Decimal, base64 of the unscaled value), double (may lose precision)."},
		{Name: "skipped.operations", Type: connect.TypeList, Default: cdc.SkippedOpsDefault,
			Description: cdc.SkippedOpsHelp},
		{Name: "tombstones.on.delete", Type: connect.TypeBool, Default: "true",
			Description: "Follow each delete event with a tombstone (same key, null value), so compaction removes the row."},
		{Name: "schemas", Type: connect.TypeBool, Default: "false",
			Description: "Embed Kafka Connect schemas in keys and values ({\"schema\":…,\"payload\":…}), as JsonConverter's schemas.enable does."},
		{Name: "provide.transaction.metadata", Type: connect.TypeBool, Default: "false",
			Description: "Fill the transaction block of every event and write BEGIN and END records to <prefix>.transaction."},
		{Name: "unavailable.value.placeholder", Type: connect.TypeString, Default: connect.UnavailableValue,
			Description: "What an unchanged TOASTed value (which logical replication does not send) is replaced with."},
		{Name: "snapshot.workers", Type: connect.TypeInt, Min: "1", Max: "64", Default: "4",
			Description: "Connections reading the snapshot in parallel (whole tables, and parts of a large table with an integer key), each in a transaction on one shared snapshot."},
		{Name: "snapshot.chunk.size", Type: connect.TypeInt, Min: "1", Max: "1048576", Default: "4096",
			Description: "Rows per snapshot chunk; a restart resumes a table after its last finished chunk."},
		{Name: "signal.data.collection", Type: connect.TypeString,
			Description: "The signal table (schema.table with columns id, type, data, as Debezium's): an execute-snapshot row starts an incremental snapshot of the tables it names, stop-snapshot stops it. It must be in the publication (added when the connector creates it). Empty: no signal table."},
		{Name: "slot.retained.warn", Type: connect.TypeSize, Default: "1GiB",
			Description: "Warn (task status, log) when the replication slot retains more WAL than this; the amount is on /metrics as tributary_connector_slot_retained_wal_bytes. 0 never warns."},
		{Name: "batch.size", Type: connect.TypeInt, Min: "1", Max: "1048576", Default: "2048",
			Description: "Most records returned by one read."},
	}}
}

// Publication modes (publication.autocreate.mode), with Debezium's names.
const (
	pubFiltered  = "filtered"   // create for the captured tables; add new matching tables to one the user owns
	pubAllTables = "all_tables" // create FOR ALL TABLES
	pubDisabled  = "disabled"   // never create nor alter
)

// settings are the parsed configuration of a Source.
type settings struct {
	dsn          string
	tables       []string // patterns
	publication  string
	pubMode      string
	slot         string
	snapshotMode string
	prefix       string
	topic        string
	heartbeat    time.Duration
	deadAfter    time.Duration // wal.receiver.timeout; 0 = never
	decimals     decimalMode
	tombstones   bool
	skipped      cdc.SkippedOps
	schemas      bool
	txMetadata   bool
	placeholder  string
	workers      int
	chunkSize    int
	batchSize    int
	retainedWarn int64  // bytes; 0 = never
	signalTable  string // schema.table, "" for none
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func parseSettings(cfg connect.Config) (settings, error) {
	var s settings
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	field := func(param, format string, args ...any) {
		errs = append(errs, connect.FieldError{Param: param, Message: fmt.Sprintf(format, args...)})
	}
	var err error
	s.dsn, err = cfg.String("dsn")
	add(err)
	if err == nil {
		if pc, perr := pgconn.ParseConfig(s.dsn); perr != nil {
			field("dsn", "not a valid connection string (%s)", redactErr(perr, s.dsn))
		} else if _, nerr := netOptionsFor(0, pc.RuntimeParams); nerr != nil {
			field("dsn", "%v", nerr)
		}
	}
	s.tables, err = cfg.List("tables")
	add(err)
	for _, t := range s.tables {
		if _, err := path.Match(t, ""); err != nil || strings.Count(t, ".") != 1 {
			field("tables", "%q: give schema.table, with * or ? globs inside a part", t)
		}
	}
	base := "tributary_" + sanitizeIdent(cfg.Connector)
	if len(base) > 63 {
		base = base[:63]
	}
	s.publication, err = cfg.String("publication")
	add(err)
	if s.publication == "" {
		s.publication = base
	}
	s.pubMode, err = cfg.String("publication.autocreate.mode")
	add(err)
	s.slot, err = cfg.String("slot")
	add(err)
	if s.slot == "" {
		s.slot = base
	}
	if !identRE.MatchString(s.slot) {
		field("slot", "%q: a slot name has 1 to 63 lower-case letters, digits and underscores", s.slot)
	}
	s.snapshotMode, err = cfg.String("snapshot.mode")
	add(err)
	s.prefix, err = cfg.String("topic.prefix")
	add(err)
	if s.prefix == "" {
		s.prefix = cfg.Connector
	}
	if s.prefix == "" {
		field("topic.prefix", "empty: give a prefix, or name the source")
	}
	s.topic, err = cfg.String("topic")
	add(err)
	s.heartbeat, err = cfg.Duration("heartbeat.interval")
	add(err)
	if s.heartbeat < 0 {
		field("heartbeat.interval", "%s: give 0 (off) or a positive duration", s.heartbeat)
	}
	s.deadAfter, err = cfg.Duration("wal.receiver.timeout")
	add(err)
	if s.deadAfter < 0 {
		field("wal.receiver.timeout", "%s: give 0 (off) or a positive duration", s.deadAfter)
	}
	dm, err := cfg.String("decimal.handling.mode")
	add(err)
	s.decimals = decimalMode(dm)
	s.tombstones, err = cfg.Bool("tombstones.on.delete")
	add(err)
	if ops, err := cfg.List("skipped.operations"); err != nil {
		add(err)
	} else if s.skipped, err = cdc.ParseSkippedOps(ops); err != nil {
		field("skipped.operations", "%v", err)
	}
	s.schemas, err = cfg.Bool("schemas")
	add(err)
	s.txMetadata, err = cfg.Bool("provide.transaction.metadata")
	add(err)
	s.placeholder, err = cfg.String("unavailable.value.placeholder")
	add(err)
	intIn := func(name string, lo, hi int64) int {
		v, err := cfg.Int(name)
		if err != nil {
			add(err)
			return int(lo)
		}
		if v < lo || v > hi {
			field(name, "%d: give a number from %d to %d", v, lo, hi)
			return int(lo)
		}
		return int(v)
	}
	s.workers = intIn("snapshot.workers", 1, 64)
	s.chunkSize = intIn("snapshot.chunk.size", 1, 1<<20)
	s.batchSize = intIn("batch.size", 1, 1<<20)
	s.signalTable, err = cfg.String("signal.data.collection")
	add(err)
	if s.signalTable != "" && (strings.Count(s.signalTable, ".") != 1 || strings.ContainsAny(s.signalTable, "*?[")) {
		field("signal.data.collection", "%q: give the signal table as schema.table", s.signalTable)
	}
	s.retainedWarn, err = cfg.Size("slot.retained.warn")
	add(err)
	if s.retainedWarn < 0 {
		field("slot.retained.warn", "%d: give 0 (never) or a size such as 1GiB", s.retainedWarn)
	}
	return s, errors.Join(errs...)
}

// sanitizeIdent makes a name usable in a slot or publication name.
func sanitizeIdent(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "source"
	}
	return b.String()
}

// topicFor returns the topic of a table's events.
func (s *settings) topicFor(schema, table string) string {
	return strings.NewReplacer("{prefix}", s.prefix, "{schema}", schema, "{table}", table).Replace(s.topic)
}

// redactDSN returns the connection string with its password masked, for
// error messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), connect.Masked)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", connect.Masked)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`).ReplaceAllString(dsn, "${1}"+connect.Masked)
}

// redactErr returns err's message with the DSN's password masked, should
// it appear.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if cfg, perr := pgconn.ParseConfig(dsn); perr == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, connect.Masked)
	}
	return strings.ReplaceAll(msg, dsn, redactDSN(dsn))
}
