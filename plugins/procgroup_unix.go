//go:build unix

package plugins

import (
	"os/exec"
	"syscall"
)

// inOwnProcessGroup makes cmd start in a process group of its own, so
// that killProcessGroup reaches what it starts too: a wrapper script's
// child, or a program that is no plugin and left a child behind, would
// otherwise hold the process's output pipes open, and ending it would
// wait for them forever.
func inOwnProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killProcessGroup kills the process group that inOwnProcessGroup made
// for the process pid.
func killProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
