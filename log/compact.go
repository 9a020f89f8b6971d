package log

import "context"

// PLACEHOLDER: being written; replaced by the compactor.

func (l *Log) Compact(ctx context.Context) {}
