package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// partitionDirs lists the directories of the data dir that belong to topic
// (name-N) and those left over with a -delete suffix.
func partitionDirs(t *testing.T, dir, topic string) (dirs, deleted []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		switch {
		case !e.IsDir():
		case strings.HasSuffix(n, "-delete"):
			deleted = append(deleted, n)
		case strings.HasPrefix(n, topic+"-"):
			dirs = append(dirs, n)
		}
	}
	sort.Strings(dirs)
	return dirs, deleted
}

// TestDeleteTopic_RacingAutoCreatingProducers deletes a topic again and
// again while producers keep appending to it with auto-creation on (the
// quickstart's source does). Every delete must succeed, and after a restart
// every record acknowledged by an append that started after the last delete
// returned must be there, in a topic that holds nothing else of before.
func TestDeleteTopic_RacingAutoCreatingProducers(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.NumPartitions = 3 })
	const topic = "web.tracking"
	type acked struct {
		part   int32
		offset int64
		value  string
	}
	var (
		epoch atomic.Int64 // deletes that returned
		stop  atomic.Bool
		mu    sync.Mutex
		after = map[int64][]acked{} // by the epoch seen before the append started
		wg    sync.WaitGroup
	)
	for w := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				e := epoch.Load()
				recs := []Record{{Value: fmt.Appendf(nil, "w%d-%d", w, i)}, {Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "w%d-%d-k", w, i)}}
				err := l.Produce(t.Context(), topic, recs)
				switch {
				case err == nil:
					mu.Lock()
					for _, r := range recs {
						after[e] = append(after[e], acked{r.Partition, r.Offset, string(r.Value)})
					}
					mu.Unlock()
				case errors.Is(err, ErrUnknownTopic):
					// Stale: the topic went between look-up and append.
				default:
					t.Errorf("Produce: %v", err)
					return
				}
			}
		})
	}
	for i := range 30 {
		time.Sleep(2 * time.Millisecond)
		if err := l.DeleteTopic(topic); err != nil && !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("DeleteTopic #%d: %v", i, err)
		}
		epoch.Add(1)
	}
	last := epoch.Load()
	// Appends that start now see only the last incarnation: wait for a
	// few of them.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(after[last])
		mu.Unlock()
		if n >= 20 {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	l = openTestLog(t, dir, func(o *Options) { o.NumPartitions = 3 })
	defer l.Close()
	n, err := l.Partitions(topic)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	got := map[string]int64{}
	for p := range int32(n) {
		start, _, err := l.Offsets(topic, p)
		if err != nil || start != 0 {
			t.Fatalf("partition %d starts at %d (%v), want 0", p, start, err)
		}
		for i, r := range readAll(t, l, topic, p, 0) {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", p, i, r.Offset)
			}
			got[fmt.Sprintf("%d/%s", p, r.Value)] = r.Offset
		}
	}
	if len(after[last]) == 0 {
		t.Fatal("no append started after the last delete: the test proves nothing")
	}
	for _, a := range after[last] {
		off, ok := got[fmt.Sprintf("%d/%s", a.part, a.value)]
		if !ok || off != a.offset {
			t.Errorf("acknowledged %s at %d/%d is lost after restart (found at %d: %v)", a.value, a.part, a.offset, off, ok)
		}
	}
	dirs, deleted := partitionDirs(t, dir, topic)
	if len(dirs) != n || len(deleted) != 0 {
		t.Errorf("partition dirs %v, leftovers %v; want %d dirs and no leftovers", dirs, deleted, n)
	}
}

// TestDeleteTopic_RemovesDataAndGroupOffsets: a deleted topic made again is
// empty, and the groups' committed offsets of the old one are gone.
func TestDeleteTopic_RemovesDataAndGroupOffsets(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	ctx := t.Context()
	if err := l.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := l.Append(ctx, "t", int32(i%2), []Record{{Value: []byte("old")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Groups().Commit(ctx, "g", []OffsetCommit{{Topic: "t", Partition: 0, Offset: 3}, {Topic: "other", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteTopic("t"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if _, ok := l.Groups().CommittedOffset("g", "t", 0); ok {
		t.Error("the group still has an offset of the deleted topic")
	}
	if off, ok := l.Groups().CommittedOffset("g", "other", 0); !ok || off != 1 {
		t.Errorf("offset of another topic = %d, %v; want 1", off, ok)
	}
	if err := l.CreateTopic("t", 3, nil); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if start, end, err := l.Offsets("t", p); err != nil || start != 0 || end != 0 {
			t.Errorf("new t-%d = [%d, %d) %v, want empty", p, start, end, err)
		}
	}
	if _, deleted := partitionDirs(t, dir, "t"); len(deleted) != 0 {
		t.Errorf("leftovers %v", deleted)
	}
}

// TestCreateTopic_StrayDirIsNotInherited: a partition directory no topic
// owns (a crash between a delete's meta.json write and its rename, or a
// create that failed before meta.json) never becomes part of a new topic.
func TestCreateTopic_StrayDirIsNotInherited(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Forget the topic in meta.json only, as a crash right after the
	// delete's meta.json write would.
	l = openTestLog(t, dir)
	l.mu.Lock()
	delete(l.meta.Topics, "t")
	if err := l.writeMeta(); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	if err := l.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	if _, end, err := l.Offsets("t", 0); err != nil || end != 0 {
		t.Fatalf("new t-0 ends at %d (%v), want 0: it inherited the old data", end, err)
	}
}

// TestCreateTopic_PartitionLimit: a topic may not have more than
// MaxPartitions partitions, neither at creation nor by growing, and a
// refused or failed create leaves nothing behind.
func TestCreateTopic_PartitionLimit(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 8 })
	defer l.Close()
	err := l.CreateTopic("n1", 100000000, nil)
	if !errors.Is(err, ErrInvalidPartitions) || !strings.Contains(err.Error(), "at most 8") {
		t.Fatalf("CreateTopic(100000000) = %v, want ErrInvalidPartitions naming the limit", err)
	}
	if dirs, _ := partitionDirs(t, dir, "n1"); len(dirs) != 0 {
		t.Fatalf("a refused create left %v", dirs)
	}
	if _, err := l.Partitions("n1"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Partitions(n1) = %v, want ErrUnknownTopic", err)
	}
	if err := l.CreateTopic("n1", 8, nil); err != nil {
		t.Fatalf("CreateTopic(8) = %v", err)
	}
	if err := l.CreatePartitions("n1", 9); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("CreatePartitions(9) = %v, want ErrInvalidPartitions", err)
	}
	if dirs, _ := partitionDirs(t, dir, "n1"); len(dirs) != 8 {
		t.Fatalf("dirs %v, want 8", dirs)
	}
	if l2, err := Open(Options{Dir: t.TempDir(), NumPartitions: 2000}); err == nil {
		l2.Close()
		t.Fatal("Open with NumPartitions above the default limit succeeded")
	}
}

// TestCreateTopic_AllOrNothing: a create is whole or absent, also across a
// restart. A stray file where a partition directory goes is no reason to
// leave a topic half made (meta.json listing partitions that do not exist
// made the data dir impossible to open); a create whose meta.json write
// fails removes the partitions it made.
func TestCreateTopic_AllOrNothing(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "n1-3"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := l.CreateTopic("n1", 6, nil)
	// Make meta.json's next write fail: its temporary file is a directory.
	if err := os.Mkdir(filepath.Join(dir, metaFileName+".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err2 := l.CreateTopic("n2", 6, nil); err2 == nil {
		t.Fatal("CreateTopic(n2) succeeded without writing meta.json")
	}
	if dirs, _ := partitionDirs(t, dir, "n2"); len(dirs) != 0 {
		t.Errorf("a failed create left %v", dirs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, metaFileName+".tmp")); err != nil {
		t.Fatal(err)
	}
	l, err2 := Open(Options{Dir: dir})
	if err2 != nil {
		t.Fatalf("Open after the creates: %v", err2)
	}
	defer l.Close()
	switch names := l.ListTopics(); {
	case err != nil && len(names) != 0:
		t.Fatalf("CreateTopic(n1) failed (%v) but the topics are %v", err, names)
	case err == nil && (len(names) != 1 || names[0] != "n1"):
		t.Fatalf("topics %v, want [n1]", names)
	case err == nil:
		for p := range int32(6) {
			if _, end, err := l.Offsets("n1", p); err != nil || end != 0 {
				t.Errorf("n1-%d ends at %d (%v), want an empty partition", p, end, err)
			}
		}
	}
	if dirs, _ := partitionDirs(t, dir, "n2"); len(dirs) != 0 {
		t.Errorf("dirs of n2 after restart: %v", dirs)
	}
}

// TestOpen_TopicOverPartitionLimitIsDeletable: a data directory whose
// meta.json lists a topic with more partitions than the limit (an older
// version wrote meta.json before creating 100,000,000 partitions and died
// of EMFILE part way) opens, without opening that topic, and the topic can
// be deleted, leaving none of its directories.
func TestOpen_TopicOverPartitionLimitIsDeletable(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("ok", 1, nil); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.meta.Topics["n1"] = topicMeta{ID: newID(), Partitions: 100000000}
	err := l.writeMeta()
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("n1-%d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l = openTestLog(t, dir)
	defer func() { l.Close() }()
	if _, _, err := l.Offsets("ok", 0); err != nil {
		t.Fatalf("the other topic: %v", err)
	}
	if err := l.CreateTopic("n1", 1, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("CreateTopic(n1) = %v, want ErrTopicExists while the old one is there", err)
	}
	if err := l.DeleteTopic("n1"); err != nil {
		t.Fatalf("DeleteTopic(n1) = %v", err)
	}
	if dirs, deleted := partitionDirs(t, dir, "n1"); len(dirs)+len(deleted) != 0 {
		t.Fatalf("left %v %v", dirs, deleted)
	}
	if err := l.CreateTopic("n1", 2, nil); err != nil {
		t.Fatalf("CreateTopic(n1) after the delete = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	if n, err := l.Partitions("n1"); err != nil || n != 2 {
		t.Fatalf("after restart n1 has %d partitions (%v), want 2", n, err)
	}
}

// TestDeleteTopic_WaitingReaders: a read waiting at the end of a partition
// whose topic is deleted ends with ErrUnknownTopic (a Kafka client then
// gets UNKNOWN_TOPIC_OR_PARTITION and refreshes its metadata), not
// ErrClosed (NOT_LEADER_FOR_PARTITION, which it would retry forever).
func TestDeleteTopic_WaitingReaders(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("gone", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Produce(t.Context(), "gone", []Record{{Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() {
		res, err := l.ReadBatches(t.Context(), "gone", 0, 1, ReadOptions{MaxWait: 10 * time.Second})
		res.Release()
		errs <- err
	}()
	go func() {
		_, err := l.Read(t.Context(), "gone", 0, 1, ReadOptions{MaxWait: 10 * time.Second})
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond) // both wait at the end
	if err := l.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrUnknownTopic) {
				t.Errorf("read after delete: %v, want ErrUnknownTopic", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a read waiting at the end did not end when its topic was deleted")
		}
	}
}

// TestDeleteTopic_InternalRefused: the groups' offsets topic and the
// worker's _tributary.* topics cannot be deleted (a deletion made every
// source and group start over: events stored twice), as Kafka refuses to
// delete its internal topics.
func TestDeleteTopic_InternalRefused(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("_tributary.offsets", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Groups().Commit(t.Context(), "g", []OffsetCommit{{Topic: "t", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err) // makes __consumer_offsets
	}
	for _, name := range []string{"_tributary.offsets", OffsetsTopic} {
		if err := l.DeleteTopic(name); !errors.Is(err, ErrInternalTopic) {
			t.Errorf("DeleteTopic(%s) = %v, want ErrInternalTopic", name, err)
		}
		if _, err := l.Partitions(name); err != nil {
			t.Errorf("%s after a refused delete: %v", name, err)
		}
	}
}

// TestDeleteTopic_PassInFlightSparesTheTopicMadeAgain: a retention or
// compaction pass chooses the segments to delete under the partition's
// lock and deletes their files by path after it: when the topic is
// deleted and made again under the same name in between, the paths are
// the new topic's, and the pass must not delete its files.
func TestDeleteTopic_PassInFlightSparesTheTopicMadeAgain(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("old")}}); err != nil {
		t.Fatal(err)
	}
	old, err := l.partitionForWrite("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	old.mu.Lock()
	victim := old.segments[0] // chosen by a pass, its files not yet deleted
	old.mu.Unlock()

	if err := l.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	if err := old.removeFiles(victim.remove); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(victim.path(".log")); err != nil {
		t.Fatalf("the new topic's segment file: %v (the old topic's pass deleted it)", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir)
	defer l2.Close()
	res, err := l2.Read(t.Context(), "t", 0, 0, ReadOptions{})
	if err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != "new" {
		t.Fatalf("the new topic after reopening: %v, %d records", err, len(res.Records))
	}
}

// TestOpen_TopicOverPartitionLimit_LookupsSayWhy: a topic created under a
// higher limit than the one the log is opened with again is not opened,
// and every lookup of it says so, with the limit and how to raise it,
// instead of calling it unknown (it still matches ErrUnknownTopic, for
// callers that skip unknown topics).
func TestOpen_TopicOverPartitionLimit_LookupsSayWhy(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 5 })
	if err := l.CreateTopic("big", 4, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 3 })
	defer l.Close()
	check := func(what string, err error) {
		t.Helper()
		var no *TopicNotOpenedError
		if !errors.As(err, &no) || no.Topic != "big" || no.Partitions != 4 || no.Limit != 3 {
			t.Errorf("%s = %v, want a TopicNotOpenedError{big, 4, 3}", what, err)
			return
		}
		if !errors.Is(err, ErrUnknownTopic) {
			t.Errorf("%s = %v, want it to match ErrUnknownTopic", what, err)
		}
		for _, s := range []string{"big", "not opened", "4 partitions", "limit of 3", "TRIBUTARY_MAX_PARTITIONS"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s = %q, want it to say %q", what, err, s)
			}
		}
	}
	_, err := l.DescribeTopic("big")
	check("DescribeTopic", err)
	_, err = l.Partitions("big")
	check("Partitions", err)
	check("CreatePartitions", l.CreatePartitions("big", 5))
	check("CheckCreatePartitions", l.CheckCreatePartitions("big", 5))
	check("Produce", l.Produce(t.Context(), "big", []Record{{Value: []byte("v")}}))
	_, err = l.Append(t.Context(), "big", 0, []Record{{Value: []byte("v")}})
	check("Append", err)

	// Its name is taken: creating it again, or checking that create, is
	// refused as ErrTopicExists with the same hint, and makes no copy.
	for what, err := range map[string]error{
		"CreateTopic":      l.CreateTopic("big", 2, nil),
		"CheckCreateTopic": l.CheckCreateTopic("big", 2, nil),
	} {
		if !errors.Is(err, ErrTopicExists) || !strings.Contains(err.Error(), "TRIBUTARY_MAX_PARTITIONS=4") {
			t.Errorf("%s(big) = %v, want ErrTopicExists saying which limit opens it", what, err)
		}
	}
	if got := l.ListTopics(); slices.Contains(got, "big") {
		t.Errorf("ListTopics = %q after creating big again, want it still closed", got)
	}
}

// TestOpen_TopicOverPartitionLimit_ConfigsWithoutOpening: the configs of
// a topic Open left closed are described and altered from meta.json
// without opening it (as Kafka serves the configs of a topic whose
// partitions are offline), and it opens with them once the limit is
// raised. It cannot grow: a count that would not grow it is
// ErrInvalidPartitions, as for an open topic; a larger one is over the
// limit, and says which limit lets it grow.
func TestOpen_TopicOverPartitionLimit_ConfigsWithoutOpening(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 5 })
	if err := l.CreateTopic("big", 4, map[string]string{ConfigRetentionMs: "3600000", ConfigSegmentMs: "60000"}); err != nil {
		t.Fatal(err)
	}
	id, err := l.TopicID("big")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 3 })
	d, err := l.DescribeTopicConfig("big")
	if err != nil {
		t.Fatalf("DescribeTopicConfig(big) = %v, want its stored configs", err)
	}
	if d.ID != id || d.Overrides[ConfigRetentionMs] != "3600000" || d.Config[ConfigRetentionMs] != "3600000" || d.Partitions != nil {
		t.Errorf("DescribeTopicConfig(big) = %+v, want id %s, retention.ms 3600000 set on it, no partitions", d, id)
	}
	if err := l.AlterTopicConfig("big", map[string]string{ConfigRetentionMs: "7200000"}, []string{ConfigSegmentMs}); err != nil {
		t.Fatalf("AlterTopicConfig(big) = %v, want it stored", err)
	}
	if err := l.AlterTopicConfig("big", map[string]string{ConfigRetentionMs: "soon"}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("AlterTopicConfig(big, retention.ms=soon) = %v, want ErrInvalidConfig", err)
	}
	d, err = l.DescribeTopicConfig("big")
	def, _ := ConfigDefault(ConfigSegmentMs)
	if err != nil || d.Overrides[ConfigRetentionMs] != "7200000" || len(d.Overrides) != 1 || d.Config[ConfigSegmentMs] != def {
		t.Errorf("DescribeTopicConfig(big) after the alter = %+v, %v; want only retention.ms=7200000 set", d, err)
	}
	for what, err := range map[string]error{
		"CreatePartitions(big, 4)":      l.CreatePartitions("big", 4),
		"CheckCreatePartitions(big, 2)": l.CheckCreatePartitions("big", 2),
	} {
		if !errors.Is(err, ErrInvalidPartitions) || errors.Is(err, ErrUnknownTopic) {
			t.Errorf("%s = %v, want ErrInvalidPartitions (the count can only grow)", what, err)
		}
	}
	for what, err := range map[string]error{
		"CreatePartitions(big, 6)":      l.CreatePartitions("big", 6),
		"CheckCreatePartitions(big, 6)": l.CheckCreatePartitions("big", 6),
	} {
		var no *TopicNotOpenedError
		if !errors.As(err, &no) || !strings.Contains(err.Error(), "TRIBUTARY_MAX_PARTITIONS=6") {
			t.Errorf("%s = %v, want a TopicNotOpenedError saying which limit lets it grow", what, err)
		}
	}
	if got := l.ListTopics(); slices.Contains(got, "big") {
		t.Errorf("ListTopics = %q, want big still closed", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 4 })
	defer l.Close()
	full, err := l.DescribeTopic("big")
	if err != nil {
		t.Fatalf("DescribeTopic(big) with the limit raised: %v", err)
	}
	if full.Overrides[ConfigRetentionMs] != "7200000" || len(full.Overrides) != 1 || len(full.Partitions) != 4 {
		t.Errorf("big opened with the limit raised = %+v, want its 4 partitions and the config altered while closed", full)
	}
	if cfg, err := l.DescribeTopicConfig("big"); err != nil || cfg.Config[ConfigRetentionMs] != "7200000" {
		t.Errorf("DescribeTopicConfig(big), open = %+v, %v; want retention.ms 7200000", cfg, err)
	}
}

// TestCheckCreateTopic_AgreesWithCreateTopic: the checks of CreateTopic
// without the create (validate_only), for each way a create is refused.
func TestCheckCreateTopic_AgreesWithCreateTopic(t *testing.T) {
	l := openTestLog(t, t.TempDir(), func(o *Options) { o.MaxPartitions = 8 })
	defer l.Close()
	if err := l.CreateTopic("taken", 1, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		partitions int
		config     map[string]string
		want       error
	}{
		{"ok", 2, nil, nil},
		{"taken", 1, nil, ErrTopicExists},
		{"many", 9, nil, ErrTooManyPartitions},
		{"none", 0, nil, ErrInvalidPartitions},
		{"bad name/", 1, nil, ErrInvalidTopicName},
		{"badconfig", 1, map[string]string{"no.such.config": "1"}, ErrInvalidConfig},
		{OffsetsTopic, 1, nil, ErrInternalTopic},
	}
	for _, c := range cases {
		err := l.CheckCreateTopic(c.name, c.partitions, c.config)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("CheckCreateTopic(%q, %d) = %v, want %v", c.name, c.partitions, err, c.want)
		}
		if slices.Contains(l.ListTopics(), c.name) && c.name != "taken" {
			t.Errorf("CheckCreateTopic(%q) created it", c.name)
		}
		if err2 := l.CreateTopic(c.name, c.partitions, c.config); (err == nil) != (err2 == nil) {
			t.Errorf("%q: CheckCreateTopic = %v but CreateTopic = %v", c.name, err, err2)
		}
	}
}

// TestOpen_TopicOverPartitionLimit_Listed: ListTopics lists the open topics
// only (what can be read and written); NotOpenedTopics lists the topics Open
// left closed, with their partition count and the limit, until one is
// deleted.
func TestOpen_TopicOverPartitionLimit_Listed(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 5 })
	ids := map[string]string{}
	for name, parts := range map[string]int{"big": 4, "small": 2, "zbig": 5} {
		if err := l.CreateTopic(name, parts, nil); err != nil {
			t.Fatal(err)
		}
		id, err := l.TopicID(name)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, func(o *Options) { o.MaxPartitions = 3 })
	defer l.Close()
	if got := l.ListTopics(); !slices.Equal(got, []string{"small"}) {
		t.Errorf("ListTopics = %q, want [small]", got)
	}
	want := []TopicNotOpenedError{{Topic: "big", ID: ids["big"], Partitions: 4, Limit: 3}, {Topic: "zbig", ID: ids["zbig"], Partitions: 5, Limit: 3}}
	if got := l.NotOpenedTopics(); !slices.Equal(got, want) {
		t.Errorf("NotOpenedTopics = %+v, want %+v", got, want)
	}
	if err := l.DeleteTopic("big"); err != nil {
		t.Fatal(err)
	}
	if got := l.NotOpenedTopics(); !slices.Equal(got, want[1:]) {
		t.Errorf("NotOpenedTopics after deleting big = %+v, want %+v", got, want[1:])
	}
}
