//go:build !unix

package file

import "time"

// processCPU returns 0: the benchmark reports no CPU time here.
func processCPU() time.Duration { return 0 }
