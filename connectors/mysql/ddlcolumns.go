package mysql

import (
	"slices"
	"strings"
)

// ddlColumns returns the column names, in order, that the DDL statement
// query leaves table ref with, given its columns just before (prev; nil
// when the schema history has none), for the schema history to check the
// definition it reads from the server against (history.go): ok is false
// when the statement does to the columns what this small reader cannot
// follow, and nothing is checked then.
//
// It follows CREATE TABLE with a column list; ALTER TABLE's ADD, DROP,
// CHANGE, MODIFY [COLUMN] (FIRST, AFTER, IF [NOT] EXISTS, ADD (a, b)),
// RENAME COLUMN, and the clauses that leave the column names alone
// (indexes, constraints, defaults, table options, partitions); TRUNCATE
// and CREATE/DROP INDEX. It gives up on RENAME TABLE, ALTER … RENAME TO,
// CREATE TABLE … LIKE or … SELECT, system versioning (hidden columns),
// and any clause it does not know.
func ddlColumns(query, db string, ref tableRef, prev []string) (cols []string, ok bool) {
	toks := statement(tokenize(query))
	p := &ddlParser{toks: toks, db: db}
	for _, t := range toks {
		if !t.quoted && strings.EqualFold(t.text, "VERSIONING") {
			return nil, false // WITH/ADD/DROP SYSTEM VERSIONING: hidden row_start, row_end
		}
	}
	switch {
	case p.kw("CREATE"):
		p.kw("OR")
		p.kw("REPLACE")
		p.kw("TEMPORARY")
		if !p.kw("TABLE") {
			// CREATE [UNIQUE|…] INDEX … ON t: the columns stay.
			return prev, prev != nil && p.indexOn(ref)
		}
		ifNotExists := false
		if p.kw("IF") {
			ifNotExists = p.kw("NOT") && p.kw("EXISTS")
		}
		if r, named := p.name(); !named || r != ref {
			return nil, false
		}
		if ifNotExists && prev != nil {
			return prev, true // the table is there: a no-op
		}
		return p.createColumns()
	case p.kw("ALTER"):
		p.kw("ONLINE", "OFFLINE")
		p.kw("IGNORE")
		if !p.kw("TABLE") || prev == nil {
			return nil, false
		}
		if p.kw("IF") && !p.kw("EXISTS") {
			return nil, false
		}
		if r, named := p.name(); !named || r != ref {
			return nil, false
		}
		cols = slices.Clone(prev)
		for _, spec := range p.clauses(p.i, len(p.toks)) {
			if cols, ok = alterColumns(cols, spec); !ok {
				return nil, false
			}
		}
		return cols, true
	case p.kw("DROP"):
		p.kw("ONLINE", "OFFLINE")
		if p.kw("INDEX") {
			return prev, prev != nil && p.indexOn(ref)
		}
	case p.kw("TRUNCATE"):
		p.kw("TABLE")
		if r, named := p.name(); named && r == ref {
			return prev, prev != nil
		}
	}
	return nil, false
}

// indexOn reports whether the statement's ON names ref (CREATE/DROP INDEX).
func (p *ddlParser) indexOn(ref tableRef) bool {
	p.out = nil
	p.onTable()
	return len(p.out) == 1 && p.out[0] == ref
}

// clauses splits toks[from:to] at the commas outside parentheses.
func (p *ddlParser) clauses(from, to int) [][]token {
	var out [][]token
	depth, start := 0, from
	for i := from; i < to; i++ {
		t := p.toks[i]
		switch {
		case t.quoted:
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case t.text == "," && depth == 0:
			out = append(out, p.toks[start:i])
			start = i + 1
		}
	}
	if start < to {
		out = append(out, p.toks[start:to])
	}
	return out
}

// createColumns reads the column names of CREATE TABLE's (…) list, the
// parser standing after the table name; false for CREATE … LIKE and
// CREATE … SELECT, whose columns the statement does not list.
func (p *ddlParser) createColumns() ([]string, bool) {
	if p.i >= len(p.toks) || p.toks[p.i].quoted || p.toks[p.i].text != "(" {
		return nil, false
	}
	open := p.i
	depth, end := 0, -1
	for i := open; i < len(p.toks) && end < 0; i++ {
		t := p.toks[i]
		switch {
		case t.quoted:
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
			if depth == 0 {
				end = i
			}
		}
	}
	if end < 0 {
		return nil, false
	}
	for _, t := range p.toks[end+1:] {
		if !t.quoted && (strings.EqualFold(t.text, "SELECT") || strings.EqualFold(t.text, "LIKE")) {
			return nil, false
		}
	}
	var cols []string
	for _, el := range p.clauses(open+1, end) {
		if len(el) == 0 {
			return nil, false
		}
		if isKw(el[0], "LIKE") {
			return nil, false // CREATE TABLE t (LIKE u)
		}
		if isKw(el[0], nonColumnElements...) {
			continue
		}
		if !el[0].quoted && !isIdent(el[0].text) {
			return nil, false
		}
		cols = append(cols, el[0].text)
	}
	return cols, len(cols) > 0
}

// nonColumnElements start the elements of a CREATE TABLE list, or of an
// ALTER's ADD, that are not columns.
var nonColumnElements = []string{"INDEX", "KEY", "PRIMARY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK", "PERIOD"}

// alterNoColumns start the ALTER TABLE clauses that leave the column
// names and order alone.
var alterNoColumns = []string{
	"ALTER", "CONVERT", "ALGORITHM", "LOCK", "FORCE", "ORDER", "ENABLE", "DISABLE", "DISCARD", "IMPORT",
	"WITH", "WITHOUT", "VALIDATION",
	"PARTITION", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR",
	"REMOVE", "TRUNCATE", "PARTITIONS",
	"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH",
	"CHECKSUM", "COMPRESSION", "CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION", "ENCRYPTED",
	"ENCRYPTION_KEY_ID", "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PAGE_CHECKSUM",
	"PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "PASSWORD", "ROW_FORMAT", "SECONDARY_ENGINE",
	"SECONDARY_ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE", "AUTOEXTEND_SIZE", "STATS_AUTO_RECALC", "STATS_PERSISTENT",
	"STATS_SAMPLE_PAGES", "TABLESPACE", "STORAGE", "TRANSACTIONAL", "UNION", "IETF_QUOTES", "SEQUENCE",
}

func isKw(t token, kws ...string) bool {
	if t.quoted {
		return false
	}
	for _, k := range kws {
		if strings.EqualFold(t.text, k) {
			return true
		}
	}
	return false
}

// alterColumns applies one ALTER TABLE clause to the column names cols.
func alterColumns(cols []string, spec []token) ([]string, bool) {
	if len(spec) == 0 {
		return cols, true // ALTER TABLE t (nothing)
	}
	p := &ddlParser{toks: spec}
	find := func(name string) int {
		return slices.IndexFunc(cols, func(c string) bool { return strings.EqualFold(c, name) })
	}
	ident := func() (string, bool) {
		if p.i >= len(p.toks) {
			return "", false
		}
		t := p.toks[p.i]
		if !t.quoted && !isIdent(t.text) {
			return "", false
		}
		p.i++
		return t.text, true
	}
	// place puts column name at index i by the clause's FIRST or AFTER x,
	// or where it was (at, -1 for the end).
	place := func(name string, at int) ([]string, bool) {
		for j := p.i; j < len(p.toks); j++ {
			switch {
			case isKw(p.toks[j], "FIRST"):
				at = 0
			case isKw(p.toks[j], "AFTER") && j+1 < len(p.toks):
				k := find(p.toks[j+1].text)
				if k < 0 {
					return nil, false
				}
				at = k + 1
			}
		}
		if at < 0 || at > len(cols) {
			at = len(cols)
		}
		return slices.Insert(cols, at, name), true
	}
	switch {
	case p.kw("ADD"):
		explicit := p.kw("COLUMN")
		ifNotExists := false
		if p.kw("IF") {
			if !p.kw("NOT") || !p.kw("EXISTS") {
				return nil, false
			}
			ifNotExists = true
		}
		if !explicit && p.peekKw(nonColumnElements...) {
			return cols, true
		}
		if !explicit && p.peekKw("PARTITION", "SYSTEM") {
			return nil, false
		}
		if p.i < len(p.toks) && !p.toks[p.i].quoted && p.toks[p.i].text == "(" {
			// ADD [COLUMN] (a int, b int, INDEX (a)): appended in order.
			inner := &ddlParser{toks: p.toks[p.i+1:]}
			end := len(inner.toks)
			if end == 0 || inner.toks[end-1].quoted || inner.toks[end-1].text != ")" {
				return nil, false
			}
			for _, el := range inner.clauses(0, end-1) {
				if len(el) == 0 || (!el[0].quoted && !isIdent(el[0].text)) {
					return nil, false
				}
				if isKw(el[0], nonColumnElements...) {
					continue
				}
				if find(el[0].text) >= 0 {
					if ifNotExists {
						continue
					}
					return nil, false
				}
				cols = append(cols, el[0].text)
			}
			return cols, true
		}
		name, ok := ident()
		if !ok {
			return nil, false
		}
		if find(name) >= 0 {
			return cols, ifNotExists // there already: a no-op, or an error we do not follow
		}
		return place(name, -1)
	case p.kw("DROP"):
		explicit := p.kw("COLUMN")
		if !explicit && p.peekKw("INDEX", "KEY", "PRIMARY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD") {
			return cols, true
		}
		if !explicit && p.peekKw("SYSTEM") {
			return nil, false
		}
		ifExists := p.kw("IF") && p.kw("EXISTS")
		name, ok := ident()
		if !ok {
			return nil, false
		}
		i := find(name)
		if i < 0 {
			return cols, ifExists
		}
		return slices.Delete(cols, i, i+1), true
	case p.kw("CHANGE", "MODIFY"):
		change := isKw(spec[0], "CHANGE")
		p.kw("COLUMN")
		ifExists := false
		if p.kw("IF") {
			if !p.kw("EXISTS") {
				return nil, false
			}
			ifExists = true
		}
		old, ok := ident()
		if !ok {
			return nil, false
		}
		name := old
		if change {
			if name, ok = ident(); !ok {
				return nil, false
			}
		}
		i := find(old)
		if i < 0 {
			return cols, ifExists
		}
		cols = slices.Delete(cols, i, i+1)
		return place(name, i)
	case p.kw("RENAME"):
		if p.kw("INDEX", "KEY") {
			return cols, true
		}
		if !p.kw("COLUMN") {
			return nil, false // RENAME [TO|AS] another table
		}
		old, ok := ident()
		if !ok || !p.kw("TO") {
			return nil, false
		}
		name, ok := ident()
		if !ok {
			return nil, false
		}
		i := find(old)
		if i < 0 {
			return nil, false
		}
		cols = slices.Clone(cols)
		cols[i] = name
		return cols, true
	case p.peekKw(alterNoColumns...):
		return cols, true
	}
	return nil, false
}
