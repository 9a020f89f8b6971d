package mysql

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// Name is the connector's name in pipeline files.
const Name = "mysql"

// version is the connector's version; it is also source.version in events.
const version = "0.1.0"

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the MySQL and MariaDB CDC source.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSource,
		Version:     version,
		Description: "Captures row changes from MySQL and MariaDB from the binary log (ROW format, GTIDs or file/position) as Debezium change events, after an optional consistent snapshot.",
		Spec:        spec(),
		NewSource:   func() connect.Source { return &Source{} },
	}
}

// Snapshot modes, with Debezium's meanings.
const (
	snapshotInitial     = "initial"      // snapshot when there is no stored position, then stream
	snapshotNever       = "never"        // stream only
	snapshotInitialOnly = "initial_only" // snapshot when there is no stored position, then stop
	snapshotWhenNeeded  = "when_needed"  // snapshot when there is no stored position or the binlog it needs is gone
)

// skippedOpsChoices are the values of skipped.operations, as Debezium's.
var skippedOpsChoices = []string{"c", "u", "d", "t", "none"}

// decimalMode is decimal.handling.mode.
type decimalMode string

const (
	decimalString  decimalMode = "string"
	decimalPrecise decimalMode = "precise"
	decimalDouble  decimalMode = "double"
)

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "dsn", Type: connect.TypeString, Required: true, Secret: true,
			Description: "Server to capture: mysql://user:password@host:3306 or the Go driver form user:password@tcp(host:3306)/. The user needs REPLICATION SLAVE, REPLICATION CLIENT and SELECT (RELOAD for a snapshot on MySQL)."},
		{Name: "server.id", Type: connect.TypeInt, Min: "1", Max: "4294967295",
			Description: "Server id the connector registers with as a replica; unique among the server's replicas. Default: derived from the pipeline and source names (in 5400000-6399999)."},
		{Name: "tables", Type: connect.TypeList,
			Description: "Tables to capture as database.table; * and ? glob within a part (shop.order_*). Empty captures every table outside the system databases."},
		{Name: "snapshot.mode", Type: connect.TypeString, Default: snapshotInitial,
			Enum:        []string{snapshotInitial, snapshotNever, snapshotInitialOnly, snapshotWhenNeeded},
			Description: "initial: snapshot when there is no stored position (or the stored snapshot is unfinished), then stream; never: stream only; initial_only: snapshot, then stop; when_needed: like initial, and also snapshot again when the binlog the stored position needs was purged."},
		{Name: "topic.prefix", Type: connect.TypeString,
			Description: "Prefix of the topic names and source.name of the events (Debezium's topic.prefix). Default: the source name."},
		{Name: "topic", Type: connect.TypeString, Default: "{prefix}.{database}.{table}",
			Description: "Topic of a table's events; {prefix}, {database} and {table} are replaced. Required in a pipeline file, as the source's own topic key (topic: shop.{database}.{table}), which the worker passes here (config.topic, if also given, must agree with it); the default applies only to a program that opens the source without one."},
		{Name: "heartbeat.interval", Type: connect.TypeDuration, Min: "0s", Default: "10s",
			Description: "How often to emit a heartbeat record (__debezium-heartbeat.<prefix>) carrying the latest binlog position while the captured tables are idle, and the server's heartbeat period. 0 disables heartbeats."},
		{Name: "connection.dead.timeout", Type: connect.TypeDuration, Min: "1s", Default: "60s",
			Description: "How long a connection to the server may stay silent before the connector suspects the network (a vanished host, a firewall or NAT that dropped the flow: nothing arrives, nothing is reset). TCP keepalives and TCP_USER_TIMEOUT take an unanswering peer for dead after about this long; a query that waits this long without an answer has the server checked on a new connection, and fails (the task restarts) only when that gets no answer within it either, so a slow query of a live server is never cut; a binlog connection silent this long (at least three heartbeat periods) is dropped and reconnected. Raise it on a network with long stalls."},
		{Name: "decimal.handling.mode", Type: connect.TypeString, Default: string(decimalString),
			Enum:        []string{string(decimalString), string(decimalPrecise), string(decimalDouble)},
			Description: "How DECIMAL values are written: string (\"12.34\", exact; our default), precise (Kafka Connect Decimal, base64 of the unscaled value), double (may lose precision)."},
		{Name: "tombstones.on.delete", Type: connect.TypeBool, Default: "true",
			Description: "Follow each delete event with a tombstone (same key, null value), so compaction removes the row."},
		{Name: "unavailable.value.placeholder", Type: connect.TypeString, Default: connect.UnavailableValue,
			Description: "What a BLOB or TEXT value that a binlog_row_image=NOBLOB row image leaves out (unchanged, or in a before image) is replaced with: the text, or its bytes for a binary column."},
		{Name: "skipped.operations", Type: connect.TypeList, Default: cdc.SkippedOpsDefault, Enum: skippedOpsChoices,
			Description: cdc.SkippedOpsHelp + " A TRUNCATE TABLE of a captured table is a t event (null key, no before or after)."},
		{Name: "schemas", Type: connect.TypeBool, Default: "false",
			Description: "Embed Kafka Connect schemas in keys and values ({\"schema\":…,\"payload\":…}), as JsonConverter's schemas.enable does."},
		{Name: "include.query", Type: connect.TypeBool, Default: "false",
			Description: "Write the statement that made each change into source.query, as Debezium's include.query: from the binlog's Rows_query events (MySQL: binlog_rows_query_log_events=ON) or Annotate_rows events (MariaDB: binlog_annotate_row_events=ON, the default); null when the server did not log it."},
		{Name: "provide.transaction.metadata", Type: connect.TypeBool, Default: "false",
			Description: "Fill the transaction block of every event and write BEGIN and END records to <prefix>.transaction."},
		{Name: "state.dir", Type: connect.TypeString,
			Description: "Directory for the schema history (table definitions by binlog position). Required when the server does not log binlog_row_metadata=FULL; optional otherwise."},
		{Name: "snapshot.workers", Type: connect.TypeInt, Min: "1", Max: "64", Default: "4",
			Description: "Tables snapshotted in parallel, each on its own connection."},
		{Name: "snapshot.chunk.size", Type: connect.TypeInt, Min: "1", Max: "1048576", Default: "4096",
			Description: "Rows per snapshot chunk (read by primary key); a restart resumes a table after its last emitted chunk."},
		{Name: "batch.size", Type: connect.TypeInt, Min: "1", Max: "1048576", Default: "2048",
			Description: "Most records returned by one read."},
		{Name: "xa.buffer.bytes", Type: connect.TypeInt, Min: "1024", Default: "268435456",
			Description: "Most bytes (the binlog size of their rows events) of prepared XA transactions held in memory until their XA COMMIT (then emitted) or XA ROLLBACK (then dropped). Beyond it the task fails, naming the transaction, and is not restarted: raise it, or commit or roll back the prepared transactions, then restart the connector."},
		{Name: "xa.start.wait", Type: connect.TypeDuration, Min: "0s", Default: "5m",
			Description: "How long a start without a stored position (or a new snapshot under when_needed) waits for XA transactions prepared before its start position to be committed or rolled back (their changes would be lost otherwise), checking XA RECOVER and the binlog; beyond it the task fails, naming them, and is not restarted: decide them (XA COMMIT or XA ROLLBACK), or raise it. 0 starts without waiting (only a warning); needed when the user may not run XA RECOVER (MySQL 8.0.19+ without XA_RECOVER_ADMIN)."},
		{Name: "tls.mode", Type: connect.TypeString, Default: tlsPreferred, Enum: tlsModes,
			Description: "TLS to the server, for queries and the binlog alike (MySQL's --ssl-mode): disabled; preferred (TLS when the server offers it, certificate not checked); required (TLS, not checked); verify-ca (the certificate chain checked against tls.ca); verify-full (and the host name). When unset, a tls parameter of the DSN decides (true: verify-full, skip-verify: required, preferred, false: disabled)."},
		{Name: "tls.ca", Type: connect.TypeString,
			Description: "PEM file of the certificate authorities verify-ca and verify-full trust. Default: the system's."},
		{Name: "signal.data.collection", Type: connect.TypeString,
			Description: "The signal table (database.table with columns id, type, data, as Debezium's): an execute-snapshot row starts an incremental snapshot of the tables it names, stop-snapshot, pause-snapshot and resume-snapshot act on it. Incremental snapshots write their watermarks into it, so the user needs INSERT on it. Empty: no signal table and no incremental snapshots."},
	}, Check: checkSpec}
}

// checkSpec checks the configuration as Open does, without touching the
// server: the settings as a whole (none combined with operations in
// skipped.operations, the DSN, tls.mode with tls.ca) and the tls.ca file
// (missing, unreadable, not PEM), so that `tributary validate` and the
// REST validate endpoint report them. Open reads the file again.
func checkSpec(cfg connect.Config) error {
	// Check is given the values alone, not the source's name, which is
	// topic.prefix's default: stand one in.
	if cfg.Connector == "" {
		cfg.Connector = "source"
	}
	_, err := parseSettings(cfg)
	return err
}

// settings are the parsed configuration of a Source.
type settings struct {
	dsn           *mysql.Config // parsed; Passwd is the secret
	serverID      uint32
	tables        []string // patterns
	snapshotMode  string
	prefix        string
	topic         string
	heartbeat     time.Duration
	deadTimeout   time.Duration // connection.dead.timeout
	decimals      decimalMode
	tombstones    bool
	placeholder   string         // unavailable.value.placeholder
	skipped       cdc.SkippedOps // skipped.operations
	schemas       bool
	txMetadata    bool
	includeQuery  bool
	stateDir      string
	workers       int
	chunkSize     int
	batchSize     int
	xaBufferBytes int64
	xaStartWait   time.Duration // 0: start without waiting for prepared XA transactions
	signalTable   string        // database.table, "" for none
	tlsMode       string
	tlsCA         string
}

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
	dsn, err := cfg.String("dsn")
	add(err)
	if err == nil {
		if s.dsn, err = parseDSN(dsn); err != nil {
			field("dsn", "%v", err)
		}
	}
	id, err := cfg.Int("server.id")
	add(err)
	switch {
	case err != nil:
	case id == 0:
		s.serverID = defaultServerID(cfg.Pipeline, cfg.Connector)
	case id < 1 || id > 1<<32-1:
		field("server.id", "%d: give a number from 1 to 4294967295, unique among the server's replicas", id)
	default:
		s.serverID = uint32(id)
	}
	s.tables, err = cfg.List("tables")
	add(err)
	for _, t := range s.tables {
		if _, err := path.Match(t, ""); err != nil || strings.Count(t, ".") != 1 {
			field("tables", "%q: give database.table, with * or ? globs inside a part", t)
		}
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
	s.deadTimeout, err = cfg.Duration("connection.dead.timeout")
	add(err)
	if s.deadTimeout < time.Second {
		field("connection.dead.timeout", "%s: give at least 1s", s.deadTimeout)
	}
	dm, err := cfg.String("decimal.handling.mode")
	add(err)
	s.decimals = decimalMode(dm)
	s.tombstones, err = cfg.Bool("tombstones.on.delete")
	add(err)
	s.placeholder, err = cfg.String("unavailable.value.placeholder")
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
	s.includeQuery, err = cfg.Bool("include.query")
	add(err)
	s.stateDir, err = cfg.String("state.dir")
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
	s.xaBufferBytes = int64(intIn("xa.buffer.bytes", 1024, 1<<62))
	s.xaStartWait, err = cfg.Duration("xa.start.wait")
	add(err)
	if s.xaStartWait < 0 {
		field("xa.start.wait", "%s: give 0 (do not wait) or a positive duration", s.xaStartWait)
	}
	s.tlsMode, err = cfg.String("tls.mode")
	add(err)
	if _, set := cfg.Values["tls.mode"]; !set && s.dsn != nil && s.dsn.TLSConfig != "" {
		// The DSN's tls parameter, in tls.mode's words.
		if m, ok := dsnTLSModes[strings.ToLower(s.dsn.TLSConfig)]; ok {
			s.tlsMode = m
		} else {
			field("dsn", "tls=%s: give tls=true, skip-verify, preferred or false, or set tls.mode and tls.ca", s.dsn.TLSConfig)
		}
	}
	s.tlsCA, err = cfg.String("tls.ca")
	add(err)
	if s.tlsCA != "" && s.tlsMode != tlsVerifyCA && s.tlsMode != tlsVerifyFull {
		field("tls.ca", "given with tls.mode=%s, which checks no certificate: set tls.mode=verify-ca or verify-full", s.tlsMode)
	}
	if s.dsn != nil && err == nil {
		if err := applyTLS(s.dsn, s.tlsMode, s.tlsCA); err != nil {
			field("tls.ca", "%v", err)
		}
	}
	s.signalTable, err = cfg.String("signal.data.collection")
	add(err)
	if s.signalTable != "" && (strings.Count(s.signalTable, ".") != 1 || strings.ContainsAny(s.signalTable, "*?[")) {
		field("signal.data.collection", "%q: give the signal table as database.table", s.signalTable)
	}
	return s, errors.Join(errs...)
}

// defaultServerID derives a replica server id from the source's identity,
// in 5400000-6399999 (away from the small ids servers usually get).
func defaultServerID(pipeline, connector string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(pipeline + "/" + connector))
	return 5_400_000 + h.Sum32()%1_000_000
}

// parseDSN accepts mysql://user:password@host:port[/db][?params] and the
// go-sql-driver form user:password@tcp(host:port)/[db][?params]. Errors
// never contain the password.
func parseDSN(dsn string) (*mysql.Config, error) {
	if strings.HasPrefix(dsn, "mysql://") || strings.HasPrefix(dsn, "mariadb://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, fmt.Errorf("not a valid mysql:// URL (%s)", redactMsg(err.Error(), dsn))
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net = "tcp"
		host := u.Host
		if host == "" {
			return nil, errors.New("the mysql:// URL has no host (mysql://user:password@host:3306)")
		}
		if _, _, err := net.SplitHostPort(host); err != nil {
			host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
		}
		cfg.Addr = host
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		q := u.Query()
		for k, v := range q {
			if len(v) > 0 {
				if err := setParam(cfg, k, v[len(v)-1]); err != nil {
					return nil, err
				}
			}
		}
		return finishDSN(cfg)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("not a valid DSN; give mysql://user:password@host:3306 or user:password@tcp(host:3306)/ (%s)", redactMsg(err.Error(), dsn))
	}
	return finishDSN(cfg)
}

// setParam applies one query parameter of a mysql:// URL by letting the
// driver parse it in its own DSN form.
func setParam(cfg *mysql.Config, k, v string) error {
	p, err := mysql.ParseDSN("u@tcp(h:1)/?" + url.QueryEscape(k) + "=" + url.QueryEscape(v))
	if err != nil {
		return fmt.Errorf("parameter %s: %v", k, err)
	}
	if p.Params != nil {
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		for pk, pv := range p.Params {
			cfg.Params[pk] = pv
		}
	}
	switch k {
	case "tls":
		cfg.TLSConfig = v
	case "timeout":
		cfg.Timeout = p.Timeout
	case "readTimeout":
		cfg.ReadTimeout = p.ReadTimeout
	case "writeTimeout":
		cfg.WriteTimeout = p.WriteTimeout
	}
	return nil
}

// finishDSN pins the session settings the connector relies on.
func finishDSN(cfg *mysql.Config) (*mysql.Config, error) {
	if cfg.Net != "tcp" && cfg.Net != "unix" {
		return nil, fmt.Errorf("network %q: give tcp(host:port) or unix(/path/to/socket)", cfg.Net)
	}
	if cfg.User == "" {
		return nil, errors.New("no user: give mysql://user:password@host:3306")
	}
	cfg.ParseTime = false
	cfg.InterpolateParams = false
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Collation = "utf8mb4_general_ci"
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return cfg, nil
}

// hostPort splits the DSN's address for the binlog client.
func hostPort(cfg *mysql.Config) (string, uint16, error) {
	if cfg.Net == "unix" {
		return cfg.Addr, 0, nil
	}
	h, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", cfg.Addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: bad port", cfg.Addr)
	}
	return h, uint16(port), nil
}

// redactedDSN describes the server for messages: user@address, never the
// password.
func redactedDSN(cfg *mysql.Config) string {
	return fmt.Sprintf("mysql://%s:%s@%s", cfg.User, connect.Masked, cfg.Addr)
}

// redactMsg masks the password of dsn in msg.
func redactMsg(msg, dsn string) string {
	if pw := passwordOf(dsn); pw != "" {
		msg = strings.ReplaceAll(msg, pw, connect.Masked)
		if u, err := url.PathUnescape(pw); err == nil && u != "" {
			msg = strings.ReplaceAll(msg, u, connect.Masked)
		}
	}
	return msg
}

// passwordOf finds the password in a DSN of either form without parsing
// it (so that it works for DSNs that do not parse): the text between the
// first ':' of the user info and the last '@' before the address.
func passwordOf(dsn string) string {
	rest := dsn
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return ""
	}
	return pw
}

// topicFor returns the topic of a table's events.
func (s *settings) topicFor(db, table string) string {
	return strings.NewReplacer("{prefix}", s.prefix, "{database}", db, "{table}", table).Replace(s.topic)
}

// matchAny reports whether db.table matches one of the patterns (every
// table when there are none).
func matchAny(patterns []string, db, table string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		pd, pt, _ := strings.Cut(p, ".")
		if ok1, _ := path.Match(pd, db); ok1 {
			if ok2, _ := path.Match(pt, table); ok2 {
				return true
			}
		}
	}
	return false
}

// systemDB reports whether db is one of the server's own databases.
func systemDB(db string) bool {
	switch strings.ToLower(db) {
	case "mysql", "information_schema", "performance_schema", "sys":
		return true
	}
	return false
}
