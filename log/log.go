package log

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options configure a Log. The zero value of every field but Dir is a
// sensible default.
type Options struct {
	// Dir is the data directory. One process at a time may open it.
	Dir string
	// NumPartitions is the partition count of auto-created topics (Kafka's
	// num.partitions). Default 1.
	NumPartitions int
	// MaxPartitions is the most partitions a topic may have (default
	// DefaultMaxPartitions). Creating or growing a topic past it is refused
	// with ErrInvalidPartitions: every open partition holds at least three
	// file descriptors and a goroutine, so one careless request could
	// otherwise make the data directory impossible to open.
	MaxPartitions int
	// DisableAutoCreate refuses appends to unknown topics instead of creating
	// them (Kafka's auto.create.topics.enable=false).
	DisableAutoCreate bool
	// TopicDefaults are topic configs that apply to every topic without its
	// own override (like a broker's log.* settings), by topic config name.
	TopicDefaults map[string]string
	// FlushInterval, when positive, trades durability for latency: appends
	// are acknowledged once written to the OS and fsync'ed every interval.
	// Zero (the default) fsyncs before every acknowledgement, with group
	// commit.
	FlushInterval time.Duration
	// RetentionCheckInterval is how often retention runs (Kafka's
	// log.retention.check.interval.ms). Default 5 minutes.
	RetentionCheckInterval time.Duration
	// CleanerInterval is how often compacted topics are checked for
	// cleaning. Default 15 seconds.
	CleanerInterval time.Duration
	// ProducerIDExpiration is how long a partition keeps the state of an
	// idempotent producer that appends nothing to it (Kafka's
	// producer.id.expiration.ms): after that, a retry of its last batch
	// would be appended again. Default DefaultProducerIDExpiration (1 day).
	ProducerIDExpiration time.Duration
	// ProducerIDExpirationCheckInterval is how often producers idle for
	// ProducerIDExpiration are looked for (Kafka's
	// producer.id.expiration.check.interval.ms). Default 10 minutes.
	ProducerIDExpirationCheckInterval time.Duration
	// Logger receives recovery, retention and compaction events. Default:
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock (tests set it). Default time.Now.
	Now func() time.Time
	// TailCacheBytes bounds the newest appended batches kept in memory for
	// readers close behind the writers (see tailCache). Zero means 64 MiB;
	// negative turns the cache off.
	TailCacheBytes int
	// StartWriteback asks the kernel to start writing each append's bytes
	// to the disk as soon as they are written (Linux sync_file_range with
	// SYNC_FILE_RANGE_WRITE), so that the fsync after it has less left to
	// wait for. It changes nothing about durability. Off by default.
	StartWriteback bool
}

// Log is the built-in partition log: topics of partitions of record batches
// in a data directory. It is safe for concurrent use.
type Log struct {
	opts     Options
	logger   *slog.Logger
	now      func() time.Time
	lock     *dirLock
	metrics  Metrics
	defaults map[string]string

	// mu guards topics, meta and the topics' partition slices and
	// overrides. Lock order: Log.mu, then partition.mu, then pidMu.
	mu     sync.RWMutex
	topics map[string]*topic
	meta   metaFile
	closed bool
	// unopened are the topics of meta.json with more partitions than
	// MaxPartitions (an older version wrote meta.json before creating
	// them): Open leaves them closed, so that the data directory opens,
	// and DeleteTopic can remove them.
	unopened map[string]topicMeta

	pidMu sync.Mutex // guards meta.NextProducerID and meta.ProducerIDBlockEnd

	groups *Groups
	cache  *tailCache // nil when off

	bgCancel context.CancelFunc
	bgDone   sync.WaitGroup
}

type topic struct {
	name      string
	id        string
	overrides map[string]string
	cfg       atomic.Pointer[TopicConfig]
	parts     []*partition // guarded by Log.mu
	sticky    atomic.Uint32
}

func (t *topic) config() TopicConfig { return *t.cfg.Load() }

// metaFile is meta.json at the top of the data directory: the topics and the
// producer id allocator. It is rewritten atomically on every change.
type metaFile struct {
	Version            int                  `json:"version"`
	ClusterID          string               `json:"cluster_id"`
	Topics             map[string]topicMeta `json:"topics"`
	NextProducerID     int64                `json:"-"`
	ProducerIDBlockEnd int64                `json:"producer_id_block_end"`
}

type topicMeta struct {
	ID         string            `json:"id"`
	Partitions int               `json:"partitions"`
	Config     map[string]string `json:"config,omitempty"`
}

// DefaultProducerIDExpiration is the default of
// Options.ProducerIDExpiration, Kafka's producer.id.expiration.ms default.
const DefaultProducerIDExpiration = 24 * time.Hour

// DefaultMaxPartitions is the default of Options.MaxPartitions. Kafka has no
// hard limit, but advises a few thousand partitions per broker in all.
const DefaultMaxPartitions = 1000

// ErrTooManyPartitions refuses a topic with more partitions than
// Options.MaxPartitions. It wraps ErrInvalidPartitions.
var ErrTooManyPartitions = fmt.Errorf("%w: too many partitions", ErrInvalidPartitions)

const (
	metaFileName        = "meta.json"
	producerIDBlockSize = 1000
	maxTopicNameLength  = 249
)

var topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// ValidateTopicName checks a name against Kafka's rules.
func ValidateTopicName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidTopicName, name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: %q is longer than %d characters", ErrInvalidTopicName, name, maxTopicNameLength)
	case !topicNameRE.MatchString(name):
		return fmt.Errorf("%w: %q may only contain letters, digits, '.', '_' and '-'", ErrInvalidTopicName, name)
	}
	return nil
}

// Open opens or creates the log in opts.Dir, recovering every partition.
func Open(opts Options) (*Log, error) {
	if opts.Dir == "" {
		return nil, errors.New("open log: no data directory given")
	}
	if opts.NumPartitions <= 0 {
		opts.NumPartitions = 1
	}
	if opts.MaxPartitions <= 0 {
		opts.MaxPartitions = DefaultMaxPartitions
	}
	if opts.NumPartitions > opts.MaxPartitions {
		return nil, fmt.Errorf("open log: %w: %d partitions for auto-created topics: at most %d", ErrInvalidPartitions, opts.NumPartitions, opts.MaxPartitions)
	}
	if opts.RetentionCheckInterval <= 0 {
		opts.RetentionCheckInterval = 5 * time.Minute
	}
	if opts.CleanerInterval <= 0 {
		opts.CleanerInterval = 15 * time.Second
	}
	if opts.ProducerIDExpiration <= 0 {
		opts.ProducerIDExpiration = DefaultProducerIDExpiration
	}
	if opts.ProducerIDExpirationCheckInterval <= 0 {
		opts.ProducerIDExpirationCheckInterval = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := ValidateConfig(opts.TopicDefaults); err != nil {
		return nil, fmt.Errorf("open log: topic defaults: %w", err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", opts.Dir, err)
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	cacheBytes := opts.TailCacheBytes
	if cacheBytes == 0 {
		cacheBytes = defaultTailCacheBytes
	}
	l := &Log{
		opts: opts, logger: opts.Logger, now: opts.Now, lock: lock,
		defaults: opts.TopicDefaults, topics: map[string]*topic{}, unopened: map[string]topicMeta{},
		cache: newTailCache(cacheBytes),
	}
	if err := l.load(); err != nil {
		l.closeTopics()
		lock.unlock()
		return nil, err
	}
	l.groups = newGroups(l)
	if err := l.groups.load(); err != nil {
		l.closeTopics()
		lock.unlock()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.bgCancel = cancel
	l.bgDone.Add(1)
	go l.backgroundLoop(ctx)
	return l, nil
}

func (l *Log) load() error {
	path := filepath.Join(l.opts.Dir, metaFileName)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.meta = metaFile{Version: 1, ClusterID: newID(), Topics: map[string]topicMeta{}}
		if err := l.writeMeta(); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(data, &l.meta); err != nil {
			return fmt.Errorf("parse %s: %w (restore it from a backup; the partition directories are intact)", path, err)
		}
		if l.meta.Version != 1 {
			return fmt.Errorf("%s has version %d; this build reads version 1", path, l.meta.Version)
		}
		if l.meta.Topics == nil {
			l.meta.Topics = map[string]topicMeta{}
		}
	}
	// Producer ids handed out before a crash may be anywhere in the last
	// block: start the next block past it.
	l.meta.NextProducerID = l.meta.ProducerIDBlockEnd
	if err := l.removeDeletedDirs(); err != nil {
		return err
	}
	names := make([]string, 0, len(l.meta.Topics))
	for n := range l.meta.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		tm := l.meta.Topics[n]
		if tm.Partitions > l.opts.MaxPartitions {
			l.logger.Error("topic not opened: it has more partitions than the limit; raise the limit (TRIBUTARY_MAX_PARTITIONS for the tributary command) or delete it (tributary topics delete NAME)",
				"topic", n, "partitions", tm.Partitions, "limit", l.opts.MaxPartitions)
			l.unopened[n] = tm
			continue
		}
		if _, err := l.openTopic(n, tm); err != nil {
			return err
		}
	}
	return nil
}

// removeDeletedDirs finishes topic deletions a crash interrupted.
func (l *Log) removeDeletedDirs() error {
	entries, err := os.ReadDir(l.opts.Dir)
	if err != nil {
		return fmt.Errorf("read data dir %s: %w", l.opts.Dir, err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), "-delete") {
			if err := os.RemoveAll(filepath.Join(l.opts.Dir, e.Name())); err != nil {
				return fmt.Errorf("remove deleted topic dir %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

func (l *Log) openTopic(name string, tm topicMeta) (*topic, error) {
	t := &topic{name: name, id: tm.ID, overrides: tm.Config}
	cfg := parseTopicConfig(l.defaults, tm.Config)
	t.cfg.Store(&cfg)
	for i := 0; i < tm.Partitions; i++ {
		p, err := openPartition(l, name, int32(i), t.config)
		if err != nil {
			for _, q := range t.parts {
				q.close()
			}
			return nil, fmt.Errorf("open topic %s (%d partitions): %w", name, tm.Partitions, withFileLimitHint(err))
		}
		t.parts = append(t.parts, p)
	}
	l.topics[name] = t
	return t, nil
}

func (l *Log) writeMeta() error {
	data, err := json.MarshalIndent(l.meta, "", "  ")
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	return writeFileAtomic(filepath.Join(l.opts.Dir, metaFileName), data)
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ClusterID returns the id this data directory was given when it was created.
func (l *Log) ClusterID() string { return l.meta.ClusterID }

// AutoCreate reports whether appends to unknown topics create them.
func (l *Log) AutoCreate() bool { return !l.opts.DisableAutoCreate }

// DefaultPartitionsOf is the partition count a topic gets when it is
// auto-created or created without a count: one for the worker's topics
// (isWorkerTopic), else the log's default (Options.NumPartitions).
func (l *Log) DefaultPartitionsOf(name string) int {
	if isWorkerTopic(name) {
		return 1
	}
	return l.opts.NumPartitions
}

// Dir returns the data directory.
func (l *Log) Dir() string { return l.opts.Dir }

// Metrics returns the log's live counters.
func (l *Log) Metrics() *Metrics { return &l.metrics }

// Groups returns the consumer group coordinator.
func (l *Log) Groups() *Groups { return l.groups }

// CreateTopic creates a topic with partitions partitions and config
// overrides. Unknown config names and bad values are refused.
func (l *Log) CreateTopic(name string, partitions int, config map[string]string) error {
	if err := refuseOffsetsTopic(name); err != nil {
		return err
	}
	return l.createTopic(name, partitions, config)
}

// CheckCreateTopic runs the checks of CreateTopic without creating the
// topic (Kafka's CreateTopics with validate_only): a name taken by an open
// topic or by one Open left closed, too many partitions, bad configs.
func (l *Log) CheckCreateTopic(name string, partitions int, config map[string]string) error {
	if err := refuseOffsetsTopic(name); err != nil {
		return err
	}
	if err := validateNewTopic(name, partitions, config); err != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.checkCreateTopicLocked(name, partitions)
}

// refuseOffsetsTopic refuses to create the committed offsets topic: it is
// made by the first offset commit, compacted, with the partition count the
// groups rely on; one made otherwise (a client's CreateTopics, an
// auto-create) would lose commits to retention.
func refuseOffsetsTopic(name string) error {
	if name == OffsetsTopic {
		return fmt.Errorf("%w: %s is the log's own topic of committed offsets; it is created by the first commit of a consumer group", ErrInternalTopic, name)
	}
	return nil
}

// createTopic is CreateTopic without the refusal of the log's own topic.
func (l *Log) createTopic(name string, partitions int, config map[string]string) error {
	if err := validateNewTopic(name, partitions, config); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.createTopicLocked(name, partitions, config)
}

// validateNewTopic checks what a new topic asks for, before any lock.
func validateNewTopic(name string, partitions int, config map[string]string) error {
	if err := ValidateTopicName(name); err != nil {
		return err
	}
	if partitions <= 0 {
		return fmt.Errorf("%w: create topic %s with %d partitions: need at least 1", ErrInvalidPartitions, name, partitions)
	}
	if isWorkerTopic(name) && partitions != 1 {
		return fmt.Errorf("%w: create topic %s with %d partitions: the worker's topics (_tributary.*) have exactly one, and this log can neither shrink nor delete them later; create it with one partition and cleanup.policy=compact, or let the worker create it",
			ErrInvalidPartitions, name, partitions)
	}
	if err := ValidateConfig(config); err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

// checkCreateTopicLocked refuses a name that is taken, by an open topic or
// by one Open left closed (its message says how to open it), and a
// partition count over the limit. The caller holds l.mu.
func (l *Log) checkCreateTopicLocked(name string, partitions int) error {
	if l.closed {
		return ErrClosed
	}
	if _, ok := l.topics[name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	if _, ok := l.unopened[name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, l.unknownTopicLocked(name))
	}
	return l.checkPartitionCount(name, partitions)
}

func (l *Log) createTopicLocked(name string, partitions int, config map[string]string) error {
	if err := l.checkCreateTopicLocked(name, partitions); err != nil {
		return err
	}
	cfg := map[string]string{}
	for k, v := range config {
		cfg[k] = v
	}
	tm := topicMeta{ID: newID(), Partitions: partitions, Config: cfg}
	// The partitions first, meta.json last: the topic exists once meta.json
	// says so, and a create that fails before leaves nothing behind.
	t := &topic{name: name, id: tm.ID, overrides: tm.Config}
	tcfg := parseTopicConfig(l.defaults, tm.Config)
	t.cfg.Store(&tcfg)
	parts, err := l.createPartitions(name, 0, partitions, t.config)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	t.parts = parts
	l.meta.Topics[name] = tm
	if err := l.writeMeta(); err != nil {
		delete(l.meta.Topics, name)
		l.discardPartitions(parts)
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	l.topics[name] = t
	l.logger.Info("created topic", "topic", name, "partitions", partitions)
	return nil
}

// checkPartitionCount refuses partition counts above the limit (see
// Options.MaxPartitions).
func (l *Log) checkPartitionCount(name string, partitions int) error {
	if limit := l.opts.MaxPartitions; partitions > limit {
		return fmt.Errorf("%w: topic %s with %d partitions: at most %d per topic (each partition keeps at least 3 files open and its own fsync goroutine; this limit protects the data directory)",
			ErrTooManyPartitions, name, partitions, limit)
	}
	return nil
}

// createPartitions creates partitions from..to-1 of a topic, each in a new,
// empty directory: a directory left from an earlier topic of the same name
// (a deletion interrupted by a crash, or a create that failed before it
// wrote meta.json) belongs to no topic and is removed first, so a new topic
// never inherits data. On an error the partitions created are closed and
// removed again. The caller holds l.mu.
func (l *Log) createPartitions(name string, from, to int, cfg func() TopicConfig) ([]*partition, error) {
	var parts []*partition
	for i := from; i < to; i++ {
		dir := partitionDir(l.opts.Dir, name, int32(i))
		if err := l.removeStrayDir(dir); err != nil {
			l.discardPartitions(parts)
			return nil, err
		}
		p, err := openPartition(l, name, int32(i), cfg)
		if err != nil {
			l.discardPartitions(parts)
			_ = os.RemoveAll(dir)
			return nil, withFileLimitHint(err)
		}
		parts = append(parts, p)
	}
	if err := syncDir(l.opts.Dir); err != nil {
		l.discardPartitions(parts)
		return nil, err
	}
	return parts, nil
}

// removeStrayDir removes a partition directory that no topic owns.
func (l *Log) removeStrayDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check partition dir %s: %w", dir, err)
	}
	l.logger.Warn("removing a partition directory that belongs to no topic (left by an interrupted delete or create)", "dir", dir)
	gone := dir + "." + newID() + "-delete"
	if err := os.Rename(dir, gone); err != nil {
		return fmt.Errorf("remove stray partition dir %s: %w", dir, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove stray partition dir %s: %w", dir, err)
	}
	return nil
}

// discardPartitions closes partitions no topic owns yet and removes their
// directories.
func (l *Log) discardPartitions(parts []*partition) {
	for _, p := range parts {
		if err := p.close(); err != nil {
			l.logger.Warn("close discarded partition", "partition", p.String(), "error", err)
		}
		if err := os.RemoveAll(p.dir); err != nil {
			l.logger.Warn("remove discarded partition", "dir", p.dir, "error", err)
		}
	}
}

// withFileLimitHint explains running out of file descriptors.
func withFileLimitHint(err error) error {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		return fmt.Errorf("%w (every partition keeps at least 3 files open: raise the open files limit, e.g. `ulimit -n` or LimitNOFILE= in a systemd unit, or delete topics you do not need)", err)
	}
	return err
}

// IsInternalTopic reports whether a topic holds the log's or the worker's
// own state: __consumer_offsets (the groups' committed offsets) and the
// topics named _tributary.* (the worker's source positions, ...). They
// cannot be deleted, as Kafka refuses to delete its internal topics.
func IsInternalTopic(name string) bool {
	return name == OffsetsTopic || strings.HasPrefix(name, "_tributary.")
}

// isWorkerTopic reports whether a topic is one of the worker's (named
// _tributary.*: its sources' positions, its connectors' target states,
// its sources' leases). Each has exactly one partition: the worker reads
// the order of its records across keys (which record of a connector's
// name is the newest), which only a partition keeps, and refuses to start
// on one with more. As the log can neither shrink nor delete such a topic,
// it refuses to create one with more (see validateNewTopic).
func isWorkerTopic(name string) bool { return strings.HasPrefix(name, "_tributary.") }

// DeleteTopic removes a topic and its data, and every consumer group's
// committed offsets of it (as Kafka does). It is all or nothing: the topic
// is gone once meta.json no longer lists it, and its partitions are closed
// and their directories moved aside before another call can see the name
// again, so an append racing with the deletion either lands before it (and
// is deleted with the topic) or fails with ErrUnknownTopic, or, with
// auto-creation, creates a new, empty topic. Removing the moved
// directories' files happens last, without the lock; a crash during it is
// finished by the next Open.
func (l *Log) DeleteTopic(name string) error {
	if IsInternalTopic(name) {
		return fmt.Errorf("%w: %s holds committed offsets or source positions and cannot be deleted (deleting it would make every group and source start over)", ErrInternalTopic, name)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if _, ok := l.unopened[name]; ok {
		err := l.deleteUnopenedLocked(name)
		l.mu.Unlock()
		if err == nil {
			l.groups.forgetTopic(name)
		}
		return err
	}
	t, ok := l.topics[name]
	if !ok {
		l.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	tm := l.meta.Topics[name]
	delete(l.meta.Topics, name)
	if err := l.writeMeta(); err != nil {
		l.meta.Topics[name] = tm
		l.mu.Unlock()
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	delete(l.topics, name)
	var gone []string
	for _, p := range t.parts {
		// The data goes: a failure to seal it does not matter.
		if err := p.close(); err != nil {
			l.logger.Warn("close partition of deleted topic", "partition", p.String(), "error", err)
		}
		g := p.dir + "." + t.id + "-delete"
		p.removeMu.Lock() // a pass deleting files by path finishes first; later ones skip
		p.moved = true
		err := os.Rename(p.dir, g)
		p.removeMu.Unlock()
		if err != nil {
			// The directory stays behind, owned by no topic: a topic created
			// under this name later removes it first (createPartitions).
			l.logger.Error("move aside partition dir of deleted topic", "dir", p.dir, "error", err)
			continue
		}
		gone = append(gone, g)
	}
	if err := syncDir(l.opts.Dir); err != nil {
		l.logger.Warn("sync data dir after deleting topic", "topic", name, "error", err)
	}
	l.mu.Unlock()
	for _, g := range gone {
		if err := os.RemoveAll(g); err != nil {
			l.logger.Warn("remove deleted partition dir (the next start retries)", "dir", g, "error", err)
		}
	}
	l.groups.forgetTopic(name)
	l.logger.Info("deleted topic", "topic", name)
	return nil
}

// deleteUnopenedLocked deletes a topic Open left closed: from meta.json,
// then every partition directory of its name (there may be far fewer than
// meta.json claimed). Nothing else can see the topic, so it runs entirely
// under l.mu.
func (l *Log) deleteUnopenedLocked(name string) error {
	tm := l.unopened[name]
	delete(l.meta.Topics, name)
	if err := l.writeMeta(); err != nil {
		l.meta.Topics[name] = tm
		return fmt.Errorf("delete topic %s: %w", name, err)
	}
	delete(l.unopened, name)
	entries, err := os.ReadDir(l.opts.Dir)
	if err != nil {
		return fmt.Errorf("delete topic %s: read data dir: %w", name, err)
	}
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), name+"-")
		if !e.IsDir() || !ok || strings.TrimLeft(rest, "0123456789") != "" || rest == "" {
			continue
		}
		dir := filepath.Join(l.opts.Dir, e.Name())
		gone := dir + "." + tm.ID + "-delete"
		if err := os.Rename(dir, gone); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(gone); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The topic is gone; leftovers are removed by a later create of the
		// name or, once moved aside, by the next Open.
		l.logger.Warn("remove partition dirs of deleted topic", "topic", name, "error", errors.Join(errs...))
	}
	l.logger.Info("deleted topic", "topic", name)
	return nil
}

// TopicDescription describes a topic.
type TopicDescription struct {
	Name       string
	ID         string
	Partitions []PartitionStats
	// Overrides are the configs set on the topic itself; Config is every
	// effective value (overrides over log defaults over Kafka's defaults).
	Overrides map[string]string
	Config    map[string]string
}

// ListTopics returns the names of the open topics, sorted: those that can
// be read and written. NotOpenedTopics lists the others.
func (l *Log) ListTopics() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := make([]string, 0, len(l.topics))
	for n := range l.topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NotOpenedTopics returns the topics of the data directory that Open left
// closed because they have more partitions than Options.MaxPartitions,
// sorted by name: each says why, as its lookups do (see TopicNotOpenedError).
func (l *Log) NotOpenedTopics() []TopicNotOpenedError {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]TopicNotOpenedError, 0, len(l.unopened))
	for n, tm := range l.unopened {
		out = append(out, TopicNotOpenedError{Topic: n, ID: tm.ID, Partitions: tm.Partitions, Limit: l.opts.MaxPartitions})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// TopicID returns the id of a topic (see TopicDescription.ID) without the
// rest of DescribeTopic: a topic deleted and created again under its name
// has another id.
func (l *Log) TopicID(name string) (string, error) {
	t, err := l.topic(name)
	if err != nil {
		return "", err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return t.id, nil
}

// DescribeTopic returns a topic's partitions and configs.
func (l *Log) DescribeTopic(name string) (TopicDescription, error) {
	t, err := l.topic(name)
	if err != nil {
		return TopicDescription{}, err
	}
	l.mu.RLock()
	d := l.describeConfig(name, t.id, t.overrides)
	parts := t.parts
	l.mu.RUnlock()
	for _, p := range parts {
		p.mu.Lock()
		st := PartitionStats{Topic: name, Partition: p.id, LogStartOffset: p.logStart, LogEndOffset: p.visible, Segments: len(p.segments)}
		for _, s := range p.segments {
			st.Size += s.size
		}
		p.mu.Unlock()
		d.Partitions = append(d.Partitions, st)
	}
	return d, nil
}

// DescribeTopicConfig returns a topic's id and configs, as DescribeTopic
// does but without its partitions (Partitions is nil), for an open topic
// and for one Open left closed (NotOpenedTopics): the configs stored for
// it, read without opening it, as Kafka describes the configs of a topic
// whose partitions are offline.
func (l *Log) DescribeTopicConfig(name string) (TopicDescription, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return TopicDescription{}, ErrClosed
	}
	if t, ok := l.topics[name]; ok {
		return l.describeConfig(name, t.id, t.overrides), nil
	}
	if tm, ok := l.unopened[name]; ok {
		return l.describeConfig(name, tm.ID, tm.Config), nil
	}
	return TopicDescription{}, l.unknownTopicLocked(name)
}

// describeConfig is a TopicDescription without partitions: a copy of the
// overrides and every effective value (overrides over the log's defaults
// over Kafka's). The caller holds l.mu, which guards overrides.
func (l *Log) describeConfig(name, id string, overrides map[string]string) TopicDescription {
	d := TopicDescription{Name: name, ID: id, Overrides: map[string]string{}, Config: map[string]string{}}
	for k, v := range overrides {
		d.Overrides[k] = v
	}
	for _, n := range ConfigNames() {
		v, ok := d.Overrides[n]
		if !ok {
			if v, ok = l.defaults[n]; !ok {
				v, _ = ConfigDefault(n)
			}
		}
		d.Config[n] = v
	}
	return d
}

// CreatePartitions grows a topic to total partitions. Partitions never
// shrink. Like CreateTopic it is all or nothing: the new partitions exist
// before meta.json counts them, and are removed again when that fails.
func (l *Log) CreatePartitions(name string, total int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, err := l.checkCreatePartitionsLocked(name, total)
	if err != nil {
		return err
	}
	have := len(t.parts)
	added, err := l.createPartitions(name, have, total, t.config)
	if err != nil {
		return fmt.Errorf("add partitions to %s: %w", name, err)
	}
	tm := l.meta.Topics[name]
	tm.Partitions = total
	l.meta.Topics[name] = tm
	if err := l.writeMeta(); err != nil {
		tm.Partitions = have
		l.meta.Topics[name] = tm
		l.discardPartitions(added)
		return fmt.Errorf("add partitions to %s: %w", name, err)
	}
	t.parts = append(append([]*partition(nil), t.parts...), added...)
	return nil
}

// CheckCreatePartitions reports the error CreatePartitions(name, total)
// would return for its request, without changing anything: the checks of
// a validate-only request (Kafka's CreatePartitions with validate_only).
// The answer holds for the log as it is now; a concurrent change of the
// topic may make the real call answer otherwise.
func (l *Log) CheckCreatePartitions(name string, total int) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, err := l.checkCreatePartitionsLocked(name, total)
	return err
}

// checkCreatePartitionsLocked checks a request to grow a topic to total
// partitions and returns the topic. The caller holds l.mu.
func (l *Log) checkCreatePartitionsLocked(name string, total int) (*topic, error) {
	if l.closed {
		return nil, ErrClosed
	}
	t, ok := l.topics[name]
	if !ok {
		return nil, l.checkGrowUnopenedLocked(name, total)
	}
	have := len(t.parts)
	if IsInternalTopic(name) {
		// Where a key's records go depends on the partition count: grown,
		// a group's (or a source's) new commits would land in another
		// partition than its old ones, and lose to them on reading.
		return nil, fmt.Errorf("%w: %s holds committed offsets or source positions, and its partition count cannot change (it stays %d)", ErrInternalTopic, name, have)
	}
	if total <= have {
		return nil, fmt.Errorf("%w: topic %s has %d partitions; the count can only grow, so ask for more than %d", ErrInvalidPartitions, name, have, have)
	}
	if err := l.checkPartitionCount(name, total); err != nil {
		return nil, err
	}
	return t, nil
}

// checkGrowUnopenedLocked is checkCreatePartitionsLocked's error for a
// name that is not an open topic. A topic Open left closed cannot grow:
// its partitions are not open, and any larger count is over the limit that
// left it closed. A count that would not grow it is refused as for an open
// topic (Kafka's answer); a larger one says which limit lets it grow.
// The caller holds l.mu.
func (l *Log) checkGrowUnopenedLocked(name string, total int) error {
	err := l.unknownTopicLocked(name)
	tm, ok := l.unopened[name]
	switch {
	case !ok:
		return err
	case total <= tm.Partitions:
		return fmt.Errorf("%w: topic %s has %d partitions; the count can only grow, so ask for more than %d", ErrInvalidPartitions, name, tm.Partitions, tm.Partitions)
	}
	return fmt.Errorf("add partitions to %s: %w; to grow it to %d partitions, open it with a limit of at least %d (TRIBUTARY_MAX_PARTITIONS=%d)", name, err, total, total, total)
}

// AlterTopicConfig sets and removes config overrides of a topic. The
// overrides of a topic Open left closed (NotOpenedTopics) are changed in
// meta.json without opening it, as Kafka alters the configs of a topic
// whose partitions are offline: it opens with them once the limit allows.
func (l *Log) AlterTopicConfig(name string, set map[string]string, remove []string) error {
	if err := ValidateConfig(set); err != nil {
		return fmt.Errorf("alter topic %s: %w", name, err)
	}
	for _, k := range remove {
		if _, ok := configDefs[k]; !ok {
			return fmt.Errorf("alter topic %s: %w: unknown topic config %q (valid: %s)", name, ErrInvalidConfig, k, strings.Join(ConfigNames(), ", "))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	t, open := l.topics[name]
	tm, unopened := l.unopened[name]
	if !open && !unopened {
		return l.unknownTopicLocked(name)
	}
	cur := tm.Config
	if open {
		cur = t.overrides
	}
	next := map[string]string{}
	for k, v := range cur {
		next[k] = v
	}
	for k, v := range set {
		next[k] = v
	}
	for _, k := range remove {
		delete(next, k)
	}
	stored := l.meta.Topics[name]
	old := stored.Config
	stored.Config = next
	l.meta.Topics[name] = stored
	if err := l.writeMeta(); err != nil {
		stored.Config = old
		l.meta.Topics[name] = stored
		return fmt.Errorf("alter topic %s: %w", name, err)
	}
	if unopened {
		tm.Config = next
		l.unopened[name] = tm
		return nil
	}
	t.overrides = next
	cfg := parseTopicConfig(l.defaults, next)
	t.cfg.Store(&cfg)
	return nil
}

func (l *Log) topic(name string) (*topic, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	t, ok := l.topics[name]
	if !ok {
		return nil, l.unknownTopicLocked(name)
	}
	return t, nil
}

// unknownTopicLocked is the error for a name that is not an open topic: a
// TopicNotOpenedError for a topic Open left closed, else ErrUnknownTopic.
// The caller holds l.mu.
func (l *Log) unknownTopicLocked(name string) error {
	if tm, ok := l.unopened[name]; ok {
		return &TopicNotOpenedError{Topic: name, ID: tm.ID, Partitions: tm.Partitions, Limit: l.opts.MaxPartitions}
	}
	return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
}

// topicForWrite returns a topic, creating it with the defaults when
// auto-creation is on.
func (l *Log) topicForWrite(name string) (*topic, error) {
	t, err := l.topic(name)
	var notOpened *TopicNotOpenedError
	if err == nil || !errors.Is(err, ErrUnknownTopic) || errors.As(err, &notOpened) || l.opts.DisableAutoCreate {
		return t, err
	}
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if _, ok := l.topics[name]; !ok {
		if err := l.createTopicLocked(name, l.DefaultPartitionsOf(name), nil); err != nil {
			l.mu.Unlock()
			return nil, err
		}
	}
	l.mu.Unlock()
	return l.topic(name)
}

func (l *Log) partition(topicName string, id int32) (*partition, error) {
	t, err := l.topic(topicName)
	if err != nil {
		return nil, err
	}
	return t.partition(l, id)
}

// deletedErr turns the ErrClosed of a partition whose topic was deleted (or
// deleted and created again) since the caller looked it up into
// ErrUnknownTopic, which a producer or consumer with stale metadata gets in
// Kafka.
func (l *Log) deletedErr(topicName string, p *partition, err error) error {
	if err == nil || !errors.Is(err, ErrClosed) {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return err
	}
	if t, ok := l.topics[topicName]; ok && int(p.id) < len(t.parts) && t.parts[p.id] == p {
		return err
	}
	return fmt.Errorf("%w: %s (deleted)", ErrUnknownTopic, topicName)
}

func (t *topic) partition(l *Log, id int32) (*partition, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if id < 0 || int(id) >= len(t.parts) {
		return nil, fmt.Errorf("%w: %s has no partition %d (it has %d)", ErrUnknownPartition, t.name, id, len(t.parts))
	}
	return t.parts[id], nil
}

func (t *topic) partitionList() []*partition { return t.parts }

func (l *Log) topicList() []*topic {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]*topic, 0, len(l.topics))
	for _, n := range sortedKeys(l.topics) {
		t := l.topics[n]
		out = append(out, &topic{name: t.name, parts: append([]*partition(nil), t.parts...)})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Partitions returns the partition count of a topic.
func (l *Log) Partitions(topicName string) (int, error) {
	t, err := l.topic(topicName)
	if err != nil {
		return 0, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(t.parts), nil
}

// Offsets returns a partition's log start offset and its end (the offset the
// next durable record will get; the high watermark).
func (l *Log) Offsets(topicName string, partition int32) (start, end int64, err error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return 0, 0, err
	}
	start, end = p.bounds()
	return start, end, nil
}

// OffsetForTime returns the first offset of a partition whose record
// timestamp is at or after t. found is false when no record is that new;
// offset is then the end of the partition.
func (l *Log) OffsetForTime(topicName string, partition int32, t time.Time) (offset int64, found bool, err error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return 0, false, err
	}
	return p.offsetForTime(t.UnixMilli())
}

// OffsetOfMaxTimestamp returns the offset and timestamp of the record with
// the largest timestamp in a partition, the first of several with it, as
// Kafka's ListOffsets MAX_TIMESTAMP (KIP-734). found is false when the
// partition holds no record. A record appended but not yet readable counts:
// the call waits until it is (its fsync).
func (l *Log) OffsetOfMaxTimestamp(ctx context.Context, topicName string, partition int32) (offset int64, ts time.Time, found bool, err error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return 0, time.Time{}, false, err
	}
	off, ms, found, err := p.offsetOfMaxTimestamp(ctx)
	if err != nil || !found {
		return 0, time.Time{}, false, err
	}
	return off, time.UnixMilli(ms), true, nil
}

// ReadOptions bound one read.
type ReadOptions struct {
	// MaxBytes is about how many bytes of batches to return; at least one
	// batch is returned when any is readable. Default 1 MiB.
	MaxBytes int
	// MaxWait is how long a read at the end of the log waits for data.
	// Zero returns at once.
	MaxWait time.Duration
}

// Read returns records of one partition from offset on. Offsets below the
// log start or past the end give ErrOffsetOutOfRange; a read at the end
// waits up to opts.MaxWait for data. Damaged data is a *CorruptionError,
// never records.
func (l *Log) Read(ctx context.Context, topicName string, partition int32, offset int64, opts ReadOptions) (ReadResult, error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return ReadResult{}, err
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	res, err := p.read(ctx, offset, opts.MaxBytes, opts.MaxWait)
	return res, l.deletedErr(topicName, p, err)
}

// Append appends recs to one partition and returns the offset of the first.
// Records are stored as one batch, or several when they exceed the topic's
// max.message.bytes; a single record larger than that is refused. It returns
// once the records are durable (unless FlushInterval is set).
func (l *Log) Append(ctx context.Context, topicName string, partition int32, recs []Record) (int64, error) {
	return l.AppendIdempotent(ctx, topicName, partition, recs, noProducer)
}

// AppendIdempotent appends recs as one batch of an idempotent producer (see
// InitProducerID). A retry of a batch already appended returns the original
// offset without appending again.
func (l *Log) AppendIdempotent(ctx context.Context, topicName string, partition int32, recs []Record, prod ProducerInfo) (int64, error) {
	if len(recs) == 0 {
		return 0, errors.New("append: no records")
	}
	t, err := l.topicForWrite(topicName)
	if err != nil {
		return 0, err
	}
	p, err := t.partition(l, partition)
	if err != nil {
		return 0, err
	}
	batches, err := l.encodeFor(topicName, recs, t.config(), prod)
	if err != nil {
		return 0, err
	}
	bases, err := p.appendBatches(ctx, batches)
	if err != nil {
		return 0, l.deletedErr(topicName, p, err)
	}
	return bases[0], nil
}

// AppendRaw appends an encoded v2 record batch as the producer built it (the
// Kafka wire path): its CRC is checked and its base offset assigned. It
// returns once the batch is durable.
func (l *Log) AppendRaw(ctx context.Context, topicName string, partition int32, batch []byte) (int64, error) {
	base, wait, err := l.AppendRawAsync(ctx, topicName, partition, append([]byte(nil), batch...))
	if wait != nil {
		if werr := wait(ctx); werr != nil {
			return 0, werr
		}
	}
	if err != nil {
		return 0, err
	}
	return base, nil
}

// AppendRawAsync is AppendRaw without the wait for durability: when it
// returns, the batch has its offsets, in call order per partition, and wait
// returns once it is durable. A caller may append the next batch before
// waiting, so that one fsync covers several (the Kafka listener does, for
// the produce requests a client pipelines on one connection). wait is nil
// when there is nothing to wait for; on an error it may still be set, for
// what was written before the error.
//
// The batch is refused whole (ErrUnsupportedBatch, ErrRecordTooLarge)
// unless every record in it would read back: it is checked as Kafka's
// LogValidator checks a produced batch, and its records may decompress to
// 16 times the topic's max.message.bytes, at least 64 MiB, at most 1 GiB.
//
// Unlike AppendRaw, it does not copy batch: it rewrites it in place (the
// assigned base offset; the timestamps on a LogAppendTime topic). batch is
// the caller's again when AppendRawAsync returns.
func (l *Log) AppendRawAsync(ctx context.Context, topicName string, partition int32, batch []byte) (base int64, wait func(context.Context) error, err error) {
	p, err := l.partitionForWrite(topicName, partition)
	if err != nil {
		return 0, nil, err
	}
	b := batch
	// Validate the records too, as a Kafka broker does: a batch whose CRC
	// holds but whose records do not decode would fail every later read.
	kb, _, reason := checkBatch(b)
	if reason != "" {
		return 0, nil, fmt.Errorf("%w: %s", ErrUnsupportedBatch, reason)
	}
	cfg := p.cfg()
	// The size limit first: decompressing (checkRecords) is the expensive
	// part, and its own bound is derived from this one.
	if cfg.MaxMessageBytes > 0 && int64(len(b)) > cfg.MaxMessageBytes {
		return 0, nil, fmt.Errorf("%w: %d bytes, max.message.bytes of %s is %d", ErrRecordTooLarge, len(b), topicName, cfg.MaxMessageBytes)
	}
	nilKey, err := checkRecords(&kb, uncompressedLimit(cfg.MaxMessageBytes))
	if errors.Is(err, ErrRecordTooLarge) {
		return 0, nil, fmt.Errorf("append to %s-%d: %w", topicName, partition, err)
	} else if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrUnsupportedBatch, err)
	}
	if nilKey && cfg.Compact {
		return 0, nil, fmt.Errorf("append to %s: %w", topicName, ErrCompactedTopicNilKey)
	}
	bases, end, err := p.write([][]byte{b}, writeChecked)
	if end >= 0 {
		wait = func(ctx context.Context) error {
			_, err := p.waitDurable(ctx, end)
			return err
		}
	}
	if err != nil {
		return 0, wait, l.deletedErr(topicName, p, err)
	}
	return bases[0], wait, nil
}

func (l *Log) partitionForWrite(topicName string, partition int32) (*partition, error) {
	t, err := l.topicForWrite(topicName)
	if err != nil {
		return nil, err
	}
	return t.partition(l, partition)
}

// encodeFor encodes records for a topic: one batch for an idempotent
// producer, else as many as max.message.bytes needs. Compacted topics
// refuse records without a key.
func (l *Log) encodeFor(topicName string, recs []Record, cfg TopicConfig, prod ProducerInfo) ([][]byte, error) {
	if cfg.Compact {
		for _, r := range recs {
			if r.Key == nil {
				return nil, fmt.Errorf("append to %s: %w (give each record a key, or make the topic a delete one: tributary topics alter %s --config cleanup.policy=delete)", topicName, ErrCompactedTopicNilKey, topicName)
			}
		}
	}
	if prod.ID >= 0 {
		return [][]byte{encodeBatch(recs, l.now(), cfg.Compression, prod)}, nil
	}
	batches, err := l.encodeSplit(topicName, recs, cfg)
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", topicName, err)
	}
	return batches, nil
}

// encodeSplit encodes recs into batches no larger than max.message.bytes.
func (l *Log) encodeSplit(topicName string, recs []Record, cfg TopicConfig) ([][]byte, error) {
	limit := cfg.MaxMessageBytes
	now := l.now()
	var out [][]byte
	start, est := 0, int64(batchHeaderSize)
	for i, r := range recs {
		n := int64(len(r.Key) + len(r.Value) + 24)
		for _, h := range r.Headers {
			n += int64(len(h.Key) + len(h.Value) + 10)
		}
		if i > start && est+n > limit {
			out = append(out, encodeBatch(recs[start:i], now, cfg.Compression, noProducer))
			start, est = i, int64(batchHeaderSize)
		}
		est += n
	}
	out = append(out, encodeBatch(recs[start:], now, cfg.Compression, noProducer))
	for _, b := range out {
		if int64(len(b)) > limit {
			const mib = 1 << 20
			return nil, fmt.Errorf("%w: a record needs %d bytes in its batch, max.message.bytes is %d (raise it: tributary topics alter %s --config max.message.bytes=%d)",
				ErrRecordTooLarge, len(b), limit, topicName, (int64(len(b))+mib-1)/mib*mib)
		}
	}
	return out, nil
}

// Produce appends records to a topic, choosing each record's partition as
// Kafka's default partitioner does: murmur2 of the key, or for records
// without a key one partition for the whole call (sticky), moving on with
// each call. It sets Topic, Partition and Offset on every record and returns
// once all are durable.
func (l *Log) Produce(ctx context.Context, topicName string, recs []Record) error {
	pd, err := l.ProduceAsync(ctx, topicName, recs)
	if werr := pd.Wait(ctx); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// Pending is a set of appends that are written (offsets assigned, readable
// order fixed) but maybe not yet durable.
type Pending struct {
	waits []pendingWait
}

type pendingWait struct {
	p   *partition
	end int64
}

// Wait returns once every append of pd is durable. A nil Pending has
// nothing to wait for.
func (pd *Pending) Wait(ctx context.Context) error {
	if pd == nil {
		return nil
	}
	for _, w := range pd.waits {
		if _, err := w.p.waitDurable(ctx, w.end); err != nil {
			return err
		}
	}
	return nil
}

// ProduceAsync is Produce without the wait: when it returns, the records
// have their offsets, in call order per partition, and Wait on the result
// returns once they are durable. A caller may issue the next ProduceAsync
// before waiting, so that one fsync covers several calls while their order
// is kept. On an error, the returned Pending still covers what was written.
func (l *Log) ProduceAsync(ctx context.Context, topicName string, recs []Record) (*Pending, error) {
	t, err := l.topicForWrite(topicName)
	if err != nil {
		return nil, err
	}
	l.mu.RLock()
	parts := t.parts
	l.mu.RUnlock()
	n := len(parts)
	sticky := int32(t.sticky.Add(1) % uint32(n))
	byPart := make([][]int, n)
	for i := range recs {
		p := sticky
		if recs[i].Key != nil {
			p = KeyPartition(recs[i].Key, n)
		}
		byPart[p] = append(byPart[p], i)
	}
	cfg := t.config()
	// Each partition's share is encoded, then written, on its own: in
	// parallel when several partitions get enough records to be worth a
	// goroutine (encoding copies every byte and computes the CRC; the
	// partitions' locks are independent). Every share is encoded before
	// any is written, so a record the topic refuses (no key on a
	// compacted topic, too large) fails the call with nothing written: a
	// caller that retries it appends no share twice. The call waits for
	// all the writes, so successive calls keep their order in every
	// partition.
	type result struct {
		encoded [][]byte
		end     int64
		err     error
	}
	results := make([]result, n)
	for p := range results {
		results[p].end = -1 // nothing written, nothing to wait for
	}
	busy := 0
	for _, idx := range byPart {
		if len(idx) > 0 {
			busy++
		}
	}
	parallel := busy > 1 && len(recs) >= parallelProduceRecords
	each := func(f func(p int, idx []int)) {
		if !parallel {
			for p, idx := range byPart {
				if len(idx) > 0 {
					f(p, idx)
				}
			}
			return
		}
		var wg sync.WaitGroup
		for p, idx := range byPart {
			if len(idx) > 0 {
				wg.Go(func() { f(p, idx) })
			}
		}
		wg.Wait()
	}
	each(func(p int, idx []int) {
		batch := make([]Record, len(idx))
		for j, i := range idx {
			batch[j] = recs[i]
		}
		results[p].encoded, results[p].err = l.encodeFor(topicName, batch, cfg, noProducer)
	})
	for p := range results {
		if err := results[p].err; err != nil {
			return &Pending{}, err
		}
	}
	failed := atomic.Bool{} // sequential writes stop at the first failure
	each(func(p int, idx []int) {
		if !parallel && failed.Load() {
			return
		}
		bases, end, err := parts[p].write(results[p].encoded, writeOwned)
		results[p].end, results[p].err = end, l.deletedErr(topicName, parts[p], err)
		if err != nil {
			failed.Store(true)
			return
		}
		for j, i := range idx {
			recs[i].Topic, recs[i].Partition, recs[i].Offset = topicName, int32(p), bases[0]+int64(j)
		}
	})
	pd := &Pending{}
	var firstErr error
	for p, idx := range byPart {
		if len(idx) == 0 {
			continue
		}
		if r := results[p]; r.end >= 0 {
			pd.waits = append(pd.waits, pendingWait{p: parts[p], end: r.end})
		}
		if err := results[p].err; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return pd, firstErr
}

// parallelProduceRecords is the least records of a ProduceAsync call that
// spreads its partitions' encoding and writing over goroutines.
const parallelProduceRecords = 256

// InitProducerID allocates a new idempotent producer id (epoch 0). Ids are
// handed out from blocks recorded in meta.json, so none repeats after a
// crash.
func (l *Log) InitProducerID() (int64, int16, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pidMu.Lock()
	defer l.pidMu.Unlock()
	if l.meta.NextProducerID >= l.meta.ProducerIDBlockEnd {
		l.meta.ProducerIDBlockEnd = l.meta.NextProducerID + producerIDBlockSize
		if err := l.writeMeta(); err != nil {
			return 0, 0, fmt.Errorf("allocate producer id: %w", err)
		}
	}
	id := l.meta.NextProducerID
	l.meta.NextProducerID++
	return id, 0, nil
}

// backgroundLoop runs retention, compaction and the expiration of idle
// producers until Close.
func (l *Log) backgroundLoop(ctx context.Context) {
	defer l.bgDone.Done()
	retention := time.NewTicker(l.opts.RetentionCheckInterval)
	defer retention.Stop()
	cleaner := time.NewTicker(l.opts.CleanerInterval)
	defer cleaner.Stop()
	producers := time.NewTicker(l.opts.ProducerIDExpirationCheckInterval)
	defer producers.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retention.C:
			l.EnforceRetention()
		case <-cleaner.C:
			l.Compact(ctx)
		case <-producers.C:
			l.expireProducers()
		}
	}
}

// EnforceRetention runs retention on every partition now (it also runs in
// the background every RetentionCheckInterval).
func (l *Log) EnforceRetention() {
	now := l.now()
	for _, t := range l.topicList() {
		for _, p := range t.parts {
			if _, err := p.enforceRetention(now); err != nil {
				// A failed roll of the expired active segment is logged
				// by the partition, once per run of failures
				// (rollFailedLocked), not on every check of its backoff.
				if err := withoutRollErrors(err); err != nil {
					l.logger.Error("retention", "partition", p.String(), "error", err)
				}
			}
		}
	}
}

// expireProducers drops, on every partition, the state of the idempotent
// producers idle for ProducerIDExpiration (the background loop runs it
// every ProducerIDExpirationCheckInterval).
func (l *Log) expireProducers() {
	now := l.now()
	for _, t := range l.topicList() {
		for _, p := range t.parts {
			l.metrics.ExpiredProducers.Add(int64(p.expireProducers(now)))
		}
	}
}

// Close flushes and closes every partition and releases the data directory.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.bgCancel()
	l.bgDone.Wait()
	err := l.closeTopics()
	return errors.Join(err, l.lock.unlock())
}

func (l *Log) closeTopics() error {
	var errs []error
	for _, t := range l.topics {
		for _, p := range t.parts {
			if err := p.close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
