package pipelines

import (
	"fmt"
	"strings"
)

// envError is a problem with one ${...} reference, at a byte offset of the
// scalar it appears in.
type envError struct {
	offset  int
	message string
	hint    string
}

// expand replaces ${NAME} and ${NAME:-default} in s with values from lookup.
// ${NAME:-default} takes default when NAME is unset or empty; a default may
// hold braces that pair up, as in a shell (${TOPIC:-cdc.{schema}.{table}}).
// $${ stands for a literal ${; any other $ is kept as it is. It returns the expanded text,
// the names of the variables whose values went into it, and every problem
// (an unset variable without default, a malformed reference).
func expand(s string, lookup func(string) (string, bool)) (string, []string, []envError) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	var (
		b     strings.Builder
		names []string
		errs  []envError
	)
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := closingBrace(s[i+2:])
			if end < 0 {
				hint := "write ${NAME} or ${NAME:-default}, or $${ for a literal ${"
				if strings.Contains(s[i+2:], "{") {
					hint = "write ${NAME} or ${NAME:-default} (braces in a default must pair up), or $${ for a literal ${"
				}
				errs = append(errs, envError{i, "unterminated ${", hint})
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			ref := s[i : i+2+end+1]
			name, def, hasDef := strings.Cut(s[i+2:i+2+end], ":-")
			switch {
			case !validEnvName(name):
				errs = append(errs, envError{i, fmt.Sprintf("malformed variable reference %s", ref), "write ${NAME} or ${NAME:-default} with NAME made of letters, digits and _, or $${ for a literal ${"})
			case strings.Contains(def, "${"):
				errs = append(errs, envError{i, fmt.Sprintf("nested variable reference in %s is not supported", ref), "a default is plain text"})
			default:
				v, ok := lookup(name)
				switch {
				case ok && (v != "" || !hasDef):
					b.WriteString(v)
					names = append(names, name)
				case hasDef:
					b.WriteString(def)
				default:
					errs = append(errs, envError{i, fmt.Sprintf("environment variable %s is not set", name), fmt.Sprintf("set it, or give a default: ${%s:-value}", name)})
				}
			}
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), names, errs
}

// closingBrace returns the index in s of the "}" that closes a reference
// whose "${" came just before s: braces in between pair up, as a shell
// reads ${NAME:-word}. It returns -1 when there is none.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
