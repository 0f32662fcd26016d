package sql

import (
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// maxDepth bounds the height of the trees the parser builds: nesting
// (parentheses, subqueries, unary operators) and links of operator chains
// ("a OR b OR ..." is a left-deep tree that later passes walk recursively).
// A level costs about a dozen small stack frames of recursive descent here
// and a few in the binder, so 5000 levels stay within tens of MiB of
// goroutine stack, far beyond hand-written or generated SQL (a 5000-term OR),
// while a hostile "((((...))))" gets a clear error instead of exhausting the
// stack.
const maxDepth = 5000

// parser is a recursive-descent parser over the tokens of one script
// (a tokenWindow: token i is toks.at(i)).
type parser struct {
	src   string
	toks  *tokenWindow
	i     int
	depth int
}

// Parse parses a script: statements separated by semicolons (a trailing
// semicolon is optional, empty statements are ignored). Errors are KindQuery
// errors giving line:column, the offending line and a caret.
func Parse(src string) (stmts []RawStmt, err error) {
	defer func() {
		if r := recover(); r != nil {
			// NB: a panic here is a parser bug; it must not take the server
			// down with it. The fuzz test treats this error as a failure.
			stmts, err = nil, nferr.Internalf("SQL parser bug (please report): %v", r)
		}
	}()
	toks, err := newTokenWindow(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	for {
		for p.acceptOp(";") {
		}
		if p.peek().kind == tokEOF {
			return stmts, nil
		}
		start := p.peek()
		st, err := p.parseStatement()
		if err != nil {
			return nil, err
		}
		if t := p.peek(); t.kind != tokEOF && !p.isOp(";") {
			return nil, p.errExpected("';' or end of input")
		}
		end := p.toks.at(p.i - 1).end
		stmts = append(stmts, RawStmt{Stmt: st, Start: start.pos, End: end, Text: src[start.pos.Offset:end]})
	}
}

// ParseOne parses a script that must hold exactly one statement.
func ParseOne(src string) (Statement, error) {
	stmts, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, nferr.Queryf("expected exactly one SQL statement, found %d", len(stmts))
	}
	return stmts[0].Stmt, nil
}

// ParseExpr parses a single scalar expression (used by tests and by tools
// that take a filter on the command line).
func ParseExpr(src string) (e Expr, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, nferr.Internalf("SQL parser bug (please report): %v", r)
		}
	}()
	toks, err := newTokenWindow(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	e, err = p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tokEOF {
		return nil, p.errExpected("end of expression")
	}
	return e, nil
}

// ---------------------------------------------------------------- token helpers

func (p *parser) peek() token { return p.toks.at(p.i) }

func (p *parser) peekAt(k int) token { return p.toks.at(p.i + k) }

func (p *parser) next() token {
	t := p.toks.at(p.i)
	if t.kind != tokEOF {
		p.i++
		p.toks.release(p.i)
	}
	return t
}

func isKwTok(t token, kw string) bool { return t.kind == tokIdent && !t.quoted && t.text == kw }

func (p *parser) isKw(kw string) bool { return isKwTok(p.peek(), kw) }

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kw string) (token, error) {
	if p.isKw(kw) {
		return p.next(), nil
	}
	return token{}, p.errExpected(strings.ToUpper(kw))
}

// acceptPhrase consumes a keyword phrase such as ORDER BY or IF NOT EXISTS:
// false, consuming nothing, when its first word is absent; an error naming
// the missing word when the first word is there and a later one is not.
func (p *parser) acceptPhrase(first string, rest ...string) (bool, error) {
	if !p.acceptKw(first) {
		return false, nil
	}
	for _, kw := range rest {
		if _, err := p.expectKw(kw); err != nil {
			return false, err
		}
	}
	return true, nil
}

// byClause parses an optional "<first> BY <list>" clause (ORDER BY,
// PARTITION BY, GROUP BY) with parse; the zero T when first is absent.
func byClause[T any](p *parser, first string, parse func() (T, error)) (T, error) {
	var zero T
	if ok, err := p.acceptPhrase(first, "by"); !ok || err != nil {
		return zero, err
	}
	return parse()
}

func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) (token, error) {
	if p.isOp(op) {
		return p.next(), nil
	}
	return token{}, p.errExpected("'" + op + "'")
}

// errExpected reports "expected <what>, found <next token>" at the next token.
func (p *parser) errExpected(what string) error {
	t := p.peek()
	return syntaxErrorAt(p.src, t.pos, "expected %s, found %s", what, t.describe())
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return syntaxErrorAt(p.src, t.pos, format, args...)
}

// enter counts one level of nesting; callers restore p.depth when done.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return syntaxErrorAt(p.src, p.peek().pos, "expression or query nested too deeply (more than %d levels)", maxDepth)
	}
	return nil
}

// isName reports whether t can be a name: a quoted identifier or an
// unreserved word.
func isName(t token) bool { return t.kind == tokIdent && (t.quoted || !IsReserved(t.text)) }

func (p *parser) parseIdent(what string) (Ident, error) {
	t := p.peek()
	if !isName(t) {
		return Ident{}, p.errExpected(what)
	}
	p.next()
	return Ident{Pos: t.pos, Name: t.text, Quoted: t.quoted}, nil
}

// parseLabel parses a name after AS, where PostgreSQL allows any word,
// reserved or not.
func (p *parser) parseLabel(what string) (Ident, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return Ident{}, p.errExpected(what)
	}
	p.next()
	return Ident{Pos: t.pos, Name: t.text, Quoted: t.quoted}, nil
}

func (p *parser) parseObjName(what string) (ObjName, error) {
	first, err := p.parseIdent(what)
	if err != nil {
		return ObjName{}, err
	}
	n := ObjName{Pos: first.Pos, Parts: []Ident{first}}
	for p.isOp(".") && p.peekAt(1).kind == tokIdent {
		p.next()
		id, err := p.parseLabel(what)
		if err != nil {
			return ObjName{}, err
		}
		n.Parts = append(n.Parts, id)
	}
	return n, nil
}

// parseIdentList parses "(a, b, ...)".
func (p *parser) parseIdentList(what string) ([]Ident, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var ids []Ident
	for {
		id, err := p.parseIdent(what)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return ids, nil
}

func (p *parser) parseString(what string) (string, error) {
	t := p.peek()
	if t.kind != tokString {
		return "", p.errExpected(what)
	}
	p.next()
	return t.text, nil
}

// maxParenLookahead bounds how many opening parentheses startsQuery looks
// through, so that "((((...(" costs linear time; deeper nesting is decided
// level by level as the parser descends.
const maxParenLookahead = 32

// startsQuery reports whether the token at k starts a query (SELECT, WITH,
// VALUES), looking through opening parentheses.
func (p *parser) startsQuery(k int) bool {
	for n := 0; n < maxParenLookahead && p.peekAt(k).kind == tokOp && p.peekAt(k).text == "("; n++ {
		k++
	}
	t := p.peekAt(k)
	return isKwTok(t, "select") || isKwTok(t, "with") || isKwTok(t, "values")
}

// ---------------------------------------------------------------- statements

func (p *parser) parseStatement() (Statement, error) {
	t := p.peek()
	switch {
	case isKwTok(t, "select"), isKwTok(t, "with"), isKwTok(t, "values"), t.kind == tokOp && t.text == "(":
		return p.parseQuery()
	case isKwTok(t, "create"):
		return p.parseCreate()
	case isKwTok(t, "drop"):
		return p.parseDrop()
	case isKwTok(t, "insert"), isKwTok(t, "replace") && isKwTok(p.peekAt(1), "into"):
		return p.parseInsert()
	case isKwTok(t, "delete"):
		return p.parseDelete()
	case isKwTok(t, "update"):
		return p.parseUpdate()
	case isKwTok(t, "copy"):
		return p.parseCopy()
	case isKwTok(t, "explain"):
		return p.parseExplain()
	case isKwTok(t, "show"):
		p.next()
		if p.isKw("tables") {
			p.next()
			return &ShowTables{Pos: t.pos}, nil
		}
		name, err := p.parseLabel("TABLES or a setting name")
		if err != nil {
			return nil, err
		}
		// PostgreSQL's spelled-out settings: SHOW TRANSACTION ISOLATION
		// LEVEL (transaction_isolation), SHOW TIME ZONE (timezone).
		switch n := strings.ToLower(name.Name); {
		case !name.Quoted && n == "transaction" && p.isKw("isolation"):
			p.next()
			if _, err := p.expectKw("level"); err != nil {
				return nil, err
			}
			name.Name = "transaction_isolation"
		case !name.Quoted && n == "time" && p.isKw("zone"):
			p.next()
			name.Name = "timezone"
		}
		return &Show{Pos: t.pos, Name: name}, nil
	case isKwTok(t, "describe"):
		p.next()
		name, err := p.parseObjName("a table name")
		if err != nil {
			return nil, err
		}
		return &Describe{Pos: t.pos, Name: name}, nil
	case isKwTok(t, "set"):
		return p.parseSet()
	case isKwTok(t, "analyze"), isKwTok(t, "analyse"):
		return p.parseAnalyze()
	case isKwTok(t, "begin"), isKwTok(t, "start") && isKwTok(p.peekAt(1), "transaction"),
		isKwTok(t, "commit"), isKwTok(t, "end"), isKwTok(t, "rollback"), isKwTok(t, "abort"):
		return p.parseTransaction()
	case isKwTok(t, "reset"):
		// RESET name: SET name TO DEFAULT.
		start := p.next()
		name, err := p.parseLabel("a setting name")
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(name.Name, "time") && isKwTok(p.peek(), "zone") {
			p.next()
			name.Name = "timezone"
		}
		return &Set{Pos: start.pos, Name: name, Value: &ColumnRef{Pos: name.Pos, Parts: []Ident{{Pos: name.Pos, Name: "default"}}}}, nil
	}
	return nil, p.errExpected("a statement (SELECT, WITH, VALUES, CREATE, DROP, INSERT, UPDATE, DELETE, COPY, EXPLAIN, SHOW, DESCRIBE, SET or ANALYZE)")
}

// parseReturning parses an optional RETURNING select list.
func (p *parser) parseReturning() ([]*SelectItem, error) {
	if !p.acceptKw("returning") {
		return nil, nil
	}
	return commaList(p, p.parseSelectItem)
}

// parseTargetTable parses "name [[AS] alias]" of UPDATE and DELETE.
func (p *parser) parseTargetTable() (*TableName, error) {
	start := p.peek()
	name, err := p.parseObjName("a table name")
	if err != nil {
		return nil, err
	}
	t := &TableName{Pos: start.pos, Name: name}
	if p.acceptKw("as") || (isName(p.peek()) && !p.isKw("set") && !p.isKw("where") && !p.isKw("using")) {
		alias, err := p.parseIdent("an alias")
		if err != nil {
			return nil, err
		}
		t.Alias = &TableAlias{Pos: alias.Pos, Name: alias}
	}
	return t, nil
}

func (p *parser) parseDelete() (Statement, error) {
	start := p.next() // DELETE
	if _, err := p.expectKw("from"); err != nil {
		return nil, err
	}
	t, err := p.parseTargetTable()
	if err != nil {
		return nil, err
	}
	d := &Delete{Pos: start.pos, Table: t}
	if p.acceptKw("using") {
		if d.Using, err = p.parseFromList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("where") {
		if d.Where, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if d.Returning, err = p.parseReturning(); err != nil {
		return nil, err
	}
	return d, nil
}

// parseAssignments parses "col = expr, ..." (UPDATE's and ON CONFLICT DO
// UPDATE's SET list).
func (p *parser) parseAssignments() ([]*Assignment, error) {
	var set []*Assignment
	for {
		col, err := p.parseIdent("a column name")
		if err != nil {
			return nil, err
		}
		if p.isOp(".") {
			return nil, p.errAt(p.peek(), "a SET column is not qualified by its table")
		}
		if _, err := p.expectOp("="); err != nil {
			return nil, err
		}
		a := &Assignment{Pos: col.Pos, Column: col}
		if a.Value, err = p.parseExpr(); err != nil {
			return nil, err
		}
		set = append(set, a)
		if !p.acceptOp(",") {
			return set, nil
		}
	}
}

func (p *parser) parseUpdate() (Statement, error) {
	start := p.next() // UPDATE
	t, err := p.parseTargetTable()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectKw("set"); err != nil {
		return nil, err
	}
	u := &Update{Pos: start.pos, Table: t}
	if u.Set, err = p.parseAssignments(); err != nil {
		return nil, err
	}
	if p.acceptKw("from") {
		if u.From, err = p.parseFromList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("where") {
		if u.Where, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if u.Returning, err = p.parseReturning(); err != nil {
		return nil, err
	}
	return u, nil
}

func (p *parser) parseCreate() (Statement, error) {
	start := p.next() // CREATE
	orReplace, err := p.acceptPhrase("or", "replace")
	if err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("view"):
		name, err := p.parseObjName("a view name")
		if err != nil {
			return nil, err
		}
		v := &CreateView{Pos: start.pos, OrReplace: orReplace, Name: name}
		if p.isOp("(") {
			if v.Columns, err = p.parseIdentList("a column name"); err != nil {
				return nil, err
			}
		}
		if _, err := p.expectKw("as"); err != nil {
			return nil, err
		}
		if v.Query, err = p.parseQuery(); err != nil {
			return nil, err
		}
		return v, nil
	case orReplace:
		return nil, p.errExpected("VIEW")
	case p.acceptKw("table"):
		return p.parseCreateTable(start)
	case p.isKw("index") || p.isKw("unique"):
		return p.parseCreateIndex(start)
	case p.acceptKw("external"):
		if _, err := p.expectKw("table"); err != nil {
			return nil, err
		}
		return p.parseCreateExternal(start)
	}
	return nil, p.errExpected("VIEW, TABLE, INDEX or EXTERNAL TABLE")
}

// parseCreateIndex parses the rest of CREATE [UNIQUE] INDEX [IF NOT
// EXISTS] [name] ON table [USING method] (column [ASC|DESC], ...).
func (p *parser) parseCreateIndex(start token) (Statement, error) {
	ci := &CreateIndex{Pos: start.pos, Unique: p.acceptKw("unique")}
	if _, err := p.expectKw("index"); err != nil {
		return nil, err
	}
	var err error
	if ci.IfNotExists, err = p.acceptPhrase("if", "not", "exists"); err != nil {
		return nil, err
	}
	if !p.isKw("on") {
		if ci.Name, err = p.parseIdent("an index name"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("on"); err != nil {
		return nil, err
	}
	if ci.Table, err = p.parseObjName("a table name"); err != nil {
		return nil, err
	}
	if p.acceptKw("using") {
		if _, err := p.parseIdent("an index method"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	for {
		c, err := p.parseIdent("a column name")
		if err != nil {
			return nil, err
		}
		ci.Columns = append(ci.Columns, c)
		if !p.acceptKw("asc") {
			p.acceptKw("desc")
		}
		if p.acceptKw("nulls") {
			if !p.acceptKw("first") {
				if _, err := p.expectKw("last"); err != nil {
					return nil, err
				}
			}
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return ci, nil
}

func (p *parser) parseCreateTable(start token) (Statement, error) {
	ifNot, err := p.acceptPhrase("if", "not", "exists")
	if err != nil {
		return nil, err
	}
	name, err := p.parseObjName("a table name")
	if err != nil {
		return nil, err
	}
	ct := &CreateTable{Pos: start.pos, IfNotExists: ifNot, Name: name}
	if p.isOp("(") && !p.startsQuery(1) {
		p.next()
		typed := 0
		for {
			if p.isKw("constraint") || p.isKw("primary") || p.isKw("unique") || p.isKw("check") || p.isKw("foreign") {
				tc, err := p.parseTableConstraint()
				if err != nil {
					return nil, err
				}
				ct.Constraints = append(ct.Constraints, tc)
			} else {
				cd, cons, err := p.parseColumnDefConstraints(true)
				if err != nil {
					return nil, err
				}
				if cd.Type != nil {
					typed++
				}
				ct.Columns = append(ct.Columns, cd)
				ct.Constraints = append(ct.Constraints, cons...)
			}
			if !p.acceptOp(",") {
				break
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if !p.isKw("as") {
			if len(ct.Columns) == 0 {
				return nil, p.errAt(p.peek(), "CREATE TABLE needs at least one column")
			}
			for _, cd := range ct.Columns {
				if cd.Type == nil {
					return nil, syntaxErrorAt(p.src, cd.Name.Pos, "column %s needs a type", cd.Name.Name)
				}
			}
			return ct, nil
		}
		if len(ct.Constraints) > 0 {
			return nil, syntaxErrorAt(p.src, ct.Constraints[0].Pos, "CREATE TABLE ... AS takes no constraints")
		}
		if typed > 0 {
			for _, cd := range ct.Columns {
				if cd.Type != nil {
					return nil, syntaxErrorAt(p.src, cd.Type.Pos, "CREATE TABLE ... AS takes column names only, not types")
				}
			}
		}
		for _, cd := range ct.Columns {
			ct.ColumnNames = append(ct.ColumnNames, cd.Name)
		}
		ct.Columns = nil
	}
	if _, err := p.expectKw("as"); err != nil {
		if len(ct.ColumnNames) == 0 {
			return nil, p.errExpected("'(' or AS")
		}
		return nil, err
	}
	if ct.AsQuery, err = p.parseQuery(); err != nil {
		return nil, err
	}
	return ct, nil
}

// parseColumnDef parses "name type [NOT NULL | NULL]" (CREATE EXTERNAL
// TABLE: no other constraint).
func (p *parser) parseColumnDef(typeOptional bool) (*ColumnDef, error) {
	cd, cons, err := p.parseColumnDefConstraints(typeOptional)
	if err != nil {
		return nil, err
	}
	if len(cons) > 0 || cd.Default != nil {
		return nil, syntaxErrorAt(p.src, cd.Pos, "column %s: an external table's columns take no constraints but NOT NULL", cd.Name.Name)
	}
	return cd, nil
}

// parseColumnDefConstraints parses "name type [column constraint ...]"
// with the constraints [CONSTRAINT name] NOT NULL | NULL | DEFAULT expr |
// PRIMARY KEY | UNIQUE | CHECK (expr); the last three come back as table
// constraints on the column. With typeOptional the type may be missing
// (CREATE TABLE t (a, b) AS ...).
func (p *parser) parseColumnDefConstraints(typeOptional bool) (*ColumnDef, []*TableConstraint, error) {
	name, err := p.parseIdent("a column name")
	if err != nil {
		return nil, nil, err
	}
	cd := &ColumnDef{Pos: name.Pos, Name: name}
	if typeOptional && (p.isOp(",") || p.isOp(")")) {
		return cd, nil, nil
	}
	if cd.Type, err = p.parseType(); err != nil {
		return nil, nil, err
	}
	var cons []*TableConstraint
	for {
		start := p.peek()
		var cname Ident
		if p.acceptKw("constraint") {
			if cname, err = p.parseIdent("a constraint name"); err != nil {
				return nil, nil, err
			}
		}
		switch {
		case p.isKw("not"):
			p.next()
			if _, err := p.expectKw("null"); err != nil {
				return nil, nil, err
			}
			cd.NotNull = true
		case p.isKw("null"):
			p.next()
		case p.isKw("default"):
			p.next()
			if cd.Default != nil {
				return nil, nil, p.errAt(start, "multiple default values specified for column %s", name.Name)
			}
			// A DEFAULT is a b_expr in PostgreSQL: no NOT or comparisons
			// at its top (they would read the next constraint).
			if cd.Default, err = p.parseOther(); err != nil {
				return nil, nil, err
			}
		case p.isKw("primary"):
			p.next()
			if _, err := p.expectKw("key"); err != nil {
				return nil, nil, err
			}
			if !p.acceptKw("asc") {
				p.acceptKw("desc")
			}
			cons = append(cons, &TableConstraint{Pos: start.pos, Name: cname, Kind: ConPrimaryKey, Columns: []Ident{name}})
		case p.isKw("unique"):
			p.next()
			cons = append(cons, &TableConstraint{Pos: start.pos, Name: cname, Kind: ConUnique, Columns: []Ident{name}})
		case p.isKw("check"):
			p.next()
			e, err := p.parseParenExpr()
			if err != nil {
				return nil, nil, err
			}
			cons = append(cons, &TableConstraint{Pos: start.pos, Name: cname, Kind: ConCheck, Check: e})
		case p.isKw("references"):
			p.next()
			tc := &TableConstraint{Pos: start.pos, Name: cname, Kind: ConForeignKey, Columns: []Ident{name}}
			if err := p.parseReferences(tc); err != nil {
				return nil, nil, err
			}
			cons = append(cons, tc)
		case p.isKw("collate") || p.isKw("generated"):
			return nil, nil, p.errAt(p.peek(), "column constraint %s is not supported", strings.ToUpper(p.peek().text))
		default:
			if cname.Name != "" {
				return nil, nil, p.errExpected("NOT NULL, NULL, DEFAULT, PRIMARY KEY, UNIQUE, CHECK or REFERENCES")
			}
			return cd, cons, nil
		}
	}
}

// parseTableConstraint parses [CONSTRAINT name] PRIMARY KEY (columns) |
// UNIQUE (columns) | CHECK (expr) | FOREIGN KEY (columns) REFERENCES ...
// in a CREATE TABLE's list.
func (p *parser) parseTableConstraint() (*TableConstraint, error) {
	start := p.peek()
	tc := &TableConstraint{Pos: start.pos}
	var err error
	if p.acceptKw("constraint") {
		if tc.Name, err = p.parseIdent("a constraint name"); err != nil {
			return nil, err
		}
	}
	switch {
	case p.acceptKw("primary"):
		if _, err := p.expectKw("key"); err != nil {
			return nil, err
		}
		tc.Kind = ConPrimaryKey
	case p.acceptKw("unique"):
		tc.Kind = ConUnique
	case p.acceptKw("check"):
		tc.Kind = ConCheck
		if tc.Check, err = p.parseParenExpr(); err != nil {
			return nil, err
		}
		return tc, nil
	case p.acceptKw("foreign"):
		if _, err := p.expectKw("key"); err != nil {
			return nil, err
		}
		tc.Kind = ConForeignKey
		if tc.Columns, err = p.parseIdentList("a column name"); err != nil {
			return nil, err
		}
		if _, err := p.expectKw("references"); err != nil {
			return nil, err
		}
		return tc, p.parseReferences(tc)
	default:
		return nil, p.errExpected("PRIMARY KEY, UNIQUE, CHECK or FOREIGN KEY")
	}
	if tc.Columns, err = p.parseIdentList("a column name"); err != nil {
		return nil, err
	}
	return tc, nil
}

// parseReferences parses what follows REFERENCES: table [(columns)]
// [MATCH FULL | MATCH SIMPLE] [ON DELETE action] [ON UPDATE action]
// [[NOT] DEFERRABLE] [INITIALLY DEFERRED | INITIALLY IMMEDIATE], the
// action one of NO ACTION, RESTRICT, CASCADE, SET NULL, SET DEFAULT.
func (p *parser) parseReferences(tc *TableConstraint) error {
	var err error
	if tc.RefTable, err = p.parseObjName("a table name"); err != nil {
		return err
	}
	if p.isOp("(") {
		if tc.RefColumns, err = p.parseIdentList("a column name"); err != nil {
			return err
		}
	}
	tc.OnDelete, tc.OnUpdate = "NO ACTION", "NO ACTION"
	for {
		switch {
		case p.acceptKw("match"):
			switch {
			case p.acceptKw("full"):
				tc.MatchFull = true
			case p.acceptKw("simple"):
			default:
				return p.errExpected("FULL or SIMPLE")
			}
		case p.acceptKw("on"):
			var which *string
			switch {
			case p.acceptKw("delete"):
				which = &tc.OnDelete
			case p.acceptKw("update"):
				which = &tc.OnUpdate
			default:
				return p.errExpected("DELETE or UPDATE")
			}
			switch {
			case p.acceptKw("restrict"):
				*which = "RESTRICT"
			case p.acceptKw("cascade"):
				*which = "CASCADE"
			case p.acceptKw("no"):
				if _, err := p.expectKw("action"); err != nil {
					return err
				}
				*which = "NO ACTION"
			case p.acceptKw("set"):
				switch {
				case p.acceptKw("null"):
					*which = "SET NULL"
				case p.acceptKw("default"):
					*which = "SET DEFAULT"
				default:
					return p.errExpected("NULL or DEFAULT")
				}
			default:
				return p.errExpected("NO ACTION, RESTRICT, CASCADE, SET NULL or SET DEFAULT")
			}
		case p.isKw("not") && isKwTok(p.peekAt(1), "deferrable"):
			p.next()
			p.next()
		case p.acceptKw("deferrable"):
		case p.acceptKw("initially"):
			if !p.acceptKw("deferred") {
				if _, err := p.expectKw("immediate"); err != nil {
					return err
				}
			}
		default:
			return nil
		}
	}
}

// parseParenExpr parses "(" expr ")".
func (p *parser) parseParenExpr() (Expr, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return e, nil
}

func (p *parser) parseCreateExternal(start token) (Statement, error) {
	ifNot, err := p.acceptPhrase("if", "not", "exists")
	if err != nil {
		return nil, err
	}
	name, err := p.parseObjName("a table name")
	if err != nil {
		return nil, err
	}
	ce := &CreateExternalTable{Pos: start.pos, IfNotExists: ifNot, Name: name}
	if p.acceptOp("(") {
		for {
			cd, err := p.parseColumnDef(false)
			if err != nil {
				return nil, err
			}
			ce.Columns = append(ce.Columns, cd)
			if !p.acceptOp(",") {
				break
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("stored"); err != nil {
		return nil, err
	}
	if _, err := p.expectKw("as"); err != nil {
		return nil, err
	}
	f, err := p.parseLabel("a file format (PARQUET)")
	if err != nil {
		return nil, err
	}
	ce.Format = strings.ToLower(f.Name)
	if _, err := p.expectKw("location"); err != nil {
		return nil, err
	}
	if ce.Location, err = p.parseString("a location string"); err != nil {
		return nil, err
	}
	return ce, nil
}

func (p *parser) parseDrop() (Statement, error) {
	start := p.next() // DROP
	d := &Drop{Pos: start.pos}
	switch {
	case p.acceptKw("table"):
		d.Kind = ObjTable
	case p.acceptKw("view"):
		d.Kind = ObjView
	case p.acceptKw("index"):
		d.Kind = ObjIndex
	default:
		return nil, p.errExpected("TABLE, VIEW or INDEX")
	}
	var err error
	if d.IfExists, err = p.acceptPhrase("if", "exists"); err != nil {
		return nil, err
	}
	for {
		n, err := p.parseObjName("a name")
		if err != nil {
			return nil, err
		}
		d.Names = append(d.Names, n)
		if !p.acceptOp(",") {
			break
		}
	}
	if p.isKw("cascade") || p.isKw("restrict") {
		return nil, p.errAt(p.peek(), "DROP ... %s is not supported", strings.ToUpper(p.peek().text))
	}
	return d, nil
}

func (p *parser) parseInsert() (Statement, error) {
	start := p.next() // INSERT, or REPLACE (INTO)
	or := ""
	if isKwTok(start, "replace") {
		or = "replace"
	} else if p.acceptKw("or") {
		t := p.next()
		switch {
		case isKwTok(t, "replace"), isKwTok(t, "ignore"), isKwTok(t, "abort"), isKwTok(t, "fail"), isKwTok(t, "rollback"):
			or = t.text
		default:
			p.i--
			return nil, p.errExpected("REPLACE, IGNORE, ABORT, FAIL or ROLLBACK")
		}
	}
	if _, err := p.expectKw("into"); err != nil {
		return nil, err
	}
	name, err := p.parseObjName("a table name")
	if err != nil {
		return nil, err
	}
	ins := &Insert{Pos: start.pos, Table: name, OrReplace: or == "replace"}
	if or == "ignore" {
		ins.OnConflict = &OnConflict{Pos: start.pos}
	}
	if p.isOp("(") && !p.startsQuery(1) {
		if ins.Columns, err = p.parseIdentList("a column name"); err != nil {
			return nil, err
		}
	}
	if !p.startsQuery(0) {
		return nil, p.errExpected("SELECT, VALUES or a column list")
	}
	if ins.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	if p.isKw("on") {
		if or != "" {
			return nil, p.errAt(p.peek(), "INSERT OR %s cannot have an ON CONFLICT clause", strings.ToUpper(or))
		}
		oc := &OnConflict{Pos: p.next().pos}
		if _, err := p.expectKw("conflict"); err != nil {
			return nil, err
		}
		if p.isOp("(") {
			if oc.Columns, err = p.parseIdentList("a column name"); err != nil {
				return nil, err
			}
		} else if p.acceptKw("on") {
			if _, err := p.expectKw("constraint"); err != nil {
				return nil, err
			}
			if oc.Constraint, err = p.parseIdent("a constraint name"); err != nil {
				return nil, err
			}
		}
		if _, err := p.expectKw("do"); err != nil {
			return nil, err
		}
		if p.acceptKw("update") {
			if _, err := p.expectKw("set"); err != nil {
				return nil, err
			}
			if oc.Set, err = p.parseAssignments(); err != nil {
				return nil, err
			}
			if p.acceptKw("where") {
				if oc.Where, err = p.parseExpr(); err != nil {
					return nil, err
				}
			}
		} else if _, err := p.expectKw("nothing"); err != nil {
			return nil, err
		}
		ins.OnConflict = oc
	}
	if ins.Returning, err = p.parseReturning(); err != nil {
		return nil, err
	}
	return ins, nil
}

func (p *parser) parseCopy() (Statement, error) {
	start := p.next() // COPY
	c := &Copy{Pos: start.pos}
	var err error
	if p.isOp("(") {
		// COPY (query) TO 'file'
		p.next()
		if c.Query, err = p.parseQuery(); err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if !p.isKw("to") {
			return nil, p.errExpected("TO after COPY (query)")
		}
	} else {
		if c.Table, err = p.parseObjName("a table name or '('"); err != nil {
			return nil, err
		}
		if p.isOp("(") {
			if c.Columns, err = p.parseIdentList("a column name"); err != nil {
				return nil, err
			}
		}
	}
	if p.acceptKw("to") {
		c.To = true
	} else if _, err := p.expectKw("from"); err != nil {
		return nil, err
	}
	switch {
	case c.To && p.acceptKw("stdout"), !c.To && p.acceptKw("stdin"):
		c.Stdio = true
	case p.isKw("stdin"), p.isKw("stdout"):
		return nil, p.errExpected("FROM STDIN or TO STDOUT")
	default:
		if c.File, err = p.parseString("a file name string, STDIN or STDOUT"); err != nil {
			return nil, err
		}
	}
	p.acceptKw("with")
	if p.isOp("(") {
		if c.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
		return c, nil
	}
	if c.Options, err = p.parseLegacyCopyOptions(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseTransaction parses BEGIN [WORK | TRANSACTION] [modes], START
// TRANSACTION [modes], COMMIT | END [WORK | TRANSACTION] [AND NO CHAIN],
// ROLLBACK | ABORT [WORK | TRANSACTION] [AND NO CHAIN]. Modes: ISOLATION
// LEVEL {SERIALIZABLE | REPEATABLE READ | READ COMMITTED | READ
// UNCOMMITTED}, READ WRITE | READ ONLY, [NOT] DEFERRABLE, separated by
// commas or not.
func (p *parser) parseTransaction() (Statement, error) {
	t := p.next()
	x := &Transaction{Pos: t.pos}
	switch t.text {
	case "begin", "start":
		x.Op = "begin"
		if t.text == "start" {
			p.next() // TRANSACTION
		} else if !p.acceptKw("work") {
			p.acceptKw("transaction")
		}
		for {
			switch {
			case p.acceptKw("isolation"):
				if _, err := p.expectKw("level"); err != nil {
					return nil, err
				}
				switch {
				case p.acceptKw("serializable"):
					x.Isolation = "serializable"
				case p.acceptKw("repeatable"):
					if _, err := p.expectKw("read"); err != nil {
						return nil, err
					}
					x.Isolation = "repeatable read"
				case p.acceptKw("read"):
					switch {
					case p.acceptKw("committed"):
						x.Isolation = "read committed"
					case p.acceptKw("uncommitted"):
						x.Isolation = "read uncommitted"
					default:
						return nil, p.errExpected("COMMITTED or UNCOMMITTED")
					}
				default:
					return nil, p.errExpected("an isolation level")
				}
			case p.isKw("read") && isKwTok(p.peekAt(1), "only"):
				p.next()
				p.next()
				x.ReadOnly = true
			case p.isKw("read") && isKwTok(p.peekAt(1), "write"):
				p.next()
				p.next()
			case p.acceptKw("deferrable"):
			case p.isKw("not") && isKwTok(p.peekAt(1), "deferrable"):
				p.next()
				p.next()
			default:
				return x, nil
			}
			if p.isOp(",") {
				p.next()
			}
		}
	case "commit", "end":
		x.Op = "commit"
	default:
		x.Op = "rollback"
	}
	if !p.acceptKw("work") {
		p.acceptKw("transaction")
	}
	if p.acceptKw("and") {
		if p.acceptKw("no") {
			if _, err := p.expectKw("chain"); err != nil {
				return nil, err
			}
		} else {
			return nil, p.errExpected("NO CHAIN (AND CHAIN is not supported)")
		}
	}
	return x, nil
}

// parseLegacyCopyOptions parses COPY's options in PostgreSQL's older
// syntax, without parentheses, which psql's \copy sends: BINARY, CSV,
// HEADER, DELIMITER [AS] 'c', NULL [AS] 'x', QUOTE [AS] 'q' and ESCAPE
// [AS] 'e', as the options FORMAT binary/csv, HEADER, ... .
func (p *parser) parseLegacyCopyOptions() ([]*Option, error) {
	var opts []*Option
	for {
		t := p.peek()
		switch {
		case isKwTok(t, "binary"), isKwTok(t, "csv"):
			p.next()
			opts = append(opts, &Option{Pos: t.pos, Name: "format", Value: &Literal{Pos: t.pos, Kind: LitString, Text: t.text}})
		case isKwTok(t, "header"):
			p.next()
			opts = append(opts, &Option{Pos: t.pos, Name: "header"})
		case isKwTok(t, "delimiter"), isKwTok(t, "null"), isKwTok(t, "quote"), isKwTok(t, "escape"):
			p.next()
			p.acceptKw("as")
			v := p.peek()
			text, err := p.parseString("a string after " + strings.ToUpper(t.text))
			if err != nil {
				return nil, err
			}
			opts = append(opts, &Option{Pos: t.pos, Name: t.text, Value: &Literal{Pos: v.pos, Kind: LitString, Text: text}})
		default:
			return opts, nil
		}
	}
}

// parseOptions parses "(name [value], ...)" where value is a string, a
// (signed) number or a word.
func (p *parser) parseOptions() ([]*Option, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var opts []*Option
	for {
		t := p.peek()
		if t.kind != tokIdent {
			return nil, p.errExpected("an option name")
		}
		p.next()
		o := &Option{Pos: t.pos, Name: t.text}
		if !p.isOp(",") && !p.isOp(")") {
			v := p.peek()
			switch {
			case v.kind == tokString:
				p.next()
				o.Value = &Literal{Pos: v.pos, Kind: LitString, Text: v.text}
			case v.kind == tokNumber:
				p.next()
				o.Value = &Literal{Pos: v.pos, Kind: LitNumber, Text: v.text}
			case isKwTok(v, "true"), isKwTok(v, "false"):
				p.next()
				o.Value = &Literal{Pos: v.pos, Kind: LitBool, Text: v.text}
			case v.kind == tokIdent:
				p.next()
				o.Value = &ColumnRef{Pos: v.pos, Parts: []Ident{{Pos: v.pos, Name: v.text, Quoted: v.quoted}}}
			default:
				return nil, p.errExpected("an option value")
			}
		}
		opts = append(opts, o)
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return opts, nil
}

func (p *parser) parseExplain() (Statement, error) {
	start := p.next() // EXPLAIN
	e := &Explain{Pos: start.pos}
	if p.isOp("(") && !p.startsQuery(1) {
		opts, err := p.parseOptions()
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			on := true
			if o.Value != nil {
				b, ok := optionBool(o.Value)
				if !ok {
					return nil, syntaxErrorAt(p.src, o.Value.Position(), "EXPLAIN option %s takes a boolean", strings.ToUpper(o.Name))
				}
				on = b
			}
			switch o.Name {
			case "analyze", "analyse":
				e.Analyze = on
			case "verbose":
				e.Verbose = on
			default:
				return nil, syntaxErrorAt(p.src, o.Pos, "unknown EXPLAIN option %s (want ANALYZE or VERBOSE)", strings.ToUpper(o.Name))
			}
		}
	} else {
		if p.acceptKw("analyze") || p.acceptKw("analyse") {
			e.Analyze = true
		}
		if p.acceptKw("verbose") {
			e.Verbose = true
		}
	}
	st, err := p.parseStatement()
	if err != nil {
		return nil, err
	}
	e.Stmt = st
	return e, nil
}

// parseAnalyze parses ANALYZE [VERBOSE] [table [(column, ...)] [, ...]]
// or ANALYZE (option [value], ...) [table ...]. As in PostgreSQL, a bare
// VERBOSE right after ANALYZE is the option: a table of that name is
// written "verbose".
func (p *parser) parseAnalyze() (Statement, error) {
	start := p.next() // ANALYZE
	a := &Analyze{Pos: start.pos}
	if p.isOp("(") {
		opts, err := p.parseOptions()
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			var flag *bool
			switch o.Name {
			case "verbose":
				flag = &a.Verbose
			case "skip_locked":
				flag = &a.SkipLocked
			default:
				return nil, syntaxErrorAt(p.src, o.Pos, "unknown ANALYZE option %s (want VERBOSE or SKIP_LOCKED)", strings.ToUpper(o.Name))
			}
			*flag = true
			if o.Value != nil {
				b, ok := optionBool(o.Value)
				if !ok {
					return nil, syntaxErrorAt(p.src, o.Value.Position(), "ANALYZE option %s takes a boolean", strings.ToUpper(o.Name))
				}
				*flag = b
			}
		}
	} else if p.acceptKw("verbose") {
		a.Verbose = true
	}
	if p.peek().kind == tokEOF || p.isOp(";") {
		return a, nil
	}
	for {
		t := p.peek()
		name, err := p.parseObjName("a table name")
		if err != nil {
			return nil, err
		}
		at := &AnalyzeTable{Pos: t.pos, Name: name}
		if p.isOp("(") {
			if at.Columns, err = p.parseIdentList("a column name"); err != nil {
				return nil, err
			}
		}
		a.Tables = append(a.Tables, at)
		if !p.acceptOp(",") {
			return a, nil
		}
	}
}

// optionBool reads a boolean option value: true/false, on/off, 1/0.
func optionBool(e Expr) (bool, bool) {
	switch v := e.(type) {
	case *Literal:
		switch {
		case v.Kind == LitBool:
			return v.Text == "true", true
		case v.Kind == LitNumber && (v.Text == "0" || v.Text == "1"):
			return v.Text == "1", true
		}
	case *ColumnRef:
		switch v.Parts[0].Name {
		case "on":
			return true, true
		case "off":
			return false, true
		}
	}
	return false, false
}

func (p *parser) parseSet() (Statement, error) {
	start := p.next() // SET
	name, err := p.parseLabel("a setting name")
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(name.Name, "time") && isKwTok(p.peek(), "zone") {
		// SET TIME ZONE 'UTC' (PostgreSQL): TimeZone, without '=' or TO.
		p.next()
		name.Name = "timezone"
	} else if !p.acceptOp("=") && !p.acceptKw("to") {
		return nil, p.errExpected("'=' or TO")
	}
	s := &Set{Pos: start.pos, Name: name}
	v := p.peek()
	switch {
	case v.kind == tokString:
		p.next()
		s.Value = &Literal{Pos: v.pos, Kind: LitString, Text: v.text}
	case v.kind == tokNumber:
		p.next()
		s.Value = &Literal{Pos: v.pos, Kind: LitNumber, Text: v.text}
	case v.kind == tokOp && (v.text == "-" || v.text == "+") && p.peekAt(1).kind == tokNumber:
		p.next()
		n := p.next()
		s.Value = &UnaryExpr{Pos: v.pos, Op: v.text, X: &Literal{Pos: n.pos, Kind: LitNumber, Text: n.text}}
	case isKwTok(v, "true"), isKwTok(v, "false"):
		p.next()
		s.Value = &Literal{Pos: v.pos, Kind: LitBool, Text: v.text}
	case isKwTok(v, "interval") && strings.EqualFold(name.Name, "timezone"):
		// SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE: an offset east.
		p.next()
		str := p.peek()
		if str.kind != tokString {
			return nil, p.errExpected("a string after INTERVAL")
		}
		p.next()
		for isKwTok(p.peek(), "hour") || isKwTok(p.peek(), "to") || isKwTok(p.peek(), "minute") {
			p.next()
		}
		s.Value = &TypedLiteral{Pos: v.pos, Type: &TypeName{Pos: v.pos, Name: "interval"}, Value: str.text}
	case v.kind == tokIdent:
		p.next()
		s.Value = &ColumnRef{Pos: v.pos, Parts: []Ident{{Pos: v.pos, Name: v.text, Quoted: v.quoted}}}
	default:
		return nil, p.errExpected("a value")
	}
	return s, nil
}

// ---------------------------------------------------------------- types

// parseType parses a type name with its modifiers and returns it with a
// canonical Name (see TypeName): T[] (T[n], T[][], T ARRAY) an array
// of T; oidvector, a PostgreSQL catalog array, is integer[]; int2vector
// (pg_index.indkey) is its own type, integers from subscript 0.
func (p *parser) parseType() (*TypeName, error) {
	tn, err := p.parseBaseType()
	if err != nil {
		return nil, err
	}
	if tn.Name == "oidvector" {
		tn.Name, tn.Array = "integer", true
	}
	for {
		switch {
		case p.isOp("[") && isOpTok(p.peekAt(1), "]"):
			p.next()
			p.next()
		case p.isOp("[") && p.peekAt(1).kind == tokNumber && isOpTok(p.peekAt(2), "]"):
			p.next()
			p.next()
			p.next()
		case p.isKw("array") && !isOpTok(p.peekAt(1), "["):
			p.next()
		default:
			return tn, nil
		}
		tn.Array = true
	}
}

func (p *parser) parseBaseType() (*TypeName, error) {
	t := p.peek()
	// NB: INTERVAL is a reserved word (INTERVAL '1 day') that also names
	// a type (CAST(x AS INTERVAL)).
	if t.kind != tokIdent || (!t.quoted && IsReserved(t.text) && t.text != "interval") {
		return nil, p.errExpected("a type name")
	}
	p.next()
	if !t.quoted && t.text == "pg_catalog" && p.isOp(".") && p.peekAt(1).kind == tokIdent {
		// pg_catalog.int4, pg_catalog.regclass: the types are there.
		p.next()
		t = p.next()
	}
	tn := &TypeName{Pos: t.pos, Name: t.text}
	word := t.text
	if t.quoted {
		word = "" // a quoted name is taken as written, with optional modifiers
	}
	switch word {
	case "int", "integer", "int4", "oid":
		// NB: OIDs are unsigned 32-bit in PostgreSQL; nicflow's fit in
		// an integer.
		tn.Name = "integer"
	case "int2vector":
		// PostgreSQL's int2vector (pg_index.indkey): integers from
		// subscript 0, printed "1 2".
	case "regclass", "regtype", "regnamespace":
		// A relation, type or schema named by its OID (an integer);
		// CAST('name' AS regclass) looks the name up.
	case "bigint", "int8":
		tn.Name = "bigint"
	case "smallint", "int2", "tinyint", "int1":
		// TINYINT (DuckDB, MySQL) widens to smallint, as PostgreSQL has no
		// one-byte integer.
		tn.Name = "smallint"
	case "real", "float4":
		tn.Name = "real"
	case "float8":
		tn.Name = "double precision"
	case "float":
		tn.Name = "double precision"
		if p.isOp("(") {
			args, err := p.parseTypeArgs()
			if err != nil {
				return nil, err
			}
			if len(args) != 1 || args[0] < 1 || args[0] > 53 {
				return nil, p.errAt(t, "FLOAT precision must be between 1 and 53")
			}
			if args[0] <= 24 {
				tn.Name = "real"
			}
		}
		return tn, nil
	case "double":
		// DOUBLE alone is DuckDB's, Spark's and MySQL's name for it.
		p.acceptKw("precision")
		tn.Name = "double precision"
	case "decimal", "numeric", "dec":
		tn.Name = "decimal"
	case "varchar":
		tn.Name = "varchar"
	case "character", "char":
		tn.Name = "char"
		if p.acceptKw("varying") {
			tn.Name = "varchar"
		}
	case "text", "string":
		tn.Name = "text"
	case "bool", "boolean":
		tn.Name = "boolean"
	case "bytea", "blob", "binary", "varbinary":
		// BLOB (SQLite, DuckDB), BINARY and VARBINARY (MySQL, DuckDB) are
		// PostgreSQL's BYTEA.
		tn.Name = "bytea"
	case "timestamptz":
		tn.Name = "timestamptz"
	case "datetime":
		// DATETIME (MySQL, DuckDB) is a timestamp without a zone.
		tn.Name = "timestamp"
	case "timestamp", "time":
		if p.isOp("(") {
			args, err := p.parseTypeArgs()
			if err != nil {
				return nil, err
			}
			tn.Args = args
		}
		if p.isKw("with") || p.isKw("without") {
			with := p.next().text == "with"
			if _, err := p.expectKw("time"); err != nil {
				return nil, err
			}
			if _, err := p.expectKw("zone"); err != nil {
				return nil, err
			}
			if with {
				tn.Name += "tz"
			}
		}
		return tn, nil
	}
	if p.isOp("(") {
		args, err := p.parseTypeArgs()
		if err != nil {
			return nil, err
		}
		tn.Args = args
	}
	return tn, nil
}

// maxTypeArg bounds type modifiers: decimal precision is at most 38 and
// varchar lengths fit in an int32 in PostgreSQL (10485760 is its limit).
const maxTypeArg = 10485760

func (p *parser) parseTypeArgs() ([]int, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var args []int
	for {
		t := p.peek()
		n, err := strconv.Atoi(t.text)
		if t.kind != tokNumber || err != nil || n < 0 || n > maxTypeArg {
			return nil, p.errExpected("an integer type modifier")
		}
		p.next()
		args = append(args, n)
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return args, nil
}

// typeLiteralNames are the type names that may prefix a string literal to
// form a typed literal (DATE '1998-12-01').
var typeLiteralNames = map[string]bool{
	"date": true, "timestamp": true, "timestamptz": true, "time": true, "timetz": true,
	"int": true, "integer": true, "bigint": true, "smallint": true,
	"decimal": true, "numeric": true, "real": true, "float": true, "double": true,
	"text": true, "varchar": true, "char": true, "boolean": true, "bool": true,
	"bytea": true, "blob": true,
}
