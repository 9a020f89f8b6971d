package crashtest

import (
	"fmt"
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
				if i%10 == 0 {
					fmt.Println("wrote", i) // progress, read by the parent with Last
				}
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
	p.WaitFor(func() bool {
		n, ok := p.Last("wrote")
		return ok && n != "0"
	}, 30*time.Second, "the child reports its progress")
	p.Kill()
	p.Kill() // a second kill is harmless
	before := size()
	time.Sleep(50 * time.Millisecond)
	if after := size(); after != before {
		t.Fatalf("the file grew from %d to %d bytes after the kill", before, after)
	}
}
