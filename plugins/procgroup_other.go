//go:build !unix

package plugins

import "os/exec"

// inOwnProcessGroup does nothing where there are no Unix process groups.
func inOwnProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing where there are no Unix process groups:
// killing the process itself is all there is.
func killProcessGroup(int) {}
