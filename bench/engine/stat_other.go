//go:build !linux

package main

import "time"

// machineBusy is unknown here: the "others" column shows "-".
func machineBusy() time.Duration { return 0 }

// fsType is unknown here.
func fsType(string) string { return "unknown" }
