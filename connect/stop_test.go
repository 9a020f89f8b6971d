package connect

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStopping_EndsOnStopWithCause(t *testing.T) {
	stop, requestStop := context.WithCancel(context.Background())
	ctx := WithStop(context.Background(), stop)
	sctx, cancel := Stopping(ctx)
	defer cancel()
	if sctx.Err() != nil {
		t.Fatal("Stopping ended before the stop request")
	}
	requestStop()
	select {
	case <-sctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Stopping did not end on the stop request")
	}
	if err := context.Cause(sctx); !IsStopping(err) {
		t.Errorf("cause %v, want ErrStopping", err)
	}
	if ctx.Err() != nil {
		t.Error("the stop ended the Write context itself")
	}
}

func TestStopping_WithoutStopEndsWithCtx(t *testing.T) {
	ctx, cancelCtx := context.WithCancel(context.Background())
	sctx, cancel := Stopping(ctx)
	defer cancel()
	cancelCtx()
	<-sctx.Done()
	if err := context.Cause(sctx); !errors.Is(err, context.Canceled) || IsStopping(err) {
		t.Errorf("cause %v, want context.Canceled", err)
	}
}
