package sql

import "slices"

// parseQuery parses [WITH ...] body [ORDER BY ...] [LIMIT ...] [OFFSET ...].
func (p *parser) parseQuery() (*Query, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	if err := p.enter(); err != nil {
		return nil, err
	}
	q := &Query{Pos: p.peek().pos}
	if p.acceptKw("with") {
		q.Recursive = p.acceptKw("recursive")
		for {
			name, err := p.parseIdent("a CTE name")
			if err != nil {
				return nil, err
			}
			cte := &CTE{Pos: name.Pos, Name: name}
			if p.isOp("(") {
				if cte.Columns, err = p.parseIdentList("a column name"); err != nil {
					return nil, err
				}
			}
			if _, err := p.expectKw("as"); err != nil {
				return nil, err
			}
			if p.isKw("materialized") || p.isKw("not") {
				return nil, p.errAt(p.peek(), "[NOT] MATERIALIZED is not supported")
			}
			if _, err := p.expectOp("("); err != nil {
				return nil, err
			}
			if cte.Query, err = p.parseQuery(); err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			q.With = append(q.With, cte)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	body, err := p.parseSetExpr()
	if err != nil {
		return nil, err
	}
	q.Body = body
	return q, p.parseQueryTail(q)
}

// startsQueryTail reports whether the next token continues a query after
// an operand: a set operation, ORDER BY, LIMIT, OFFSET or FETCH.
func (p *parser) startsQueryTail() bool {
	for _, kw := range []string{"union", "intersect", "except", "order", "limit", "offset", "fetch"} {
		if p.isKw(kw) {
			return true
		}
	}
	return false
}

// parseQueryFrom continues a query whose first operand, a parenthesized
// query, was already read: "((select 1) union (select 2))".
func (p *parser) parseQueryFrom(first *Query) (*Query, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	if err := p.enter(); err != nil {
		return nil, err
	}
	left, err := p.setTermLoop(first)
	if err != nil {
		return nil, err
	}
	body, err := p.setExprLoop(left)
	if err != nil {
		return nil, err
	}
	q := &Query{Pos: first.Pos, Body: body}
	return q, p.parseQueryTail(q)
}

// parseQueryTail parses ORDER BY, LIMIT, OFFSET and FETCH into q.
func (p *parser) parseQueryTail(q *Query) error {
	var err error
	if q.OrderBy, err = byClause(p, "order", p.parseOrderList); err != nil {
		return err
	}
	for {
		switch {
		case p.isKw("limit") && q.Limit == nil:
			p.next()
			if p.acceptKw("all") {
				continue
			}
			if q.Limit, err = p.parseExpr(); err != nil {
				return err
			}
			continue
		case p.isKw("offset") && q.Offset == nil:
			p.next()
			if q.Offset, err = p.parseExpr(); err != nil {
				return err
			}
			if !p.acceptKw("rows") {
				p.acceptKw("row")
			}
			continue
		case p.isKw("fetch") && q.Limit == nil:
			// FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY
			t := p.next()
			if !p.acceptKw("first") && !p.acceptKw("next") {
				return p.errExpected("FIRST or NEXT")
			}
			if p.isKw("row") || p.isKw("rows") {
				q.Limit = &Literal{Pos: t.pos, Kind: LitNumber, Text: "1"}
			} else if q.Limit, err = p.parseExpr(); err != nil {
				return err
			}
			if !p.acceptKw("rows") && !p.acceptKw("row") {
				return p.errExpected("ROW or ROWS")
			}
			if _, err := p.expectKw("only"); err != nil {
				return err
			}
			continue
		}
		return nil
	}
}

// parseSetExpr parses UNION/EXCEPT chains of INTERSECT chains (INTERSECT
// binds tighter, as in PostgreSQL), left-associative.
func (p *parser) parseSetExpr() (QueryBody, error) {
	first, err := p.parseSetPrimary()
	if err != nil {
		return nil, err
	}
	left, err := p.setTermLoop(first)
	if err != nil {
		return nil, err
	}
	return p.setExprLoop(left)
}

// setExprLoop parses the UNION/EXCEPT operands that follow left.
func (p *parser) setExprLoop(left QueryBody) (QueryBody, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	for p.isKw("union") || p.isKw("except") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		t := p.next()
		op := &SetOp{Pos: left.Position(), Op: Union, Left: left}
		if t.text == "except" {
			op.Op = Except
		}
		if p.acceptKw("all") {
			op.All = true
		} else {
			p.acceptKw("distinct")
		}
		first, err := p.parseSetPrimary()
		if err != nil {
			return nil, err
		}
		if op.Right, err = p.setTermLoop(first); err != nil {
			return nil, err
		}
		left = op
	}
	return left, nil
}

// setTermLoop parses the INTERSECT operands that follow left.
func (p *parser) setTermLoop(left QueryBody) (QueryBody, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	for p.isKw("intersect") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.next()
		op := &SetOp{Pos: left.Position(), Op: Intersect, Left: left}
		if p.acceptKw("all") {
			op.All = true
		} else {
			p.acceptKw("distinct")
		}
		var err error
		if op.Right, err = p.parseSetPrimary(); err != nil {
			return nil, err
		}
		left = op
	}
	return left, nil
}

func (p *parser) parseSetPrimary() (QueryBody, error) {
	switch {
	case p.isKw("select"):
		return p.parseSelect()
	case p.isKw("values"):
		return p.parseValues()
	case p.isOp("("):
		p.next()
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return q, nil
	}
	return nil, p.errExpected("SELECT, VALUES or '('")
}

func (p *parser) parseValues() (*Values, error) {
	start := p.next() // VALUES
	v := &Values{Pos: start.pos}
	for {
		if _, err := p.expectOp("("); err != nil {
			return nil, err
		}
		row, err := p.parseExprList()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if len(v.Rows) > 0 && len(row) != len(v.Rows[0]) {
			return nil, p.errAt(p.toks.at(p.i-1), "VALUES lists must all be the same length: this row has %d values, the first has %d", len(row), len(v.Rows[0]))
		}
		v.Rows = append(v.Rows, row)
		if !p.acceptOp(",") {
			return v, nil
		}
	}
}

// commaList parses one or more items with one, separated by commas.
func commaList[T any](p *parser, one func() (T, error)) ([]T, error) {
	var out []T
	for {
		it, err := one()
		if err != nil {
			return nil, err
		}
		if len(out) == cap(out) {
			// NB: doubling, where append grows a long slice by a
			// quarter: the arrays a 200,000-item list left behind summed
			// to five times its size.
			out = slices.Grow(out, max(len(out), 4))
		}
		out = append(out, it)
		if !p.acceptOp(",") {
			return out, nil
		}
	}
}

func (p *parser) parseExprList() ([]Expr, error) { return commaList(p, p.parseExpr) }

func (p *parser) parseSelect() (*Select, error) {
	start := p.next() // SELECT
	s := &Select{Pos: start.pos}
	if p.acceptKw("distinct") {
		if p.acceptKw("on") {
			if _, err := p.expectOp("("); err != nil {
				return nil, err
			}
			on, err := p.parseExprList()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			s.DistinctOn = on
		} else {
			s.Distinct = true
		}
	} else {
		p.acceptKw("all")
	}
	for {
		item, err := p.parseSelectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, item)
		if !p.acceptOp(",") {
			break
		}
	}
	var err error
	if p.acceptKw("from") {
		if s.From, err = p.parseFromList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("where") {
		if s.Where, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if s.GroupBy, err = byClause(p, "group", p.parseGroupByList); err != nil {
		return nil, err
	}
	if p.acceptKw("having") {
		if s.Having, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("window") {
		for {
			t := p.peek()
			name, err := p.parseIdent("a window name")
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKw("as"); err != nil {
				return nil, err
			}
			spec, err := p.parseWindowBody()
			if err != nil {
				return nil, err
			}
			s.Windows = append(s.Windows, &NamedWindow{Pos: t.pos, Name: name, Spec: spec})
			if !p.acceptOp(",") {
				break
			}
		}
	}
	return s, nil
}

// parseSelectItem parses "*", "t.*", or "expr [[AS] alias]".
func (p *parser) parseSelectItem() (*SelectItem, error) {
	t := p.peek()
	if p.isOp("*") {
		p.next()
		return &SelectItem{Pos: t.pos, Expr: &Star{Pos: t.pos}}, nil
	}
	// t.* and s.t.*: names joined by dots and ending in ".*"
	if t.kind == tokIdent {
		k := 0
		for p.peekAt(k).kind == tokIdent && p.peekAt(k+1).kind == tokOp && p.peekAt(k+1).text == "." {
			if n := p.peekAt(k + 2); n.kind == tokOp && n.text == "*" {
				name, err := p.parseObjNameUntilStar()
				if err != nil {
					return nil, err
				}
				return &SelectItem{Pos: t.pos, Expr: &Star{Pos: t.pos, Table: &name}}, nil
			}
			k += 2
		}
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	item := &SelectItem{Pos: e.Position(), Expr: e}
	if p.acceptKw("as") {
		id, err := p.parseLabel("an alias")
		if err != nil {
			return nil, err
		}
		item.Alias = &id
	} else if isName(p.peek()) {
		id, _ := p.parseIdent("an alias")
		item.Alias = &id
	}
	return item, nil
}

// parseObjNameUntilStar parses "a.b.*" and returns a.b, consuming the star.
func (p *parser) parseObjNameUntilStar() (ObjName, error) {
	var n ObjName
	for {
		t := p.peek()
		if t.kind != tokIdent {
			return ObjName{}, p.errExpected("a table name")
		}
		p.next()
		if len(n.Parts) == 0 {
			n.Pos = t.pos
		}
		n.Parts = append(n.Parts, Ident{Pos: t.pos, Name: t.text, Quoted: t.quoted})
		p.next() // '.'
		if p.acceptOp("*") {
			return n, nil
		}
	}
}

// parseFromList parses the comma-separated entries of a FROM (or of
// UPDATE's FROM and DELETE's USING).
func (p *parser) parseFromList() ([]TableExpr, error) { return commaList(p, p.parseTableRef) }

// parseTableRef parses a FROM entry: a primary followed by any joins.
func (p *parser) parseTableRef() (TableExpr, error) {
	left, err := p.parseTablePrimary()
	if err != nil {
		return nil, err
	}
	return p.joinTail(left)
}

// joinTail parses the joins that follow left.
func (p *parser) joinTail(left TableExpr) (TableExpr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	for {
		t := p.peek()
		var kind JoinKind
		natural := isKwTok(t, "natural")
		if natural {
			// NATURAL [INNER | LEFT | RIGHT | FULL [OUTER]] JOIN
			p.next()
			t = p.peek()
			if !isKwTok(t, "join") && !isKwTok(t, "inner") && !isKwTok(t, "left") && !isKwTok(t, "right") && !isKwTok(t, "full") {
				return nil, p.errExpected("JOIN after NATURAL")
			}
		}
		switch {
		case isKwTok(t, "join"), isKwTok(t, "inner"):
			kind = InnerJoin
		case isKwTok(t, "left"):
			kind = LeftJoin
		case isKwTok(t, "right"):
			kind = RightJoin
		case isKwTok(t, "full"):
			kind = FullJoin
		case isKwTok(t, "cross"):
			kind = CrossJoin
		default:
			return left, nil
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.next()
		if kind == LeftJoin || kind == RightJoin || kind == FullJoin {
			p.acceptKw("outer")
		}
		if kind != InnerJoin || t.text == "inner" {
			if _, err := p.expectKw("join"); err != nil {
				return nil, err
			}
		}
		right, err := p.parseTablePrimary()
		if err != nil {
			return nil, err
		}
		j := &Join{Pos: t.pos, Kind: kind, Left: left, Right: right, Natural: natural}
		if kind != CrossJoin && !natural {
			switch {
			case p.acceptKw("on"):
				if j.On, err = p.parseExpr(); err != nil {
					return nil, err
				}
			case p.isKw("using"):
				p.next()
				if j.Using, err = p.parseIdentList("a column name"); err != nil {
					return nil, err
				}
			default:
				return nil, p.errExpected("ON or USING")
			}
		}
		left = j
	}
}

func (p *parser) parseTablePrimary() (TableExpr, error) {
	t := p.peek()
	if p.isOp("(") {
		saved := p.depth
		defer func() { p.depth = saved }()
		if err := p.enter(); err != nil {
			return nil, err
		}
		if p.startsQuery(1) && !isOpTok(p.peekAt(1), "(") {
			// (SELECT ...) [AS] alias: a derived table
			p.next()
			q, err := p.parseQuery()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			d := &DerivedTable{Pos: t.pos, Query: q}
			if d.Alias, err = p.parseTableAlias(); err != nil {
				return nil, err
			}
			return d, nil
		}
		// A parenthesized join, or a parenthesized derived table that may
		// go on as a query: "((select 1) union (select 2)) AS t".
		p.next()
		te, err := p.parseTableRef()
		if err != nil {
			return nil, err
		}
		d, isDerived := te.(*DerivedTable)
		if isDerived && d.Alias == nil && p.startsQueryTail() {
			q, err := p.parseQueryFrom(d.Query)
			if err != nil {
				return nil, err
			}
			d = &DerivedTable{Pos: t.pos, Query: q}
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if isDerived && d.Alias == nil {
			if d.Alias, err = p.parseTableAlias(); err != nil {
				return nil, err
			}
			return d, nil
		}
		if isName(p.peek()) || p.isKw("as") {
			return nil, p.errAt(p.peek(), "an alias for a parenthesized join is not supported")
		}
		return te, nil
	}
	if p.acceptKw("lateral") {
		// LATERAL (query) alias, or LATERAL f(...): a function in FROM
		// sees the items before it anyway (as in PostgreSQL).
		if p.isOp("(") {
			te, err := p.parseTablePrimary()
			if err != nil {
				return nil, err
			}
			if d, ok := te.(*DerivedTable); ok {
				d.Lateral = true
				return d, nil
			}
			return nil, p.errAt(t, "LATERAL must be followed by a subquery or a function call")
		}
		if !isName(p.peek()) {
			return nil, p.errAt(p.peek(), "LATERAL must be followed by a subquery or a function call")
		}
		te, err := p.parseTablePrimary()
		if err != nil {
			return nil, err
		}
		if _, ok := te.(*TableFunc); !ok {
			return nil, p.errAt(t, "LATERAL must be followed by a subquery or a function call, not a table name")
		}
		return te, nil
	}
	if t.kind == tokString {
		// FROM 'x.parquet': a file as a table.
		p.next()
		tf := &TableFunc{Pos: t.pos, Name: Ident{Pos: t.pos, Name: FileTableFunc}, Args: []Expr{&Literal{Pos: t.pos, Kind: LitString, Text: t.text}}}
		var err error
		if tf.Alias, err = p.parseTableAlias(); err != nil {
			return nil, err
		}
		return tf, nil
	}
	name, err := p.parseObjName("a table name or '('")
	if err != nil {
		return nil, err
	}
	if p.isOp("(") {
		// NB: pg_catalog.generate_series (pgjdbc): the built-in table
		// functions are there.
		if len(name.Parts) == 2 && name.Parts[0].Name == "pg_catalog" {
			name.Parts = name.Parts[1:]
		}
		if len(name.Parts) != 1 {
			return nil, p.errAt(p.peek(), "a table function name is not qualified")
		}
		p.next()
		tf := &TableFunc{Pos: t.pos, Name: name.Parts[0]}
		if !p.isOp(")") {
			if tf.Args, err = p.parseExprList(); err != nil {
				return nil, err
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if p.isKw("with") && p.peekAt(1).kind == tokIdent && p.peekAt(1).text == "ordinality" && !p.peekAt(1).quoted {
			p.next()
			p.next()
			tf.Ordinality = true
		}
		if tf.Alias, err = p.parseTableAlias(); err != nil {
			return nil, err
		}
		return tf, nil
	}
	tn := &TableName{Pos: t.pos, Name: name}
	if tn.Alias, err = p.parseTableAlias(); err != nil {
		return nil, err
	}
	return tn, nil
}

// parseTableAlias parses an optional "[AS] name [(col, ...)]".
func (p *parser) parseTableAlias() (*TableAlias, error) {
	t := p.peek()
	if p.acceptKw("as") {
		if !isName(p.peek()) {
			return nil, p.errExpected("an alias")
		}
	} else if !isName(t) {
		return nil, nil
	}
	id, err := p.parseIdent("an alias")
	if err != nil {
		return nil, err
	}
	a := &TableAlias{Pos: id.Pos, Name: id}
	if p.isOp("(") {
		if a.Columns, err = p.parseIdentList("a column name"); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// parseOrderList parses "expr [ASC|DESC] [NULLS FIRST|LAST], ...".
func (p *parser) parseOrderList() ([]*OrderItem, error) {
	var items []*OrderItem
	for {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		it := &OrderItem{Pos: e.Position(), Expr: e}
		if p.acceptKw("desc") {
			it.Desc = true
		} else {
			p.acceptKw("asc")
		}
		if p.isKw("nulls") {
			p.next()
			var first bool
			switch {
			case p.acceptKw("first"):
				first = true
			case p.acceptKw("last"):
			default:
				return nil, p.errExpected("FIRST or LAST")
			}
			it.NullsFirst = &first
		}
		items = append(items, it)
		if !p.acceptOp(",") {
			return items, nil
		}
	}
}

// parseGroupByList parses GROUP BY's elements: expressions, ROLLUP (e,
// ...), CUBE (e, ...) and GROUPING SETS (set, ...), where a set is an
// expression, a parenthesized list or ().
func (p *parser) parseGroupByList() ([]Expr, error) {
	var out []Expr
	for {
		t := p.peek()
		next := p.peekAt(1)
		var e Expr
		var err error
		switch {
		case (isKwTok(t, "rollup") || isKwTok(t, "cube")) && next.kind == tokOp && next.text == "(":
			p.next()
			g := &GroupingSets{Pos: t.pos, Kind: GroupRollup}
			if isKwTok(t, "cube") {
				g.Kind = GroupCube
			}
			list, err := p.parseParenList()
			if err != nil {
				return nil, err
			}
			for _, x := range list {
				g.Sets = append(g.Sets, []Expr{x})
			}
			e = g
		case isKwTok(t, "grouping") && isKwTok(next, "sets"):
			p.next()
			p.next()
			g := &GroupingSets{Pos: t.pos, Kind: GroupSets}
			if _, err := p.expectOp("("); err != nil {
				return nil, err
			}
			for {
				var set []Expr
				if p.isOp("(") {
					if set, err = p.parseParenList(); err != nil {
						return nil, err
					}
				} else {
					x, err := p.parseExpr()
					if err != nil {
						return nil, err
					}
					set = []Expr{x}
				}
				if set == nil {
					set = []Expr{}
				}
				g.Sets = append(g.Sets, set)
				if !p.acceptOp(",") {
					break
				}
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			e = g
		default:
			if e, err = p.parseExpr(); err != nil {
				return nil, err
			}
			if r, ok := e.(*RowExpr); ok && !r.Explicit {
				// GROUP BY (a, b): the columns, as PostgreSQL reads it.
				out = append(out, r.Elems...)
				if !p.acceptOp(",") {
					return out, nil
				}
				continue
			}
		}
		out = append(out, e)
		if !p.acceptOp(",") {
			return out, nil
		}
	}
}

// parseParenList parses "(" [expr {, expr}] ")"; () is an empty list.
func (p *parser) parseParenList() ([]Expr, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	if p.acceptOp(")") {
		return nil, nil
	}
	list, err := p.parseExprList()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return list, nil
}
