package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
)

// The output of a plugin process reaches the host on three paths: what the
// plugin writes to os.Stdout and os.Stderr (go-plugin streams both over
// gRPC), and what reaches file descriptor 2 directly (the Go runtime's
// panic and fatal error traces, and the JSON log lines of Serve's slog
// handler). Every line goes to the host's slog logger tagged with the
// plugin's name; stderr lines also go to a tail, the last lines of which
// an error about the process shows.

// tailLines is how many of the last stderr lines an error shows.
const tailLines = 12

// maxLine bounds one line of plugin output; the rest is cut off.
const maxLine = 16 << 10

// panicLines is how many lines after a panic's first line the tail keeps:
// the top frames of the panicking goroutine. Later lines (the other
// goroutines) would push out what matters.
const panicLines = 8

// tail keeps the last stderr lines of a process; after a panic or fatal
// error, it keeps its first lines instead.
type tail struct {
	mu    sync.Mutex
	lines []string // a ring of at most tailLines
	next  int      // where the next line goes once the ring is full
	after int      // lines still to keep after a panic; -1 before one
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines == nil {
		t.after = -1
	}
	switch {
	case t.after == 0:
		return // the panic's head is kept
	case t.after > 0:
		t.after--
	case strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: "):
		t.after = panicLines
	}
	if len(t.lines) < tailLines {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % tailLines
}

// last returns the kept lines, oldest first.
func (t *tail) last() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.lines))
	out = append(out, t.lines[t.next:]...)
	return append(out, t.lines[:t.next]...)
}

// lineWriter is an io.Writer that splits what it is given into lines and
// logs each one; with a tail, it keeps stderr lines there too.
type lineWriter struct {
	logger *slog.Logger
	stream string // "stdout" or "stderr"
	tail   *tail  // nil for stdout
	raw    bool   // file descriptor 2: lines may be JSON log records

	mu      sync.Mutex
	buf     []byte
	inPanic bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = appendCapped(w.buf, p)
			break
		}
		w.buf = appendCapped(w.buf, p[:i])
		w.line(string(bytes.TrimRight(w.buf, "\r")))
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush logs a last line that has no newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = w.buf[:0]
	}
}

func appendCapped(buf, p []byte) []byte {
	if room := maxLine - len(buf); len(p) > room {
		p = p[:max(room, 0)]
	}
	return append(buf, p...)
}

func (w *lineWriter) line(s string) {
	if s == "" {
		return
	}
	if w.raw {
		if msg, lvl, attrs, ok := parseLogLine(s); ok {
			if w.tail != nil {
				w.tail.add(msg)
			}
			w.logger.LogAttrs(context.Background(), lvl, msg, attrs...)
			return
		}
	}
	if w.tail != nil {
		w.tail.add(s)
	}
	lvl := slog.LevelInfo
	if strings.HasPrefix(s, "panic: ") || strings.HasPrefix(s, "fatal error: ") {
		w.inPanic = true
	}
	if w.inPanic {
		lvl = slog.LevelError
	}
	w.logger.LogAttrs(context.Background(), lvl, s, slog.String("stream", w.stream))
}

// parseLogLine reads a JSON log line as hclog (and Serve's slog handler)
// write them: {"@level":"info","@message":"...","@timestamp":"...", ...}.
// It checks every type, since the line comes from another program.
func parseLogLine(s string) (msg string, lvl slog.Level, attrs []slog.Attr, ok bool) {
	if !strings.HasPrefix(s, "{") {
		return "", 0, nil, false
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return "", 0, nil, false
	}
	msg, ok1 := m["@message"].(string)
	level, ok2 := m["@level"].(string)
	if !ok1 || !ok2 {
		return "", 0, nil, false
	}
	switch strings.ToLower(level) {
	case "trace", "debug":
		lvl = slog.LevelDebug
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(k, "@") {
			attrs = append(attrs, slog.Any(k, m[k]))
		}
	}
	return msg, lvl, attrs, true
}
