package procs

import (
	"runtime"
	"testing"
)

func TestTune(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	t.Setenv("GOMAXPROCS", "")
	if got := Tune(); got != before+Extra || runtime.GOMAXPROCS(0) != before+Extra {
		t.Fatalf("Tune() = %d, GOMAXPROCS %d; want %d", got, runtime.GOMAXPROCS(0), before+Extra)
	}
	runtime.GOMAXPROCS(before)

	// A GOMAXPROCS from the environment is the user's choice: kept.
	t.Setenv("GOMAXPROCS", "3")
	if got := Tune(); got != before || runtime.GOMAXPROCS(0) != before {
		t.Fatalf("with GOMAXPROCS set, Tune() = %d, GOMAXPROCS %d; want %d unchanged", got, runtime.GOMAXPROCS(0), before)
	}
}
