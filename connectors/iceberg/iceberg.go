package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/tributary-io/tributary/connect"
)

// Name is the connector's name in pipeline files.
const Name = "iceberg"

const version = "0.1.0"

// The modes.
const (
	modeAppend = "append"
	modeUpsert = "upsert"
)

// offsetsPrefix starts the snapshot summary property that holds the log
// offsets a commit covers; the sink's pipeline and name follow.
const offsetsPrefix = "tributary.offsets."

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the Iceberg sink.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSink,
		Version:     version,
		Description: "Writes records into Apache Iceberg tables (Parquet), appending every event or upserting change events by primary key, exactly once.",
		Spec:        spec(),
		NewSink:     func() connect.Sink { return &Sink{} },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "catalog.type", Type: connect.TypeString, Default: catalogSQL, Enum: []string{catalogSQL, catalogREST},
			Description: "The Iceberg catalog: sql (a SQLite file or Postgres database holding the table pointers) or rest (an Iceberg REST catalog server: Polaris, Gravitino, Lakekeeper, Nessie, Unity, AWS Glue's or S3 Tables' REST endpoint, …)."},
		{Name: "catalog.uri", Type: connect.TypeString, Default: "sqlite://./data/iceberg/catalog.db", Secret: true,
			Description: "Where the catalog lives: sqlite://PATH (created when missing; a relative path is relative to the worker's working directory; default sqlite://./data/iceberg/catalog.db), postgres://USER:PASSWORD@HOST:PORT/DB, or for catalog.type rest the server's base URL, e.g. http://127.0.0.1:8181 (the client adds /v1)."},
		{Name: "catalog.name", Type: connect.TypeString, Default: "tributary",
			Description: "The catalog's name, stored with every table of a SQL catalog; engines reading the same catalog use it too."},
		{Name: "catalog.warehouse", Type: connect.TypeString,
			Description: "rest: the warehouse to ask the REST server for (sent as ?warehouse= to GET /v1/config); servers that host several warehouses need it, e.g. a Polaris catalog name or an S3 Tables bucket ARN."},
		{Name: "catalog.credential", Type: connect.TypeString, Secret: true,
			Description: "rest: OAuth2 client credentials, CLIENT_ID:CLIENT_SECRET (or only the secret), exchanged for a token at catalog.oauth2.server.uri with the client_credentials grant; refreshed when it expires."},
		{Name: "catalog.token", Type: connect.TypeString, Secret: true,
			Description: "rest: a bearer token sent on every request (instead of catalog.credential)."},
		{Name: "catalog.oauth2.server.uri", Type: connect.TypeString,
			Description: "rest: the OAuth2 token endpoint for catalog.credential; default CATALOG_URI/v1/oauth/tokens."},
		{Name: "catalog.scope", Type: connect.TypeString,
			Description: "rest: the OAuth2 scope requested with catalog.credential; default catalog."},
		{Name: "catalog.prefix", Type: connect.TypeString,
			Description: "rest: the path prefix after /v1/ (most servers send it in their config answer; set it only when yours does not)."},
		{Name: "catalog.headers", Type: connect.TypeList,
			Description: "rest: extra HTTP headers on every catalog request, as NAME=VALUE items, e.g. [X-Iceberg-Access-Delegation=remote-signing]."},
		{Name: "warehouse", Type: connect.TypeString, Default: "./data/iceberg/warehouse",
			Description: "sql: where new tables' data and metadata files go: a local path or file:// URL (relative to the working directory), or s3://BUCKET/PREFIX. rest: not used (the REST server places tables)."},
		{Name: "s3.endpoint", Type: connect.TypeString,
			Description: "S3-compatible storage (MinIO, Ceph, R2, …): the endpoint URL, e.g. http://127.0.0.1:9000; default AWS S3 (or AWS_S3_ENDPOINT)."},
		{Name: "s3.region", Type: connect.TypeString,
			Description: "The S3 region; default AWS_REGION or the AWS config files."},
		{Name: "s3.path.style", Type: connect.TypeString, Default: "auto", Enum: []string{"auto", "true", "false"},
			Description: "Path-style bucket addressing (http://HOST/BUCKET/KEY): auto uses it when s3.endpoint is set and virtual-hosted style (http://BUCKET.HOST/KEY) for AWS."},
		{Name: "s3.access.key.id", Type: connect.TypeString,
			Description: "The S3 access key; default from the environment (AWS_ACCESS_KEY_ID, AWS config files, instance roles)."},
		{Name: "s3.secret.access.key", Type: connect.TypeString, Secret: true,
			Description: "The S3 secret key, with s3.access.key.id; default AWS_SECRET_ACCESS_KEY."},
		{Name: "s3.session.token", Type: connect.TypeString, Secret: true,
			Description: "A session token for temporary S3 credentials, with the two keys; default AWS_SESSION_TOKEN."},
		{Name: "table", Type: connect.TypeString, Default: "{namespace}.{table}",
			Description: "The table name template, namespace.table: {namespace} and {table} come from a change event's source block (schema or db, and table), else from the topic (its last two dot-separated parts; namespace default when there is one part); also {topic} (dots as underscores)."},
		{Name: "mode", Type: connect.TypeString, Default: modeAppend, Enum: []string{modeAppend, modeUpsert},
			Description: "append writes every record as a row; upsert keeps one row per key (change events' primary key), writing updates and deletes as equality deletes (merge-on-read)."},
		{Name: "key.columns", Type: connect.TypeList,
			Description: "upsert: the key columns (the table's identifier fields); default: the fields of the record key (a change event's primary key)."},
		{Name: "commit.interval", Type: connect.TypeDuration, Default: "60s", Positive: true,
			Description: "Commit a snapshot at least this often while records arrive; the worker's flush (every 5 s, and before a pause or stop) also commits."},
		{Name: "commit.records", Type: connect.TypeInt, Default: "100000", Positive: true,
			Description: "Commit a snapshot once this many records are buffered."},
		{Name: "commit.bytes", Type: connect.TypeSize, Default: "256MiB", Min: "1MiB",
			Description: "Commit a snapshot once the buffered records' keys and values (as read from the log) add up to this much: bounds the sink's memory when records are large."},
		{Name: "partition", Type: connect.TypeList,
			Description: "The partition spec of tables the sink creates: columns and transforms, e.g. [day(ts), bucket(16, user_id)]; identity(c), year, month, day, hour, bucket(N, c), truncate(W, c). In upsert mode, key columns only."},
		{Name: "target.file.size", Type: connect.TypeSize, Default: "512MiB", Min: "1MiB",
			Description: "Roll data files at this size (write.target-file-size-bytes of the tables the sink creates)."},
		{Name: "schema", Type: connect.TypeList,
			Description: "Pins column types, e.g. [id long not null, amount decimal(10,2), ts timestamptz]; other columns come from the record's schema or are inferred from JSON values."},
		{Name: "unavailable.value.placeholder", Type: connect.TypeString, Default: connect.UnavailableValue,
			Description: "upsert: the placeholder a change event carries for an unchanged TOASTed value (the Postgres source's setting of the same name): the column keeps the key's previous value instead (from the rows buffered, else read from the table by key); an update of a key the sink has no row of fails as a bad record."},
		{Name: "metadata.columns", Type: connect.TypeBool, Default: "true",
			Description: "Add the columns _topic, _partition, _offset, _timestamp and, for change events, _op."},
		{Name: "metadata.prefix", Type: connect.TypeString, Default: "_",
			Description: "The prefix of the metadata columns' names."},
		{Name: "offsets.from.table", Type: connect.TypeBool, Default: "true",
			Description: "Skip records at or below the offsets the table's snapshots hold for this sink (exactly once across restarts). false writes them again: set it, for one run, to reprocess after rewinding the sink (connectors offsets --reset), knowing that append mode then adds the rows a second time and that a crash between an Iceberg commit and the group's offset commit writes records twice."},
		{Name: "compact.interval", Type: connect.TypeDuration, Default: "0s", Min: "0s",
			Description: "Compact each table the sink commits to this often (after a commit, in the task): small data files are rewritten into files of about target.file.size, applying their delete files, and equality delete files no data file needs are dropped. 0 (default) never compacts."},
		{Name: "compact.min.files", Type: connect.TypeInt, Default: "5", Min: "2",
			Description: "Compaction rewrites the small files of a partition only when it has at least this many."},
		{Name: "expire.interval", Type: connect.TypeDuration, Default: "1h", Min: "0s",
			Description: "Expire old snapshots of each table the sink commits to this often (after a commit, in the task); 0 never expires. Streaming commits often, and every snapshot stays in the table's metadata until expired."},
		{Name: "expire.older.than", Type: connect.TypeDuration, Default: "24h", Min: "0s",
			Description: "Expiry removes snapshots older than this (time travel reaches back this far), keeping at least expire.retain.last."},
		{Name: "expire.retain.last", Type: connect.TypeInt, Default: "100", Min: "1",
			Description: "Expiry keeps at least this many of the newest snapshots."},
	}, Check: checkOptions}
}

// checkOptions is the spec's whole-config check: what Open refuses before
// it opens the catalog (a partition spec, a schema or a table template that
// does not parse, settings that exclude each other), so that pipeline
// validation reports it where it is written.
func checkOptions(cfg connect.Config) error {
	_, _, err := parseOptions(cfg)
	return err
}

// options are the parsed settings.
type options struct {
	mode            string
	template        string
	keyColumns      []string
	commitInterval  time.Duration
	commitRecords   int64
	commitBytes     int64
	partition       []partField
	targetFileSize  int64
	pinned          map[string]pinnedColumn
	metadata        bool
	placeholder     string       // for unchanged TOASTed values
	unavailable     *unavailable // the placeholder's forms; nil when it is empty
	prefix          string
	metaNames       []string
	offsetsKey      string
	offsetsFromTbl  bool          // skip records at or below the table's stored offsets
	log             *slog.Logger  // the sink's; slog.Default() for the upkeep commands
	compactInterval time.Duration // 0: never
	compactMinFiles int
	expireInterval  time.Duration // 0: never
	expireOlder     time.Duration
	expireRetain    int
}

func (o *options) pinnedRequired(name string) bool { return o.pinned[name].required }

func parseOptions(cfg connect.Config) (*options, catalogConfig, error) {
	cfg.Spec = spec()
	var errs []error
	str := func(name string) string {
		v, err := cfg.String(name)
		errs = append(errs, err)
		return v
	}
	o := &options{
		mode:     str("mode"),
		template: str("table"),
		prefix:   str("metadata.prefix"),
	}
	o.placeholder = str("unavailable.value.placeholder")
	o.unavailable = newUnavailable(o.placeholder)
	cc := catalogConfig{typ: str("catalog.type"), uri: str("catalog.uri"), name: str("catalog.name"), warehouse: str("warehouse"),
		restWarehouse: str("catalog.warehouse"), credential: str("catalog.credential"), token: str("catalog.token"),
		oauthURI: str("catalog.oauth2.server.uri"), scope: str("catalog.scope"), prefix: str("catalog.prefix")}
	io, err := s3Props(str("s3.endpoint"), str("s3.region"), str("s3.path.style"), str("s3.access.key.id"), str("s3.secret.access.key"), str("s3.session.token"))
	errs = append(errs, err)
	cc.io = io
	headers, err := cfg.List("catalog.headers")
	errs = append(errs, err)
	for _, h := range headers {
		k, v, ok := strings.Cut(h, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			errs = append(errs, connect.FieldError{Param: "catalog.headers", Message: fmt.Sprintf("%q: want NAME=VALUE", h)})
			continue
		}
		if cc.headers == nil {
			cc.headers = map[string]string{}
		}
		cc.headers[k] = strings.TrimSpace(v)
	}
	o.keyColumns, err = cfg.List("key.columns")
	errs = append(errs, err)
	o.commitInterval, err = cfg.Duration("commit.interval")
	errs = append(errs, err)
	o.commitRecords, err = cfg.Int("commit.records")
	errs = append(errs, err)
	o.commitBytes, err = cfg.Size("commit.bytes")
	errs = append(errs, err)
	o.targetFileSize, err = cfg.Size("target.file.size")
	errs = append(errs, err)
	o.metadata, err = cfg.Bool("metadata.columns")
	errs = append(errs, err)
	o.offsetsFromTbl, err = cfg.Bool("offsets.from.table")
	errs = append(errs, err)
	o.compactInterval, err = cfg.Duration("compact.interval")
	errs = append(errs, err)
	minFiles, err := cfg.Int("compact.min.files")
	errs = append(errs, err)
	o.compactMinFiles = int(min(max(minFiles, 0), 1<<20))
	o.expireInterval, err = cfg.Duration("expire.interval")
	errs = append(errs, err)
	o.expireOlder, err = cfg.Duration("expire.older.than")
	errs = append(errs, err)
	retain, err := cfg.Int("expire.retain.last")
	errs = append(errs, err)
	o.expireRetain = int(min(max(retain, 0), 1<<30))
	if err := errors.Join(errs...); err != nil {
		return nil, cc, err
	}
	// List parameters are read whole: their items may hold commas.
	if v := str("partition"); v != "" {
		if o.partition, err = parsePartition(v); err != nil {
			return nil, cc, connect.FieldError{Param: "partition", Message: err.Error()}
		}
	}
	if v := str("schema"); v != "" {
		cols, err := parseSchema(v)
		if err != nil {
			return nil, cc, connect.FieldError{Param: "schema", Message: err.Error()}
		}
		o.pinned = map[string]pinnedColumn{}
		for _, c := range cols {
			o.pinned[c.name] = c
		}
	}
	if o.commitRecords <= 0 {
		return nil, cc, connect.FieldError{Param: "commit.records", Message: "must be positive"}
	}
	if o.commitInterval <= 0 {
		return nil, cc, connect.FieldError{Param: "commit.interval", Message: "must be positive"}
	}
	if o.compactInterval < 0 {
		return nil, cc, connect.FieldError{Param: "compact.interval", Message: "must be 0 (never) or positive"}
	}
	if minFiles < 2 {
		return nil, cc, connect.FieldError{Param: "compact.min.files", Message: "must be at least 2"}
	}
	if o.expireInterval < 0 {
		return nil, cc, connect.FieldError{Param: "expire.interval", Message: "must be 0 (never) or positive"}
	}
	if o.expireOlder < 0 {
		return nil, cc, connect.FieldError{Param: "expire.older.than", Message: "must not be negative"}
	}
	if retain < 1 {
		return nil, cc, connect.FieldError{Param: "expire.retain.last", Message: "must be at least 1: the newest snapshot holds the offsets the sink resumes from"}
	}
	if o.targetFileSize < 1<<20 {
		return nil, cc, connect.FieldError{Param: "target.file.size", Message: "must be at least 1MiB"}
	}
	if !strings.Contains(o.template, ".") {
		return nil, cc, connect.FieldError{Param: "table", Message: fmt.Sprintf("%q has no namespace: write namespace.table, e.g. lake.{table}", o.template)}
	}
	if o.mode == modeUpsert {
		for _, c := range o.keyColumns {
			if p, ok := o.pinned[c]; ok && (p.typ.Type() == "float" || p.typ.Type() == "double") {
				return nil, cc, connect.FieldError{Param: "key.columns", Message: fmt.Sprintf("key column %s is %s: Iceberg identifier fields cannot be floating point", c, p.typ)}
			}
		}
	} else if len(o.keyColumns) > 0 {
		return nil, cc, connect.FieldError{Param: "key.columns", Message: "only used in upsert mode; set mode: upsert or drop it"}
	}
	if o.metadata {
		for _, n := range []string{"topic", "partition", "offset", "timestamp", "op"} {
			o.metaNames = append(o.metaNames, o.prefix+n)
		}
	}
	id := cfg.Connector
	if cfg.Pipeline != "" {
		id = cfg.Pipeline + "." + cfg.Connector
	}
	o.offsetsKey = offsetsPrefix + id
	o.log = slog.Default()
	return o, cc, nil
}

// open parses a sink's settings and opens its catalog. A configuration
// error is returned as is; a catalog that cannot be reached as retryable.
func open(ctx context.Context, cfg connect.Config) (*options, catalog.Catalog, error) {
	o, cc, err := parseOptions(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	if cc.typ == catalogSQL {
		if cc.warehouse, err = resolveWarehouse(cc.warehouse); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
	}
	cat, err := openCatalog(ctx, cc)
	if err != nil {
		return nil, nil, connect.Retryable(err)
	}
	return o, cat, nil
}

// nameKey is what a table name depends on.
type nameKey struct{ topic, namespace, table string }

// Sink writes records into Iceberg tables. Make one with
// Connector().NewSink or new(Sink).
type Sink struct {
	o      *options
	cat    catalog.Catalog
	tables map[string]*tableWriter
	names  map[nameKey]string // table names by topic and source block
	seen   map[tp]int64       // the highest offset buffered or skipped, per topic-partition read (see origin)
	// pending counts buffered records over all tables, pendingBytes
	// their keys' and values' bytes.
	pending      int64
	pendingBytes int64
	lastCommit   time.Time
	// failed is set when a commit failed: whether it landed is unknown, so
	// the task must restart and read the table's offsets again.
	failed error

	// For Report, read concurrently.
	stats struct {
		pending   atomic.Int64
		committed atomic.Int64
		skipped   atomic.Int64 // records the tables already held
		commits   atomic.Int64
		tables    atomic.Int64
		expired   atomic.Int64
		// compactedFiles are data files compaction replaced;
		// compactionFiles the files it wrote.
		compactedFiles, compactionFiles atomic.Int64
	}
	mu       sync.Mutex        // guards warnings
	warnings map[string]string // by table: the last upkeep failure

	// log is where the sink logs; Open sets slog.Default() when a test
	// has not set another.
	log *slog.Logger
}

var (
	_ connect.Sink     = (*Sink)(nil)
	_ connect.Flusher  = (*Sink)(nil)
	_ connect.Reporter = (*Sink)(nil)
)

// Open parses the settings and opens the catalog.
func (s *Sink) Open(ctx context.Context, cfg connect.Config) error {
	o, cat, err := open(ctx, cfg)
	if err != nil {
		return fmt.Errorf("iceberg sink: %w", err)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	o.log = s.log.With("connector", Name, "pipeline", cfg.Pipeline, "sink", cfg.Connector)
	s.o, s.cat = o, cat
	s.tables = map[string]*tableWriter{}
	s.names = map[nameKey]string{}
	s.seen = map[tp]int64{}
	s.warnings = map[string]string{}
	s.lastCommit = time.Now()
	return nil
}

// Write validates and buffers the records; it commits when commit.records
// records or commit.bytes are buffered, or commit.interval has passed since
// the last commit.
// A record that cannot be written (not JSON, a type Iceberg cannot change
// the column to, a missing key) is reported with BadRecordAt; the records
// before it stay buffered.
func (s *Sink) Write(ctx context.Context, records []connect.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.cat == nil {
		return errors.New("iceberg sink: write to a sink that is not open")
	}
	if s.failed != nil {
		return s.failed
	}
	for i := range records {
		r := &records[i]
		k, off := origin(r)
		if last, ok := s.seen[k]; ok && off <= last {
			continue // buffered by an earlier call (a retried batch)
		}
		if err := s.add(ctx, r); err != nil {
			if connect.IsBadRecord(err) {
				bad := fmt.Errorf("iceberg sink: record %s/%d@%d: %w", k.topic, k.partition, off, err)
				if !connect.IsRetryable(err) {
					// What the record holds does not change: without a
					// dead-letter topic the task stays FAILED.
					bad = connect.Permanent(bad)
				}
				return connect.BadRecordAt(i, bad)
			}
			return fmt.Errorf("iceberg sink: record %s/%d@%d: %w", k.topic, k.partition, off, err)
		}
		s.seen[k] = off
	}
	s.stats.pending.Store(s.pending)
	if s.pending >= s.o.commitRecords || s.pendingBytes >= s.o.commitBytes || (s.pending > 0 && time.Since(s.lastCommit) >= s.o.commitInterval) {
		return s.commit(ctx)
	}
	return nil
}

func (s *Sink) add(ctx context.Context, r *connect.Record) error {
	ev, err := decodeRecord(r)
	if err != nil {
		return connect.BadRecord(err)
	}
	nk := nameKey{r.Topic, ev.namespace, ev.table}
	name, ok := s.names[nk]
	if !ok {
		name = tableName(s.o.template, r.Topic, &ev)
		s.names[nk] = name
	}
	w, ok := s.tables[name]
	if !ok {
		if w, err = loadTable(ctx, s.o, s.cat, name); err != nil {
			return err
		}
		s.tables[name] = w
		s.stats.tables.Store(int64(len(s.tables)))
	}
	before, skipped := w.count, w.nskipped
	if err := w.add(ctx, r, &ev); err != nil {
		return err
	}
	if added := w.count - before; added > 0 {
		s.pending += int64(added)
		s.pendingBytes += int64(len(r.Key) + len(r.Value))
	}
	s.stats.skipped.Add(w.nskipped - skipped)
	return nil
}

// Flush commits every table with buffered records, each in one snapshot
// that stores the log offsets it covers.
func (s *Sink) Flush(ctx context.Context) error {
	if s.cat == nil {
		return errors.New("iceberg sink: flush of a sink that is not open")
	}
	if s.failed != nil {
		return s.failed
	}
	return s.commit(ctx)
}

func (s *Sink) commit(ctx context.Context) error {
	names := make([]string, 0, len(s.tables))
	for n, w := range s.tables {
		if w.count > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w := s.tables[n]
		count := w.count
		if err := w.commit(ctx); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (interrupted)", err)
			}
			s.failed = fmt.Errorf("iceberg sink: %w; the task restarts and resumes after the offsets the table holds", err)
			return s.failed
		}
		s.pending -= int64(count)
		s.stats.committed.Add(int64(count))
		s.stats.commits.Add(1)
		s.maintain(ctx, w)
	}
	s.pendingBytes = 0 // every table with records is committed
	s.lastCommit = time.Now()
	s.stats.pending.Store(s.pending)
	return nil
}

// maintain compacts the table when compact.interval has passed since
// this task last compacted it, and expires its old snapshots when
// expire.interval has passed since it last expired them (the clocks start
// at the task's first commit to the table). It runs after a commit, in
// the task, so it never races the sink's own commits. A failure does not
// fail the task: no data changes, and the next interval tries again; it
// shows as a warning in the task's status.
func (s *Sink) maintain(ctx context.Context, w *tableWriter) {
	now := time.Now()
	due := func(last *time.Time, every time.Duration) bool {
		switch {
		case every == 0:
			return false
		case last.IsZero():
			*last = now
			return false
		case now.Sub(*last) < every:
			return false
		}
		*last = now
		return true
	}
	var errs []error
	if due(&w.lastCompact, s.o.compactInterval) {
		removed, added, err := w.compact(ctx)
		errs = append(errs, err)
		s.stats.compactedFiles.Add(int64(removed))
		s.stats.compactionFiles.Add(int64(added))
	}
	if due(&w.lastExpiry, s.o.expireInterval) {
		n, err := w.expire(ctx)
		errs = append(errs, err)
		s.stats.expired.Add(int64(n))
	}
	err := errors.Join(errs...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.warnings[w.name] = fmt.Sprintf("upkeep of table %s failed (tried again after the next interval): %v", w.name, err)
	} else if len(errs) > 0 {
		delete(s.warnings, w.name)
	}
}

// Close closes the catalog. Buffered records that no Flush committed are
// dropped: the worker did not commit their offsets, and writes them again.
func (s *Sink) Close(context.Context) error {
	if s.cat == nil {
		return nil
	}
	var err error
	if c, ok := s.cat.(catalog.Closer); ok {
		err = c.Close()
	}
	s.cat, s.tables = nil, nil
	if err != nil {
		return fmt.Errorf("iceberg sink: close catalog: %w", err)
	}
	return nil
}

// Report shows buffered and committed records, upkeep, and upkeep failures.
func (s *Sink) Report() connect.Report {
	r := connect.Report{Gauges: map[string]float64{
		"iceberg_pending_records":         float64(s.stats.pending.Load()),
		"iceberg_committed_records":       float64(s.stats.committed.Load()),
		"iceberg_skipped_records":         float64(s.stats.skipped.Load()),
		"iceberg_commits":                 float64(s.stats.commits.Load()),
		"iceberg_tables":                  float64(s.stats.tables.Load()),
		"iceberg_expired_snapshots":       float64(s.stats.expired.Load()),
		"iceberg_compacted_files":         float64(s.stats.compactedFiles.Load()),
		"iceberg_compaction_output_files": float64(s.stats.compactionFiles.Load()),
	}}
	s.mu.Lock()
	for _, w := range s.warnings {
		r.Warnings = append(r.Warnings, w)
	}
	s.mu.Unlock()
	sort.Strings(r.Warnings)
	return r
}
