//go:build !unix

package main

import "time"

// cpuTime is unknown here: the CPU columns show 0.
func cpuTime() time.Duration { return 0 }
