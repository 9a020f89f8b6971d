package mysql

import (
	"strings"
)

// ddlTables returns the tables a DDL statement changes, qualified with db
// when the statement does not name a database: CREATE [OR REPLACE]
// [TEMPORARY] TABLE, ALTER [ONLINE] [IGNORE] TABLE (with a RENAME inside),
// DROP [TEMPORARY] TABLE (several), RENAME TABLE a TO b, … (both names),
// TRUNCATE [TABLE], CREATE/DROP [UNIQUE|FULLTEXT|SPATIAL] INDEX … ON t,
// each also behind MariaDB's SET STATEMENT … FOR. It only reads names, so
// it never fails: anything else returns nil.
func ddlTables(query, db string) []tableRef {
	toks := statement(tokenize(query))
	if len(toks) == 0 {
		return nil
	}
	p := &ddlParser{toks: toks, db: db}
	return p.parse()
}

// isTruncate reports whether a statement is a TRUNCATE [TABLE].
func isTruncate(query string) bool {
	toks := statement(tokenize(query))
	return len(toks) > 0 && !toks[0].quoted && strings.EqualFold(toks[0].text, "TRUNCATE")
}

// statement drops MariaDB's SET STATEMENT var=value[, …] FOR prefix from a
// statement's tokens (the binlog logs the statement with it): the
// statement is what follows the first FOR. Strings in the values are
// single tokens, so a FOR inside one does not count.
func statement(toks []token) []token {
	kw := func(t token, k string) bool { return !t.quoted && strings.EqualFold(t.text, k) }
	if len(toks) < 2 || !kw(toks[0], "SET") || !kw(toks[1], "STATEMENT") {
		return toks
	}
	for i := 2; i < len(toks); i++ {
		if kw(toks[i], "FOR") {
			return toks[i+1:]
		}
	}
	return nil
}

type ddlParser struct {
	toks []token
	i    int
	db   string
	out  []tableRef
}

type token struct {
	text   string // identifier text (unquoted) or the symbol
	quoted bool   // a `quoted` identifier: never a keyword
}

func (p *ddlParser) peekKw(kws ...string) bool {
	if p.i >= len(p.toks) || p.toks[p.i].quoted {
		return false
	}
	for _, k := range kws {
		if strings.EqualFold(p.toks[p.i].text, k) {
			return true
		}
	}
	return false
}

func (p *ddlParser) kw(kws ...string) bool {
	if p.peekKw(kws...) {
		p.i++
		return true
	}
	return false
}

// name reads [db.]table.
func (p *ddlParser) name() (tableRef, bool) {
	if p.i >= len(p.toks) {
		return tableRef{}, false
	}
	first := p.toks[p.i]
	if !first.quoted && !isIdent(first.text) {
		return tableRef{}, false
	}
	p.i++
	if p.i+1 < len(p.toks) && p.toks[p.i].text == "." && !p.toks[p.i].quoted {
		second := p.toks[p.i+1]
		p.i += 2
		return tableRef{db: first.text, name: second.text}, true
	}
	return tableRef{db: p.db, name: first.text}, true
}

func (p *ddlParser) add(r tableRef, ok bool) {
	if ok && r.name != "" {
		p.out = append(p.out, r)
	}
}

func (p *ddlParser) parse() []tableRef {
	switch {
	case p.kw("CREATE"):
		p.kw("OR")
		p.kw("REPLACE")
		p.kw("TEMPORARY")
		p.kw("ONLINE", "OFFLINE")
		p.kw("UNIQUE", "FULLTEXT", "SPATIAL")
		if p.kw("TABLE") {
			if p.kw("IF") {
				p.kw("NOT")
				p.kw("EXISTS")
			}
			p.add(p.name())
			return p.out
		}
		if p.kw("INDEX") {
			p.onTable()
		}
	case p.kw("ALTER"):
		p.kw("ONLINE", "OFFLINE")
		p.kw("IGNORE")
		if !p.kw("TABLE") {
			return nil
		}
		if p.kw("IF") {
			p.kw("EXISTS")
		}
		p.add(p.name())
		// A RENAME [TO|AS] inside an ALTER names the new table too.
		depth := 0
		for p.i < len(p.toks) {
			t := p.toks[p.i]
			switch {
			case !t.quoted && t.text == "(":
				depth++
			case !t.quoted && t.text == ")":
				depth--
			case depth == 0 && !t.quoted && strings.EqualFold(t.text, "RENAME"):
				p.i++
				if p.peekKw("COLUMN", "INDEX", "KEY") {
					continue
				}
				p.kw("TO", "AS")
				p.add(p.name())
				continue
			}
			p.i++
		}
	case p.kw("DROP"):
		p.kw("TEMPORARY")
		p.kw("ONLINE", "OFFLINE")
		if p.kw("TABLE", "TABLES") {
			if p.kw("IF") {
				p.kw("EXISTS")
			}
			for {
				p.add(p.name())
				if p.i < len(p.toks) && p.toks[p.i].text == "," && !p.toks[p.i].quoted {
					p.i++
					continue
				}
				break
			}
			return p.out
		}
		if p.kw("INDEX") {
			p.onTable()
		}
	case p.kw("RENAME"):
		if !p.kw("TABLE", "TABLES") {
			return nil
		}
		for {
			p.add(p.name())
			if !p.kw("TO") {
				break
			}
			p.add(p.name())
			if p.i < len(p.toks) && p.toks[p.i].text == "," && !p.toks[p.i].quoted {
				p.i++
				continue
			}
			break
		}
	case p.kw("TRUNCATE"):
		p.kw("TABLE")
		p.add(p.name())
	}
	return p.out
}

// onTable skips to ON and reads the table name after it.
func (p *ddlParser) onTable() {
	for p.i < len(p.toks) {
		if p.kw("ON") {
			p.add(p.name())
			return
		}
		p.i++
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80) {
			return false
		}
	}
	return true
}

// tokenize splits SQL into identifiers/keywords, `quoted` identifiers and
// one-character symbols, dropping comments, strings and whitespace.
func tokenize(q string) []token {
	var out []token
	i := 0
	for i < len(q) {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || (c == '-' && i+1 < len(q) && q[i+1] == '-'):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			// /*! versioned comments */ hold real SQL: read their content.
			if i+2 < len(q) && q[i+2] == '!' {
				i += 3
				for i < len(q) && q[i] >= '0' && q[i] <= '9' {
					i++
				}
				continue
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '*' && i+1 < len(q) && q[i+1] == '/':
			i += 2 // the end of a versioned comment
		case c == '`':
			var b strings.Builder
			i++
			for i < len(q) {
				if q[i] == '`' {
					if i+1 < len(q) && q[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(q[i])
				i++
			}
			out = append(out, token{text: b.String(), quoted: true})
		case c == '\'' || c == '"':
			i++
			for i < len(q) {
				if q[i] == '\\' {
					i += 2
					continue
				}
				if q[i] == c {
					if i+1 < len(q) && q[i+1] == c {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			out = append(out, token{text: "''"})
		case c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(q) && (q[j] == '_' || q[j] == '$' || q[j] >= '0' && q[j] <= '9' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= 0x80) {
				j++
			}
			out = append(out, token{text: q[i:j]})
			i = j
		default:
			out = append(out, token{text: q[i : i+1]})
			i++
		}
	}
	return out
}

// txStmt is what a query event's statement does to the transaction it is
// logged in (txStatement).
type txStmt int

const (
	txOther     txStmt = iota // a statement: DDL, or a change in statement format
	txSavepoint               // SAVEPOINT, ROLLBACK TO, RELEASE SAVEPOINT: the transaction goes on
	txRollback                // ROLLBACK: the transaction ends
)

// txStatement classifies a query event's statement other than BEGIN,
// COMMIT and XA: ROLLBACK [WORK] ends the transaction, the savepoint
// statements (SAVEPOINT s, ROLLBACK [WORK] TO [SAVEPOINT] s, RELEASE
// SAVEPOINT s) happen inside it.
func txStatement(query string) txStmt {
	toks := statement(tokenize(query))
	kw := func(i int, k string) bool {
		return i < len(toks) && !toks[i].quoted && strings.EqualFold(toks[i].text, k)
	}
	switch {
	case kw(0, "SAVEPOINT"), kw(0, "RELEASE") && kw(1, "SAVEPOINT"):
		return txSavepoint
	case kw(0, "ROLLBACK"):
		i := 1
		if kw(i, "WORK") {
			i++
		}
		if kw(i, "TO") {
			return txSavepoint
		}
		return txRollback
	}
	return txOther
}

// opensTransaction reports whether a statement leaves its transaction
// open: MySQL (8.0.21 on) logs the CREATE of an atomic CREATE TABLE …
// SELECT as CREATE TABLE … START TRANSACTION, followed by the rows it
// copied and an Xid event.
func opensTransaction(query string) bool {
	toks := statement(tokenize(query))
	n := len(toks)
	for n > 0 && !toks[n-1].quoted && toks[n-1].text == ";" {
		n--
	}
	kw := func(i int, k string) bool { return i >= 0 && !toks[i].quoted && strings.EqualFold(toks[i].text, k) }
	return n >= 3 && kw(0, "CREATE") && kw(n-2, "START") && kw(n-1, "TRANSACTION")
}
