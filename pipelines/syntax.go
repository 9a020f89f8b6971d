package pipelines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxFileSize bounds a pipeline file; real ones are a few kilobytes.
const maxFileSize = 1 << 20

// parseYAML decodes data, the text of file, into the root node of its one
// YAML document. Encoding problems, syntax errors, an empty file and a
// second document are reported with their position.
func parseYAML(file string, data []byte) (*yaml.Node, ErrorList) {
	if len(data) > maxFileSize {
		return nil, ErrorList{{Pos: Pos{File: file}, Message: fmt.Sprintf("file is %d bytes; a pipeline file may have at most %d", len(data), maxFileSize)}}
	}
	if e := checkEncoding(file, data); e != nil {
		return nil, ErrorList{e}
	}
	data = normalizeBreaks(data)
	docs, err := decodeDocuments(data, 2)
	if err != nil {
		return nil, ErrorList{syntaxError(file, data, err)}
	}
	if len(docs) == 0 || len(docs[0].Content) == 0 || isNull(docs[0].Content[0]) {
		return nil, ErrorList{{
			Pos:     Pos{File: file, Line: 1, Column: 1},
			Message: "file is empty",
			Hint:    "a pipeline file is a mapping that starts with version: 1",
		}}
	}
	var errs ErrorList
	if len(docs) > 1 {
		errs = append(errs, &Error{
			Pos:     Pos{File: file, Line: docs[1].Line, Column: docs[1].Column},
			Message: "a second YAML document starts here",
			Hint:    "a pipeline file holds one document; put each pipeline in a file of its own",
		})
	}
	return docs[0].Content[0], errs
}

// decodeDocuments decodes up to limit documents. yaml.v3 is not known to
// panic on bad input, but a pipeline file is user input: a panic in the
// parser becomes an error.
func decodeDocuments(data []byte, limit int) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			docs, err = nil, fmt.Errorf("yaml: internal error: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for len(docs) < limit {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		docs = append(docs, &n)
	}
	return docs, nil
}

// checkEncoding reports the first byte that is not UTF-8 or a character YAML
// does not allow, before the parser reports it without a position.
func checkEncoding(file string, data []byte) *Error {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return &Error{Pos: Pos{File: file, Line: 1, Column: 1}, Message: "file is encoded as UTF-16", Hint: "save pipeline files as UTF-8"}
	}
	line, col := 1, 1
	for off := 0; off < len(data); {
		r, size := utf8.DecodeRune(data[off:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return &Error{Pos: Pos{File: file, Line: line, Column: col}, Message: fmt.Sprintf("invalid UTF-8 byte 0x%02X", data[off]), Hint: "save pipeline files as UTF-8"}
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			return &Error{Pos: Pos{File: file, Line: line, Column: col}, Message: fmt.Sprintf("unusual line break %U", r), Hint: "YAML counts it as a line break where editors may not; use a newline"}
		case !yamlAllowed(r):
			return &Error{Pos: Pos{File: file, Line: line, Column: col}, Message: fmt.Sprintf("control character %U is not allowed in YAML", r), Hint: "remove it, or write it as an escape in a double-quoted string"}
		}
		if r == '\n' || (r == '\r' && (off+1 >= len(data) || data[off+1] != '\n')) {
			line, col = line+1, 1
		} else {
			col++
		}
		off += size
	}
	return nil
}

// normalizeBreaks turns CRLF and a lone CR into LF, so that lines count as
// the parser counts them.
func normalizeBreaks(data []byte) []byte {
	if !bytes.ContainsRune(data, '\r') {
		return data
	}
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
}

// yamlAllowed reports whether r may appear in a YAML stream (YAML 1.2,
// production c-printable, as yaml.v3's reader checks it).
func yamlAllowed(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
	case r >= 0x20 && r <= 0x7E:
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD:
	case r >= 0x10000 && r <= 0x10FFFF:
	default:
		return false
	}
	return true
}

var (
	yamlErrorRE     = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)
	unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// splitYAMLError takes yaml.v3's "yaml: line N: message" apart. The line,
// when there is one, is only a hint: depending on the kind of problem it
// counts from 0 or from 1, and for problems on the first line it is left out.
func splitYAMLError(err error) (line int, msg string) {
	m := yamlErrorRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, err.Error()
	}
	line, _ = strconv.Atoi(m[1])
	return line, m[2]
}

// syntaxError turns a yaml.v3 syntax error into an Error with a line and
// column. yaml.v3 reports no column, and its line is off by one for some
// problems, so the position is found by parsing prefixes of the file: the
// shortest prefix that fails with the same message ends at the offending
// character.
func syntaxError(file string, data []byte, err error) *Error {
	reported, msg := splitYAMLError(err)
	e := &Error{Pos: Pos{File: file, Line: reported}, Message: "invalid YAML: " + msg}
	if reported == 0 && !strings.HasPrefix(err.Error(), "yaml: internal error") {
		e.Line = 1
	}
	lines := strings.SplitAfter(string(data), "\n")
	maxLine := reported + 1
	if reported == 0 {
		// Either the problem is on the first line, which the prefix search
		// finds at once, or the parser reported no line at all.
		maxLine = len(lines)
	}
	if len(data) <= maxLocateBytes {
		if line, col, ok := locate(lines, msg, maxLine); ok {
			e.Line, e.Column = line, col
		}
	}
	if m := unknownAnchorRE.FindStringSubmatch(msg); m != nil && e.Line >= 1 && e.Line <= len(lines) {
		// The prefix search stops at the anchor name's last character.
		if i := strings.Index(lines[e.Line-1], "*"+m[1]); i >= 0 {
			e.Column = utf8.RuneCountInString(lines[e.Line-1][:i]) + 1
		}
	}
	if e.Line >= 1 && e.Line <= len(lines) {
		text := lines[e.Line-1]
		if strings.Contains(text, "${") && strings.ContainsAny(text, "{[") && strings.Contains(msg, "expected ','") {
			e.Hint = `inside {...} or [...], quote a value holding ${VAR}: "${VAR}"`
		}
		indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
		if i := strings.IndexByte(indent, '\t'); i >= 0 {
			e.Column = i + 1
			e.Message = "tab character in indentation"
			e.Hint = "YAML indents with spaces only"
		}
	}
	return e
}

// Locating a syntax error costs parses of prefixes of the file; beyond
// maxLocateBytes the loader settles for the parser's own line, and the
// search parses at most maxLocateParsed bytes beyond its bisection.
const (
	maxLocateBytes  = 256 << 10
	maxLocateParsed = 512 << 10
)

// locate finds the first line (up to maxLine) and then the first character
// of that line at which the text stops parsing with message msg. It bisects,
// which finds the place when "a prefix fails" is monotonic, and then, within
// a budget, looks for an earlier place that fails too (a prefix that stops
// inside [a, b] fails like a list left open). The line and column it returns
// always end a prefix that fails with msg.
func locate(lines []string, msg string, maxLine int) (line, col int, ok bool) {
	text := strings.Join(lines, "")
	parsed := 0
	failsSame := func(n int) bool {
		parsed += n
		_, err := decodeDocuments([]byte(text[:n]), 1<<20)
		if err == nil {
			return false
		}
		_, m := splitYAMLError(err)
		return m == msg
	}
	// ends[k] is the byte length of the first k lines.
	n := min(len(lines), maxLine)
	ends := make([]int, n+1)
	for k := 1; k <= n; k++ {
		ends[k] = ends[k-1] + len(lines[k-1])
	}
	if n == 0 || !failsSame(ends[n]) {
		return 0, 0, false
	}
	// The smallest k whose prefix fails.
	lo, hi := 1, n
	for lo < hi {
		mid := (lo + hi) / 2
		if failsSame(ends[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	budget := parsed + maxLocateParsed
	for k := 1; k < lo && parsed < budget; k++ {
		if failsSame(ends[k]) {
			lo = k
			break
		}
	}
	line = lo
	// The smallest c such that the line's first c characters fail.
	var cuts []int // byte offset after each character of the line
	for i := range lines[line-1] {
		if i > 0 {
			cuts = append(cuts, ends[line-1]+i)
		}
	}
	cuts = append(cuts, ends[line])
	lo, hi = 0, len(cuts)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if failsSame(cuts[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	budget = parsed + maxLocateParsed
	for c := 0; c < lo && parsed < budget; c++ {
		if failsSame(cuts[c]) {
			lo = c
			break
		}
	}
	return line, lo + 1, true
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
