package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/catalog"

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
	o, cc, err := parseOptions(cfg)
	if err != nil {
		return res, fmt.Errorf("iceberg config: %w", err)
	}
	if cc.warehouse, err = resolveWarehouse(cc.warehouse); err != nil {
		return res, fmt.Errorf("iceberg config: %w", err)
	}
	cat, err := openCatalog(ctx, cc)
	if err != nil {
		return res, err
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
		return res, fmt.Errorf("table %s does not exist in catalog %s", name, redactURI(cc.uri))
	}
	if compact {
		res.CompactedFiles, res.CompactionOutputFiles, err = w.compact(ctx)
	} else {
		res.ExpiredSnapshots, err = w.expire(ctx)
	}
	return res, err
}
