package procs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// gcSettings returns the runtime's GOGC and soft memory limit.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// restoreRuntime puts GOMAXPROCS, GOGC and the memory limit back as they
// were when the test ends.
func restoreRuntime(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	percent, limit := gcSettings()
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// writeFiles creates the files under root, with their directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const meminfo8G = "MemTotal:        8388608 kB\nMemFree:         1000000 kB\n"

func TestTune(t *testing.T) {
	restoreRuntime(t)
	before := runtime.GOMAXPROCS(0)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"proc/meminfo":             meminfo8G,
		"proc/self/cgroup":         "0::/\n",
		"sys/fs/cgroup/memory.max": "max\n",
	})
	t.Setenv("GOMAXPROCS", "")
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)

	if got := tune(root); got != before+Extra || runtime.GOMAXPROCS(0) != before+Extra {
		t.Fatalf("tune() = %d, GOMAXPROCS %d; want %d", got, runtime.GOMAXPROCS(0), before+Extra)
	}
	wantLimit := int64(8 << 30 * MemoryLimitFraction)
	if percent, limit := gcSettings(); percent != GCPercent || limit != wantLimit {
		t.Fatalf("after tune: GOGC %d, memory limit %d; want %d, %d", percent, limit, GCPercent, wantLimit)
	}
}

func TestTuneLeavesEnvironmentAlone(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"proc/meminfo": meminfo8G})
	for _, env := range []map[string]string{
		{"GOMAXPROCS": "3", "GOGC": "", "GOMEMLIMIT": ""},
		{"GOMAXPROCS": "", "GOGC": "50", "GOMEMLIMIT": ""},
		{"GOMAXPROCS": "", "GOGC": "", "GOMEMLIMIT": "1GiB"},
		{"GOMAXPROCS": "", "GOGC": "off", "GOMEMLIMIT": ""},
	} {
		restoreRuntime(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		// What the runtime would have taken from these variables at start.
		before := runtime.GOMAXPROCS(0)
		debug.SetGCPercent(77)
		debug.SetMemoryLimit(1 << 40)

		got := tune(root)
		percent, limit := gcSettings()
		if env["GOMAXPROCS"] != "" && (got != before || runtime.GOMAXPROCS(0) != before) {
			t.Errorf("%v: tune() = %d, GOMAXPROCS %d; want %d unchanged", env, got, runtime.GOMAXPROCS(0), before)
		}
		if env["GOMAXPROCS"] == "" && got != before+Extra {
			t.Errorf("%v: tune() = %d; want %d", env, got, before+Extra)
		}
		if (env["GOGC"] != "" || env["GOMEMLIMIT"] != "") && (percent != 77 || limit != 1<<40) {
			t.Errorf("%v: GOGC %d, memory limit %d; want 77, %d unchanged", env, percent, limit, int64(1<<40))
		}
		if env["GOGC"] == "" && env["GOMEMLIMIT"] == "" && (percent != GCPercent || limit != int64(8<<30*MemoryLimitFraction)) {
			t.Errorf("%v: GOGC %d, memory limit %d; want the policy's", env, percent, limit)
		}
	}
}

// Without a memory figure there is no limit to bound a higher GOGC: the
// runtime's GC settings stay.
func TestTuneUnknownMemory(t *testing.T) {
	restoreRuntime(t)
	t.Setenv("GOMAXPROCS", "")
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	tune(t.TempDir())
	if percent, limit := gcSettings(); percent != 100 || limit != math.MaxInt64 {
		t.Fatalf("GOGC %d, memory limit %d; want 100 and none", percent, limit)
	}
}

func TestMemoryAvailable(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"nothing readable", nil, 0},
		{"machine only", map[string]string{"proc/meminfo": meminfo8G}, 8 * gib},
		{"v2 namespace root limited", map[string]string{
			"proc/meminfo":             meminfo8G,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "2147483648\n",
		}, 2 * gib},
		{"v2 parent lower than own", map[string]string{
			"proc/meminfo":                 meminfo8G,
			"proc/self/cgroup":             "0::/a/b\n",
			"sys/fs/cgroup/memory.max":     "max\n",
			"sys/fs/cgroup/a/memory.max":   "1073741824\n",
			"sys/fs/cgroup/a/b/memory.max": "max\n",
		}, 1 * gib},
		{"v2 cgroup not visible, mount's file", map[string]string{
			"proc/meminfo":             meminfo8G,
			"proc/self/cgroup":         "0::/system.slice/x.scope\n",
			"sys/fs/cgroup/memory.max": "3221225472\n",
		}, 3 * gib},
		{"limit above the machine", map[string]string{
			"proc/meminfo":             meminfo8G,
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "17179869184\n",
		}, 8 * gib},
		{"v1 unlimited", map[string]string{
			"proc/meminfo":     meminfo8G,
			"proc/self/cgroup": "4:memory:/process_api/x\n3:cpuset:/\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               "9223372036854771712\n",
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n",
		}, 8 * gib},
		{"v1 limited", map[string]string{
			"proc/meminfo":     meminfo8G,
			"proc/self/cgroup": "5:cpuacct,memory:/docker/x\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":          "9223372036854771712\n",
			"sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes": "536870912\n",
		}, gib / 2},
		{"limit without meminfo", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files)
			if got := memoryAvailable(root); got != tc.want {
				t.Fatalf("memoryAvailable = %d, want %d", got, tc.want)
			}
		})
	}
}

// On the machine the tests run on, the figure is what the kernel reports:
// never more than the machine's memory, and known on Linux.
func TestMemoryAvailableHere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	got, machine := memoryAvailable("/"), machineMemory("/proc/meminfo")
	if machine == 0 || got == 0 || got > machine {
		t.Fatalf("memoryAvailable = %d, machine %d", got, machine)
	}
}

func TestSettings(t *testing.T) {
	before := debug.SetGCPercent(250)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	lim := debug.SetMemoryLimit(3 << 30)
	t.Cleanup(func() { debug.SetMemoryLimit(lim) })
	want := fmt.Sprintf("GOMAXPROCS=%d GOGC=250 GOMEMLIMIT=3.0GiB", runtime.GOMAXPROCS(0))
	if got := Settings(); got != want {
		t.Fatalf("Settings() = %q, want %q", got, want)
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(math.MaxInt64)
	if got := Settings(); !strings.HasSuffix(got, "GOGC=off GOMEMLIMIT=off") {
		t.Fatalf("Settings() = %q, want GOGC and GOMEMLIMIT off", got)
	}
}
