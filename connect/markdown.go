package connect

import "strings"

// Markdown renders the spec as a Markdown (GitHub-flavoured) table for
// generated docs: one row per parameter, in declaration order, with its
// type, default, whether it is required, its allowed values and its
// description. Secret parameters are marked, and their defaults masked.
func (s Spec) Markdown() string {
	if len(s.Params) == 0 {
		return "_No parameters._\n"
	}
	var b strings.Builder
	b.WriteString("| Parameter | Type | Default | Required | Allowed values | Description |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, p := range s.Params {
		typ := string(p.Type)
		if p.IsSecret() {
			typ += " (secret)"
		}
		def := ""
		if p.Default != "" {
			if p.IsSecret() {
				def = code(Masked)
			} else {
				def = code(p.Default)
			}
		}
		required := "no"
		if p.Required && p.Default == "" {
			required = "yes"
		}
		allowed := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			allowed[i] = code(e)
		}
		cells := []string{code(p.Name), typ, def, required, strings.Join(allowed, ", "), cell(p.Description)}
		b.WriteString("| ")
		b.WriteString(strings.Join(cells, " | "))
		b.WriteString(" |\n")
	}
	return b.String()
}

// code renders v as an inline code span that is safe in a table cell.
func code(v string) string {
	if v == "" || strings.ContainsAny(v, "`\n") {
		return cell(v)
	}
	return "`" + strings.ReplaceAll(v, "|", `\|`) + "`"
}

// cell makes text safe in a table cell: one line, pipes escaped.
func cell(v string) string {
	v = strings.Join(strings.Fields(v), " ")
	return strings.ReplaceAll(v, "|", `\|`)
}
