package engine

import (
	"context"
	"log/slog"

	"github.com/tributary-io/tributary/pipelines"
)

// maskText hides the connector's secrets in a text the worker shows of it
// (a task's trace, a dead letter's error headers): the values of its
// secret parameters and of its settings from the environment, and what its
// spec's Redact masks. A connector's error may quote its settings (a URL
// with its key, a DSN with its password); the REST API, the logs and the
// dead-letter topic must not.
func (r *runner) maskText(s string) string {
	return pipelines.MaskMessageKeys(r.conn.Spec, r.spec.Config, r.spec.Secrets, s)
}

// maskingHandler is a slog.Handler that hides a connector's secrets in the
// message and the attributes (errors included) of every line its runner
// logs.
type maskingHandler struct {
	inner slog.Handler
	mask  func(string) string
}

func (h maskingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h maskingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.mask(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.maskAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h maskingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.maskAttr(a)
	}
	return maskingHandler{h.inner.WithAttrs(masked), h.mask}
}

func (h maskingHandler) WithGroup(name string) slog.Handler {
	return maskingHandler{h.inner.WithGroup(name), h.mask}
}

func (h maskingHandler) maskAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.mask(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]any, len(group))
		for i, g := range group {
			masked[i] = h.maskAttr(g)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok && err != nil {
			return slog.String(a.Key, h.mask(err.Error()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
