package plugins

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// bin holds the paths of the plugins TestMain builds: the two examples and
// the test plugins in testdata.
var bin struct {
	dir       string
	counter   string
	jsonl     string
	misbehave string
	recorder  string // a source with connect.DurableNotifier and connect.TailRecoverer
	oldproto  string // a source of plugin protocol version 1
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tributary-plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.dir = dir
	bin.counter = filepath.Join(dir, "counter")
	bin.jsonl = filepath.Join(dir, "jsonl")
	bin.misbehave = filepath.Join(dir, "misbehave")
	bin.recorder = filepath.Join(dir, "recorder")
	bin.oldproto = filepath.Join(dir, "oldproto")
	start := time.Now()
	if err := buildPlugins(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "built the test plugins in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// buildPlugins builds the example plugins (each in its own module, as a
// plugin author's repository would be) and the test plugins, at once.
func buildPlugins() error {
	builds := []struct{ dir, pkg, out string }{
		{"../examples/plugins/counter", ".", bin.counter},
		{"../examples/plugins/jsonl", ".", bin.jsonl},
		{".", "./testdata/misbehave", bin.misbehave},
		{".", "./testdata/recorder", bin.recorder},
		{".", "./testdata/oldproto", bin.oldproto},
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Go(func() {
			args := []string{"build", "-o", b.out}
			if raceEnabled {
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, b.pkg)...)
			cmd.Dir = b.dir
			// -mod=mod: the example modules follow the repository's go.mod
			// through their replace directive, even before their own go.mod
			// is updated to match.
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go build %s in %s: %v\n%s", b.pkg, b.dir, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// logBuffer is a slog destination that tests read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until the log holds every one of want, or fails after 5s.
func (b *logBuffer) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		missing := ""
		s := b.String()
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log has no %q:\n%s", missing, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newTestHost returns a host with short timeouts whose log the test reads.
func newTestHost(t *testing.T, opts Options) (*Host, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.ReadWait == 0 {
		opts.ReadWait = 200 * time.Millisecond
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return NewHost(opts), logs
}

// pluginDir returns a new directory holding links to the given plugins.
func pluginDir(t *testing.T, paths ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range paths {
		if err := os.Symlink(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
