// Package file is a sink that appends records to a file as JSON Lines.
//
// Each record becomes one line holding its decoded value: a value that is
// valid JSON (in UTF-8) is written as it is, compacted onto one line; any
// other value is written as a JSON string. Tombstones (records with a nil
// value) are skipped: a deletion has no value to write. With
// include.metadata, each line is an envelope
//
//	{"topic":"web.tracking","partition":0,"offset":42,
//	 "timestamp":"2026-01-02T15:04:05.123Z","key":"user-7","value":{...}}
//
// whose key is decoded as the value is.
//
// # Durability
//
// Write appends the whole batch (in writes of about 1 MiB) and fsyncs the
// file before it returns, so that every record it acknowledges survives a
// crash. Open fsyncs the file's directory, so that a new file survives one
// too. A batch of several chunks is written by a helper goroutine while
// the next chunk is formatted, and on Linux the sink asks the kernel to
// start writing each chunk's whole pages to the disk once the next one
// comes (sync_file_range), so that the disk works meanwhile and the fsync
// waits only for the rest; once a batch is fsync'ed, its pages are dropped
// from the page cache (posix_fadvise DONTNEED): the sink never reads them,
// and the next writes reuse the pages freed. The sink assumes it is the
// only writer of its file: a torn last line (left by a crash or a failed
// write) is cut off when the sink opens the file or sees the write fail;
// the records on it were never acknowledged and are written again.
package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/jsonline"
)

// Name is the connector's name in pipeline files.
const Name = "file"

// version is the connector's version.
const version = "0.1.0"

// writeChunk is about how many bytes of lines Write hands to one write
// call: the buffer stays small and warm in the cache however large the
// batch, and one fsync still covers the whole batch.
const writeChunk = 1 << 20

// pageSize is the unit of writeback started ahead of the fsync: whole
// pages, so that a page is not written out and then changed by the next
// chunk.
const pageSize = 4096

// dropEvery is the least bytes of fsync'ed pages Write drops from the page
// cache at once.
const dropEvery = writeChunk

// dropPages says whether Write drops the pages of what it fsync'ed from
// the page cache (see dropCached); a var for the benchmark that compares.
var dropPages = true

// maxKeptBuffer is the largest line buffer kept between writes; a larger
// one, grown by an unusually large record, is dropped.
const maxKeptBuffer = 4 << 20

func init() { connect.Default().MustRegister(Connector()) }

// Connector describes the file sink.
func Connector() connect.Connector {
	return connect.Connector{
		Name:        Name,
		Kind:        connect.KindSink,
		Version:     version,
		Description: "Appends each record's value to a file as one JSON object per line, fsync'ed before the write is acknowledged.",
		Spec:        spec(),
		NewSink:     func() connect.Sink { return &Sink{} },
	}
}

func spec() connect.Spec {
	return connect.Spec{Params: []connect.Param{
		{Name: "path", Type: connect.TypeString, Required: true, Exclusive: true,
			Description: "File to append to; it and its parent directories are created when missing. A relative path is relative to the worker's working directory."},
		{Name: "include.metadata", Type: connect.TypeBool, Default: "false",
			Description: "Wrap each value in an envelope with the record's topic, partition, offset, timestamp and key."},
	}}
}

// appendFile is what the sink needs of its open file; tests wrap it to see
// syncs and inject failures.
type appendFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Sink appends records to a file. Make one with Connector().NewSink or
// new(Sink).
type Sink struct {
	path     string
	metadata bool
	f        appendFile
	size     int64           // bytes in the file, all of them whole lines
	dropped  int64           // page-cache pages below this offset were dropped after their fsync
	bufs     [2]bytes.Buffer // chunks: one formatted while the other is written
	release  func()
}

var _ connect.Sink = (*Sink)(nil)

// Open opens (or creates) the file for appending and cuts off a torn last
// line.
func (s *Sink) Open(_ context.Context, cfg connect.Config) error {
	cfg.Spec = spec()
	path, err := cfg.String("path")
	if err != nil {
		return fmt.Errorf("file sink config: %w", err)
	}
	metadata, err := cfg.Bool("include.metadata")
	if err != nil {
		return fmt.Errorf("file sink config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("file sink path %s: %w", path, err)
	}
	release, err := claim(abs)
	if err != nil {
		return err
	}
	f, size, err := openAppend(abs)
	if err != nil {
		release()
		return err
	}
	s.path, s.metadata, s.f, s.size, s.release = abs, metadata, f, size, release
	s.dropped = size &^ (pageSize - 1)
	return nil
}

// Write appends the batch, one line per record but tombstones, in writes
// of about writeChunk bytes, and returns once the file is fsync'ed. A batch
// of more than one chunk is written by a helper goroutine (started and
// waited for here) while the next chunk is formatted.
func (s *Sink) Write(ctx context.Context, records []connect.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.f == nil {
		return errors.New("file sink: write to a sink that is not open")
	}
	defer func() {
		for i := range s.bufs {
			if s.bufs[i].Cap() > maxKeptBuffer {
				s.bufs[i] = bytes.Buffer{}
			}
		}
	}()
	var w *chunkWriter // started when the first chunk is full
	buf := &s.bufs[0]
	buf.Reset()
	for i := range records {
		if records[i].IsTombstone() {
			continue
		}
		jsonline.Append(buf, &records[i], s.metadata)
		if buf.Len() < writeChunk {
			continue
		}
		if w == nil {
			w = s.startChunkWriter()
		}
		if buf = w.handOff(buf); buf == nil {
			break // a write failed: the rest is not written
		}
	}
	written, err := 0, error(nil)
	if w != nil {
		written, err = w.finish(buf)
	} else if buf.Len() > 0 {
		written, err = s.f.Write(buf.Bytes())
		buf.Reset()
	}
	if err != nil {
		return s.undoWrite(written, err)
	}
	if written == 0 {
		return nil
	}
	s.size += int64(written)
	if err := s.f.Sync(); err != nil {
		// What reached the disk is unknown: fail the task, so that the
		// batch is written again after a restart.
		return fmt.Errorf("fsync %s: %w", s.path, err)
	}
	// The batch is on the disk: its pages can go (the partial page at the
	// end stays: the kernel drops whole pages only), once there are
	// dropEvery bytes of them, so that small batches cost no extra call.
	if end := s.size &^ (pageSize - 1); end-s.dropped >= dropEvery && dropPages {
		if dropCached(s.f, s.dropped, end-s.dropped) == nil {
			s.dropped = end
		}
	}
	return nil
}

// chunkWriter writes the chunks of one batch in order, on its own
// goroutine, while Write formats the next: two buffers go back and forth.
type chunkWriter struct {
	full    chan *bytes.Buffer // formatted, to write
	free    chan *bytes.Buffer // written, to fill again
	done    chan struct{}      // closed when the goroutine ends
	failed  atomic.Bool        // a write failed: stop formatting
	written int                // bytes of the batch in the file; read after done
	err     error              // the first write error; read after done
}

// startChunkWriter starts the goroutine that writes the batch's chunks
// after s.size, in order, until finish.
func (s *Sink) startChunkWriter() *chunkWriter {
	w := &chunkWriter{full: make(chan *bytes.Buffer, 1), free: make(chan *bytes.Buffer, len(s.bufs)), done: make(chan struct{})}
	for i := 1; i < len(s.bufs); i++ {
		s.bufs[i].Reset()
		w.free <- &s.bufs[i]
	}
	go func() {
		defer close(w.done)
		started := s.size &^ (pageSize - 1) // writeback started below this offset
		for b := range w.full {
			if w.err == nil {
				// What came before this chunk is not the batch's end: let
				// the disk write its whole pages while this one is
				// written and the next formatted. The fsync writes the
				// rest; a failure here is left to it.
				if end := (s.size + int64(w.written)) &^ (pageSize - 1); end > started {
					if startWriteback(s.f, started, end-started) == nil {
						started = end
					}
				}
				var n int
				n, w.err = s.f.Write(b.Bytes())
				w.written += n
				if w.err != nil {
					w.failed.Store(true)
				}
			}
			b.Reset()
			w.free <- b
		}
	}()
	return w
}

// handOff gives a full buffer to the writer and returns one to fill, or
// nil when a write failed.
func (w *chunkWriter) handOff(b *bytes.Buffer) *bytes.Buffer {
	if w.failed.Load() {
		return nil
	}
	w.full <- b
	return <-w.free
}

// finish hands over what is left in b (nil or empty: nothing), waits for
// every write and returns the bytes written and the first error.
func (w *chunkWriter) finish(b *bytes.Buffer) (int, error) {
	if b != nil && b.Len() > 0 {
		w.full <- b
	}
	close(w.full)
	<-w.done
	return w.written, w.err
}

// undoWrite cuts off the n bytes a batch whose write failed left, so that
// the file keeps whole lines only, and returns the error to report.
func (s *Sink) undoWrite(n int, werr error) error {
	werr = fmt.Errorf("write %s: %w", s.path, werr)
	if n > 0 {
		if err := s.f.Truncate(s.size); err != nil {
			// The file now ends in a torn line; Open cuts it off after the
			// task restarts.
			return fmt.Errorf("%w; and cutting off the %d bytes written: %w", werr, n, err)
		}
	}
	return connect.Retryable(werr)
}

// Close closes the file. Every acknowledged write is already fsync'ed.
func (s *Sink) Close(context.Context) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.release()
	s.f, s.release = nil, nil
	if err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// openAppend opens path for appending, creating it and its parents when
// missing, cuts off a torn last line and fsyncs the directory. It returns
// the file and its size.
func openAppend(path string) (*os.File, int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	size, err := repairTail(f, path)
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// repairTail cuts off the last line of f when it has no newline: the torn
// end of a write that was never acknowledged. It returns the file's size.
func repairTail(f *os.File, path string) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("open %s: not a regular file (to print records, use the stdout sink)", path)
	}
	size := fi.Size()
	keep := int64(0) // the size up to the last newline
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, fmt.Errorf("read the end of %s: %w", path, err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	if keep == size {
		return size, nil
	}
	if err := f.Truncate(keep); err != nil {
		return 0, fmt.Errorf("cut off the torn last line of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("fsync %s: %w", path, err)
	}
	slog.Warn("file sink: cut off a torn last line left by an interrupted write; its records were not acknowledged and will be written again",
		"path", path, "offset", keep, "bytes", size-keep)
	return keep, nil
}

// syncDir fsyncs a directory, so that a file just created in it survives a
// crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// openPaths holds the paths of the files open by sinks of this process: two
// sinks appending to one file would tear each other's lines.
var openPaths = struct {
	sync.Mutex
	paths map[string]bool
}{paths: make(map[string]bool)}

// claim reserves path for one sink until the returned func is called.
func claim(path string) (func(), error) {
	openPaths.Lock()
	defer openPaths.Unlock()
	if openPaths.paths[path] {
		return nil, fmt.Errorf("file sink path %s: another file sink of this worker appends to it; give each its own path", path)
	}
	openPaths.paths[path] = true
	return func() {
		openPaths.Lock()
		delete(openPaths.paths, path)
		openPaths.Unlock()
	}, nil
}
