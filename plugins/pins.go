package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LockFile is the name of the file in a plugin directory that pins the
// sha256 of its plugins. It has sha256sum's format, one plugin a line,
// so `sha256sum counter jsonl > plugins.lock` writes it:
//
//	9f2c...e1  counter
//	41d0...7a  jsonl
//
// A pinned plugin is started only while its file has that sha256.
const LockFile = "plugins.lock"

// pin is the sha256 a plugin file must have, and where that was said.
type pin struct {
	sum    []byte
	origin string // "plugins.lock in ./plugins", "the pipeline's plugins.sha256"
}

// readLockFile reads a plugin directory's lock file: file name → pin. A
// missing lock file pins nothing.
func readLockFile(dir string) (map[string]*pin, error) {
	path := filepath.Join(dir, LockFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plugin lock file: %w", err)
	}
	pins := make(map[string]*pin)
	// Split the whole file rather than scan it: a bufio.Scanner stops at a
	// line past its token limit, which would drop the pins after it.
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sumHex, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimSpace(name), "*") // sha256sum marks binary mode with *
		sum, err := hex.DecodeString(sumHex)
		if !ok || err != nil || len(sum) != sha256.Size || name == "" {
			return nil, fmt.Errorf("%s:%d: want \"<sha256 in hex>  <file name>\" (as sha256sum prints it), got %q", path, n, line)
		}
		name = filepath.Base(name)
		if _, dup := pins[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is pinned twice", path, n, name)
		}
		pins[name] = &pin{sum: sum, origin: LockFile + " in " + dir}
	}
	return pins, nil
}

// parsePin reads a sha256 given in hex (optionally prefixed "sha256:").
func parsePin(s, origin string) (*pin, error) {
	sum, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(s), "sha256:"))
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("%s: %q is not a sha256 (64 hex digits)", origin, s)
	}
	return &pin{sum: sum, origin: origin}, nil
}

func hashFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return h.Sum(nil), nil
}
