package main

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data as the log does on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
