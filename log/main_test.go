package log

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// syncer and background loop is stopped by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
