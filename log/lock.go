package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// dirLock is an exclusive advisory lock on a data directory, held for the
// life of the Log. The lock file names its holder, so a second process can
// say who has the directory.
type dirLock struct{ f *os.File }

const lockFile = ".lock"

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := strings.TrimSpace(string(holder))
			if h == "" {
				h = "unknown holder"
			}
			return nil, fmt.Errorf("%w: %s is held by %s; stop that process, or talk to it with --server", ErrDataDirLocked, dir, h)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	info := fmt.Sprintf("pid %d (%s) on %s since %s\n", os.Getpid(), filepath.Base(exe), host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0)
	}
	return &dirLock{f: f}, nil
}

func (d *dirLock) unlock() error {
	_ = d.f.Truncate(0)
	return d.f.Close() // closing drops the flock
}
