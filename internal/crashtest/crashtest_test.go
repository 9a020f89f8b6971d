package crashtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const childEnv = "TRIBUTARY_CRASHTEST_CHILD"

// TestKill is both sides: the child appends a number to a file every
// millisecond; the parent kills it and sees the file stop growing.
func TestKill(t *testing.T) {
	Child(childEnv, func(path string) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		go func() {
			for i := 0; ; i++ {
				f.WriteString(strconv.Itoa(i) + "\n")
				time.Sleep(time.Millisecond)
			}
		}()
		return nil
	})
	path := filepath.Join(t.TempDir(), "out")
	p := Start(t, "run 1", "TestKill", childEnv+"="+path)
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	p.WaitFor(func() bool { return size() > 100 }, 30*time.Second, "the child writes")
	p.Kill()
	p.Kill() // a second kill is harmless
	before := size()
	time.Sleep(50 * time.Millisecond)
	if after := size(); after != before {
		t.Fatalf("the file grew from %d to %d bytes after the kill", before, after)
	}
}
