package engine

import "time"

// timerC returns a channel that fires after d. The timer is left to the
// garbage collector (Go 1.23+ collects unreferenced timers).
func timerC(d time.Duration) <-chan time.Time { return time.After(d) }
