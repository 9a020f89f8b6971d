package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tributary-io/tributary/engine"
)

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// showProgress redraws one status line per reporting connector on a
// terminal every interval, until ctx ends. Warnings are printed once each.
func showProgress(ctx context.Context, w *engine.Worker, out io.Writer, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	warned := map[string]bool{}
	lines := 0
	for {
		select {
		case <-ctx.Done():
			if lines > 0 {
				fmt.Fprintln(out)
			}
			return
		case <-t.C:
		}
		var b strings.Builder
		if lines > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", lines) // back to the first line drawn
		}
		drawn := 0
		for _, name := range w.Connectors() {
			st, err := w.Status(name)
			if err != nil || len(st.Tasks) == 0 || st.Tasks[0].Report == nil {
				continue
			}
			rep := st.Tasks[0].Report
			for _, msg := range rep.Warnings {
				if !warned[name+msg] {
					warned[name+msg] = true
					fmt.Fprintf(&b, "\r\x1b[K%% %s: warning: %s\n", name, msg)
				}
			}
			for _, p := range rep.Progress {
				fmt.Fprintf(&b, "\r\x1b[K%s %s %s\n", name, rep.Phase, progressBar(p.Name, p.Done, p.Total, p.Unit))
				drawn++
			}
		}
		if drawn == 0 && lines == 0 {
			continue
		}
		for i := drawn; i < lines; i++ {
			b.WriteString("\r\x1b[K\n") // clear lines no longer used
		}
		lines = max(drawn, lines)
		_, _ = io.WriteString(out, b.String())
	}
}

// progressBar renders "name [#####-----] 12,345/100,000 rows 12%".
func progressBar(name string, done, total int64, unit string) string {
	const width = 20
	if total <= 0 {
		return fmt.Sprintf("%s %s %s", name, thousands(done), unit)
	}
	frac := float64(done) / float64(total)
	frac = min(max(frac, 0), 1)
	n := int(frac * width)
	return fmt.Sprintf("%s [%s%s] %s/%s %s %3.0f%%", name, strings.Repeat("#", n), strings.Repeat("-", width-n),
		thousands(done), thousands(total), unit, frac*100)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
