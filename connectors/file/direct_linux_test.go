package file

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/tributary-io/tributary/connect"
)

// directSink opens a sink on a new file and fails the test unless it
// writes with direct I/O: the test machines' file systems (ext4, and tmpfs
// since Linux 6.6) all have it.
func directSink(t *testing.T, path string) *Sink {
	t.Helper()
	s := open(t, map[string]string{"path": path})
	if _, ok := s.f.(*directFile); !ok {
		t.Fatalf("the sink on %s writes through the page cache (%T), want direct I/O", path, s.f)
	}
	return s
}

// lines makes n records of JSON lines of varied lengths (so that batches
// end anywhere in a block) and returns them with the file text they make.
func lines(batch, n int) ([]connect.Record, string) {
	recs := make([]connect.Record, n)
	var text strings.Builder
	for i := range recs {
		v := fmt.Sprintf(`{"batch":%d,"i":%d,"pad":%q}`, batch, i, strings.Repeat("x", 37+(i*131)%1500))
		recs[i] = value(v)
		text.WriteString(v + "\n")
	}
	return recs, text.String()
}

// TestSink_Direct_Appends checks that batches of every size, from one
// short line to several buffers, and reopening a file that ends inside a
// block, leave exactly the lines written, in order.
func TestSink_Direct_Appends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := directSink(t, path)
	var want strings.Builder
	for batch, n := range []int{1, 3, 2, 40, 5000, 1, 2500, 7} {
		if batch == 3 || batch == 6 { // reopen: the buffer starts from the file's last block
			if err := s.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			s = directSink(t, path)
		}
		recs, text := lines(batch, n)
		write(t, s, recs...)
		want.WriteString(text)
		if got := readFile(t, path); got != want.String() {
			t.Fatalf("after batch %d (%d records): file holds %d bytes, want %d; first difference at %d",
				batch, n, len(got), want.Len(), firstDiff(got, want.String()))
		}
	}
	if s.size%directBlock == 0 {
		t.Errorf("the file ends on a block boundary (%d bytes): the test misses the partial block", s.size)
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSink_Direct_BypassesPageCache checks that a large batch leaves no
// pages of the file in the page cache but the partial last one, where
// writes through the page cache (pages kept) leave them all.
func TestSink_Direct_BypassesPageCache(t *testing.T) {
	recs, text := lines(0, 6000) // about 5 MiB
	cached := func(t *testing.T, direct bool) (resident, pages int) {
		defer func(d, p bool) { useDirect, dropPages = d, p }(useDirect, dropPages)
		useDirect, dropPages = direct, false
		path := filepath.Join(t.TempDir(), "out.jsonl")
		s := open(t, map[string]string{"path": path})
		write(t, s, recs...)
		resident, pages = residentPages(t, path)
		if got := readFile(t, path); got != text {
			t.Fatalf("file holds %d bytes, want %d", len(got), len(text))
		}
		return resident, pages
	}
	if resident, pages := cached(t, false); resident < pages/2 {
		t.Fatalf("through the page cache: %d of %d pages resident; mincore does not see the page cache here", resident, pages)
	}
	if resident, pages := cached(t, true); resident > 2 {
		t.Errorf("with direct I/O: %d of %d pages resident, want at most the partial last page (and the one before)", resident, pages)
	}
}

// residentPages returns how many of the pages of the file at path are in
// the page cache (mincore), and how many pages it has.
func residentPages(t *testing.T, path string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size := int(fi.Size())
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	pages = (size + pageSize - 1) / pageSize
	vec := make([]byte, pages)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(size), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, pages
}

// TestDirectFile_FallsBackOnEINVAL checks that a direct write the kernel
// refuses with EINVAL (here: from memory off the block alignment) is made
// through the page cache instead, and every later one too.
func TestDirectFile_FallsBackOnEINVAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(path, []byte("head\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := openDirect(path, 5)
	if err != nil {
		t.Fatalf("openDirect: %v", err)
	}
	defer d.Close()
	misaligned := alignedBuffer(directBufSize+1, directBlock)[1:]
	copy(misaligned, d.buf[:d.n])
	d.buf = misaligned

	want := []byte("head\n")
	for i := range 3 {
		chunk := bytes.Repeat([]byte{byte('a' + i)}, directBufSize+1234)
		if _, err := d.Write(chunk); err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
		if err := d.Sync(); err != nil {
			t.Fatalf("Sync %d: %v", i, err)
		}
		want = append(want, chunk...)
	}
	if d.direct != nil {
		t.Errorf("still writing directly after EINVAL")
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("file holds %d bytes, want %d; first difference at %d", len(got), len(want), firstDiff(string(got), string(want)))
	}
}

// TestDirectFile_Truncate checks that Truncate drops what is buffered and
// that writing goes on from the new end, inside a block and across one.
func TestDirectFile_Truncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := openDirect(path, 0)
	if err != nil {
		t.Fatalf("openDirect: %v", err)
	}
	defer d.Close()
	first := bytes.Repeat([]byte("0123456789"), 1000) // 10,000 bytes: two blocks and a part
	if _, err := d.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Write(bytes.Repeat([]byte("lost"), 3000)); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{9999, 5000, 4096, 3} {
		if err := d.Truncate(int64(size)); err != nil {
			t.Fatalf("Truncate(%d): %v", size, err)
		}
		if _, err := d.Write([]byte("+tail")); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := string(first[:size]) + "+tail"; string(got) != want {
			t.Fatalf("after Truncate(%d) and a write: file %q...%q (%d bytes), want %d bytes", size, got[:min(len(got), 12)], got[max(0, len(got)-12):], len(got), len(want))
		}
	}
}
