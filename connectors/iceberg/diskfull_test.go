package iceberg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// tinyDisk mounts a tmpfs of size bytes at a new directory, unmounted when
// the test ends; resize changes its size. It skips the test where mounting
// is not allowed (not root, or no CAP_SYS_ADMIN in a container).
func tinyDisk(t *testing.T, size int) (dir string, resize func(size int)) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mount := func(opts string) error {
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("mount -o %s: %v: %s", opts, err, out)
		}
		return nil
	}
	if err := mount(fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("a full disk needs a small tmpfs, which cannot be mounted here (needs root): %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir, func(size int) {
		if err := mount(fmt.Sprintf("remount,size=%d", size)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSink_DiskFull: the warehouse's disk fills up while a commit's data
// files are written. Flush fails with an error that says so and names the
// table; what was committed before stays readable and unchanged; once
// there is room again, the worker's retry commits every record exactly
// once.
func TestSink_DiskFull(t *testing.T) {
	disk, resize := tinyDisk(t, 256<<10)
	e := newEnv(t, map[string]string{"warehouse": filepath.Join(disk, "warehouse"), "commit.records": "1000000"})
	pad := strings.Repeat("x", 1000)
	batch := func(from, n int64) []connect.Record {
		var recs []connect.Record
		for o := from; o < from+n; o++ {
			// Random-looking text, so that Parquet cannot squeeze it away.
			recs = append(recs, rec("orders", 0, o, fmt.Sprintf(`{"o":%d,"pad":"%d%s"}`, o, o*7919%100003, pad[:900+o%97])))
		}
		return recs
	}
	s := e.open(t)
	write(t, s, batch(0, 10)...)
	flush(t, s) // a first commit that fits
	before := e.rows(t, "default.orders", "_offset")

	var err error
	end := int64(10) // the records after the last batch sent
	for ; err == nil && end < 10_000; end += 200 {
		if err = s.Write(t.Context(), batch(end, 200)); err == nil {
			err = s.Flush(t.Context())
		}
	}
	if err == nil {
		t.Fatal("a 256 KiB disk took 10,000 KiB-sized rows")
	}
	if !errors.Is(err, syscall.ENOSPC) && !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("the error does not say the disk is full: %v", err)
	}
	if !strings.Contains(err.Error(), "orders") {
		t.Errorf("the error does not name the table: %v", err)
	}
	t.Logf("disk full: %v", err)
	committed := e.rows(t, "default.orders", "_offset")
	if len(committed) < len(before) {
		t.Fatalf("after the failed commit the table has %d rows, had %d", len(committed), len(before))
	}
	for _, r := range committed {
		if fmt.Sprint(r["o"]) != fmt.Sprint(r["_offset"]) {
			t.Fatalf("after the failed commit a row does not match its offset: %v", r)
		}
	}

	// Room again: a new instance (the worker restarts the task) gets every
	// record past the group offsets again — here all of them — and the
	// table ends with each exactly once.
	resize(64 << 20)
	s2 := e.open(t)
	all := batch(0, end)
	write(t, s2, all...)
	flush(t, s2)
	got := e.rows(t, "default.orders", "_offset")
	if len(got) != len(all) {
		t.Fatalf("table has %d rows, want %d (each record once)", len(got), len(all))
	}
	seen := map[string]bool{}
	for _, r := range got {
		k := fmt.Sprint(r["_offset"])
		if seen[k] {
			t.Fatalf("offset %s is in the table twice", k)
		}
		seen[k] = true
	}
	for o := range end {
		if !seen[fmt.Sprint(o)] {
			t.Fatalf("offset %d is missing", o)
		}
	}
}
