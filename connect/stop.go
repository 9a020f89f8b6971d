package connect

import (
	"context"
	"errors"
)

// ErrStopping is the cause of a Stopping context that ended because the
// worker asked the task to stop (a stop, delete, restart or shutdown). A
// Write cut short by it returns an error that wraps it (or ctx.Err() of the
// Stopping context): the worker then ends the task without committing the
// batch, which is delivered again after the task runs again, and does not
// count it as a failure.
var ErrStopping = errors.New("the task is stopping")

type stopKey struct{}

// WithStop returns a copy of ctx that carries stop, a context that ends
// when the worker asks the task to stop. The worker gives Sink.Write such a
// context: ctx itself ends only at the end of a shutdown's drain, so that a
// healthy Write in flight may finish its batch; a sink that retries on its
// own (an HTTP delivery up to max.attempts) waits and retries under
// Stopping(ctx), so that a stop does not wait for a failing receiver.
func WithStop(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// Stopping returns a context that ends when ctx ends or when the worker
// asks the task to stop (context.Cause then returns ErrStopping). Without a
// stop in ctx (see WithStop) it ends with ctx. Call cancel when done.
func Stopping(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, cancel := context.WithCancelCause(ctx)
	stop, _ := ctx.Value(stopKey{}).(context.Context)
	if stop == nil {
		return sctx, func() { cancel(nil) }
	}
	unregister := context.AfterFunc(stop, func() { cancel(ErrStopping) })
	return sctx, func() {
		unregister()
		cancel(nil)
	}
}

// IsStopping reports whether err says a call was cut short by a stop
// request (it wraps ErrStopping).
func IsStopping(err error) bool { return errors.Is(err, ErrStopping) }
