package iceberg

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/tributary-io/tributary/connect"
)

// UpkeepResult says what Compact and Expire did.
type UpkeepResult struct {
	CompactedFiles        int // data files compaction replaced
	CompactionOutputFiles int // data files compaction wrote
	ExpiredSnapshots      int
}

// Compact compacts one table now, as the sink does every
// compact.interval: cfg is an iceberg sink's configuration (catalog,
// warehouse, target.file.size, compact.min.files; Pipeline and Connector
// name the sink whose offsets the compaction snapshot keeps), table is
// namespace.table. It is meant for a command line
// (tributary iceberg compact); run it while the sink is stopped, or accept
// that a concurrent commit of the sink may make one of them fail and retry.
func Compact(ctx context.Context, cfg connect.Config, table string) (UpkeepResult, error) {
	return upkeep(ctx, cfg, table, true)
}

// Expire expires one table's snapshots now, as the sink does every
// expire.interval (expire.older.than, expire.retain.last of cfg).
func Expire(ctx context.Context, cfg connect.Config, table string) (UpkeepResult, error) {
	return upkeep(ctx, cfg, table, false)
}

func upkeep(ctx context.Context, cfg connect.Config, name string, compact bool) (UpkeepResult, error) {
	var res UpkeepResult
	o, cat, err := open(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("iceberg: %w", err)
	}
	defer func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	}()
	w, err := loadTable(ctx, o, cat, name)
	if err != nil {
		return res, err
	}
	if w.tbl == nil {
		return res, fmt.Errorf("table %s does not exist in the catalog the sink's settings name (catalog.type, catalog.uri)", name)
	}
	if compact {
		res.CompactedFiles, res.CompactionOutputFiles, err = w.compact(ctx)
	} else {
		res.ExpiredSnapshots, err = w.expire(ctx)
	}
	return res, err
}

// OrphanOptions say which unreferenced files RemoveOrphans removes.
type OrphanOptions struct {
	// OlderThan: only files last modified longer ago than this go; younger
	// ones may belong to a commit in progress. At least 1h and twice the
	// sink's commit.interval.
	OlderThan time.Duration
	// DryRun lists the files without deleting them.
	DryRun bool
}

// OrphanResult says what RemoveOrphans found and deleted.
type OrphanResult struct {
	Files   []string // the orphan files' locations
	Bytes   int64    // their total size
	Deleted int      // how many were deleted (0 in a dry run)
}

// RemoveOrphans deletes the files under one table's location that no
// metadata file, snapshot or manifest of the table references (data files
// written by a commit that never landed, say after a crash between
// writing Parquet files and committing) and that are older than
// o.OlderThan. cfg is an iceberg sink's configuration, table is
// namespace.table. It is meant for a command line
// (tributary iceberg remove-orphans); it is safe while the sink runs, as
// long as OlderThan exceeds the time a commit takes from its first data
// file to the catalog (the sink's commit.interval bounds it).
func RemoveOrphans(ctx context.Context, cfg connect.Config, name string, o OrphanOptions) (OrphanResult, error) {
	var res OrphanResult
	opts, cat, err := open(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("iceberg: %w", err)
	}
	defer func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	}()
	floor := max(time.Hour, 2*opts.commitInterval)
	if o.OlderThan < floor {
		return res, fmt.Errorf("remove orphans of %s: older than %v is too young: files of a commit in progress could go; use at least %v (1h, and twice commit.interval)", name, o.OlderThan, floor)
	}
	w, err := loadTable(ctx, opts, cat, name)
	if err != nil {
		return res, err
	}
	if w.tbl == nil {
		return res, fmt.Errorf("table %s does not exist in the catalog the sink's settings name (catalog.type, catalog.uri)", name)
	}
	r, err := w.tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(o.OlderThan), table.WithDryRun(o.DryRun))
	if err != nil {
		return res, fmt.Errorf("remove orphan files of table %s: %w", name, err)
	}
	res.Files, res.Bytes, res.Deleted = r.OrphanFileLocations, r.TotalSizeBytes, len(r.DeletedFiles)
	return res, nil
}
