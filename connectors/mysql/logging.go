package mysql

import (
	"fmt"
	"log/slog"
	"strings"
)

// The go-sql-driver writes what it cannot return as an error (a pooled
// connection the server closed, a packet out of sequence, a failed
// close) to a logger of its own, by default a log.Logger on stderr
// ("[mysql] connection.go:803 closing bad idle connection: EOF"),
// which bypasses the pipeline's structured log. mysql.SetLogger would
// replace it for the whole process, without telling which source a
// message is about; the driver's Config.Logger is per pool instead, so
// openDB gives each source's pool (and its watchdog's check
// connections) a driverLogger on the source's own logger: the messages
// carry the pipeline and source. The driver's process-wide default is
// left alone: no pool of this package uses it.
//
// go-mysql, the binlog client, takes a *slog.Logger per syncer
// (BinlogSyncerConfig.Logger, see syncerConfig), also the source's. Its
// package-level messages (mysql.MariadbGTIDSet's "out of order binlog")
// go to slog.Default: those cannot be attributed to a source.

// componentDriver and componentBinlog are the "component" attribute of
// the messages of the go-sql-driver and of go-mysql.
const (
	componentDriver = "go-sql-driver/mysql"
	componentBinlog = "go-mysql"
)

// driverLogger is the go-sql-driver's mysql.Logger on a source's logger.
// The driver logs only what went wrong, without a level: it is logged at
// warn level.
type driverLogger struct{ log *slog.Logger }

func newDriverLogger(log *slog.Logger) driverLogger {
	return driverLogger{log.With("component", componentDriver)}
}

// Print logs the driver's message; the driver's source position
// ("packets.go:58 ", its first operand) becomes the caller attribute.
func (d driverLogger) Print(v ...any) {
	var attrs []any
	if len(v) > 1 {
		if s, ok := v[0].(string); ok && strings.HasSuffix(s, " ") && strings.Contains(s, ".go:") {
			attrs = []any{"caller", strings.TrimSpace(s)}
			v = v[1:]
		}
	}
	d.log.Warn("mysql: driver: "+fmt.Sprint(v...), attrs...)
}
