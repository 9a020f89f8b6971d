package file

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRepairTail writes arbitrary bytes as the file the sink appends to,
// as a crash may leave it, and opens it. Opening never fails or panics on
// the content; it keeps exactly the file up to its last newline, and
// appends go after that.
func FuzzRepairTail(f *testing.F) {
	for _, s := range []string{"", "a\n", "a\nb", "\n\n\ntorn", "no newline", "a\r\n", string(bytes.Repeat([]byte("x"), 70<<10)) + "\nend"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, size, err := openAppend(path)
		if err != nil {
			t.Fatalf("openAppend: %v", err)
		}
		want := int64(bytes.LastIndexByte(data, '\n') + 1)
		if size != want {
			fh.Close()
			t.Fatalf("kept %d bytes of %q, want %d", size, data, want)
		}
		if _, err := fh.Write([]byte("new\n")); err != nil {
			t.Fatal(err)
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(data[:want:want], "new\n"...)) {
			t.Fatalf("file holds %q after the repair and an append to %q", got, data)
		}
	})
}
