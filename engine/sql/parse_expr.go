package sql

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/pgarray"
)

// Expression grammar, loosest first (PostgreSQL's precedence table):
//
//	OR < AND < NOT < IS < comparison < BETWEEN/IN/LIKE < || < + - < * / % < ^
//	< unary + - < :: < primary
//
// Each level has its own function; chains at a level are left-associative.

func (p *parser) parseExpr() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	if err := p.enter(); err != nil {
		return nil, err
	}
	return p.parseOr()
}

// binaryChain parses "operand (op operand)*" for the operators ops (or the
// keyword kw), building left-associative BinaryExprs. Each link counts as a
// nesting level, since it deepens the tree the later passes walk.
func (p *parser) binaryChain(operand func() (Expr, error), match func(token) (string, bool)) (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		op, n, ok := p.matchOperator(match)
		if !ok {
			return left, nil
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.i += n
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = &BinaryExpr{Pos: left.Position(), Op: op, L: left, R: right}
	}
}

// matchOperator matches the next operator with match: a token, or
// PostgreSQL's OPERATOR(op) or OPERATOR(pg_catalog.op) (psql's \d sends
// OPERATOR(pg_catalog.~)), which here has the precedence of op itself.
// n is the number of tokens it takes.
func (p *parser) matchOperator(match func(token) (string, bool)) (op string, n int, ok bool) {
	t := p.peek()
	if t.kind != tokIdent || t.quoted || t.text != "operator" || !isOpTok(p.peekAt(1), "(") {
		op, ok = match(t)
		return op, 1, ok
	}
	k := 2
	if s := p.peekAt(k); s.kind == tokIdent && s.text == "pg_catalog" && isOpTok(p.peekAt(k+1), ".") {
		k += 2
	}
	o := p.peekAt(k)
	if o.kind != tokOp || !isOpTok(p.peekAt(k+1), ")") {
		return "", 0, false
	}
	op, ok = match(o)
	return op, k + 2, ok
}

// parseConstArray parses the constant array of ANY (...) and ALL (...):
// ARRAY[e, ...], or a string in PostgreSQL's array syntax ('{a,"b c",NULL}')
// with an optional ::type[] cast. nicflow has no array type: the
// elements are what the comparison takes.
func (p *parser) parseConstArray(what string) ([]Expr, error) {
	t := p.peek()
	if isOpTok(t, "(") {
		// ANY (('{a,b}')): parenthesized, as a substituted parameter is.
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.next()
		elems, err := p.parseConstArray(what)
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return elems, nil
	}
	if isKwTok(t, "array") && isOpTok(p.peekAt(1), "[") {
		p.next()
		p.next()
		elems := []Expr{}
		if !p.acceptOp("]") {
			var err error
			if elems, err = p.parseExprList(); err != nil {
				return nil, err
			}
			if _, err := p.expectOp("]"); err != nil {
				return nil, err
			}
		}
		ty, err := p.parseArrayCast()
		if err != nil {
			return nil, err
		}
		if ty != nil {
			for i, e := range elems {
				elems[i] = &Cast{Pos: e.Position(), X: e, Type: ty}
			}
		}
		return elems, nil
	}
	if t.kind != tokString {
		return nil, errNotConstArray
	}
	p.next()
	ty, err := p.parseArrayCast()
	if err != nil {
		return nil, err
	}
	vals, nulls, ok := pgarray.Parse(t.text)
	if !ok {
		return nil, p.errAt(t, "malformed array literal: %q", t.text)
	}
	elems := []Expr{}
	for i, v := range vals {
		var e Expr = &Literal{Pos: t.pos, Kind: LitNull}
		if !nulls[i] {
			e = &Literal{Pos: t.pos, Kind: LitString, Text: v}
		}
		if ty != nil {
			e = &Cast{Pos: t.pos, X: e, Type: ty}
		}
		elems = append(elems, e)
	}
	return elems, nil
}

// errNotConstArray: ANY (...) holds an array value, not a constant one.
var errNotConstArray = errors.New("not a constant array")

// parseArrayCast parses an optional ::type[] after an array; the type
// returned is the element's.
func (p *parser) parseArrayCast() (*TypeName, error) {
	if !p.isOp("::") {
		return nil, nil
	}
	t := p.next()
	ty, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if !ty.Array {
		return nil, p.errAt(t, "an array casts to an array type (%s[])", ty.Name)
	}
	elem := *ty
	elem.Array = false
	return &elem, nil
}

func matchKw(kw, op string) func(token) (string, bool) {
	return func(t token) (string, bool) { return op, isKwTok(t, kw) }
}

func matchOps(ops ...string) func(token) (string, bool) {
	return func(t token) (string, bool) {
		if t.kind != tokOp {
			return "", false
		}
		for _, o := range ops {
			if t.text == o {
				return o, true
			}
		}
		return "", false
	}
}

var (
	matchOr    = matchKw("or", "OR")
	matchAnd   = matchKw("and", "AND")
	matchCmp   = matchOps("=", "<>", "<", "<=", ">", ">=")
	matchOther = matchOps("||", "~", "~*", "!~", "!~*", "->", "->>", "#>", "#>>", "&", "|", "@>", "<@", "&&")
	matchAdd   = matchOps("+", "-")
	matchMul   = matchOps("*", "/", "%")
	matchExp   = matchOps("^")
)

func (p *parser) parseOr() (Expr, error)  { return p.binaryChain(p.parseAnd, matchOr) }
func (p *parser) parseAnd() (Expr, error) { return p.binaryChain(p.parseNot, matchAnd) }

func (p *parser) parseNot() (Expr, error) {
	if p.isKw("not") {
		saved := p.depth
		defer func() { p.depth = saved }()
		if err := p.enter(); err != nil {
			return nil, err
		}
		t := p.next()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &UnaryExpr{Pos: t.pos, Op: "NOT", X: x}, nil
	}
	return p.parseIs()
}

func (p *parser) parseIs() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	left, err := p.parseCmp()
	if err != nil {
		return nil, err
	}
	for p.isKw("is") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.next()
		not := p.acceptKw("not")
		switch {
		case p.acceptKw("null"):
			left = &IsExpr{Pos: left.Position(), X: left, What: IsNull, Not: not}
		case p.acceptKw("true"):
			left = &IsExpr{Pos: left.Position(), X: left, What: IsTrue, Not: not}
		case p.acceptKw("false"):
			left = &IsExpr{Pos: left.Position(), X: left, What: IsFalse, Not: not}
		case p.acceptKw("unknown"):
			left = &IsExpr{Pos: left.Position(), X: left, What: IsUnknown, Not: not}
		case p.acceptKw("distinct"):
			if _, err := p.expectKw("from"); err != nil {
				return nil, err
			}
			right, err := p.parseCmp()
			if err != nil {
				return nil, err
			}
			left = &IsDistinct{Pos: left.Position(), L: left, R: right, Not: not}
		default:
			return nil, p.errExpected("NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS")
		}
	}
	return left, nil
}

// parseCmp parses comparisons, left-associative, and X op ANY|SOME|ALL
// (query).
func (p *parser) parseCmp() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	left, err := p.parseRange()
	if err != nil {
		return nil, err
	}
	for {
		op, n, ok := p.matchOperator(matchCmp)
		if !ok {
			return left, nil
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.i += n
		if (p.isKw("any") || p.isKw("some") || p.isKw("all")) && p.peekAt(1).kind == tokOp && p.peekAt(1).text == "(" {
			q := &Quantified{Pos: left.Position(), Op: op, X: left, All: p.isKw("all")}
			p.next()
			p.next() // (
			if p.startsQuery(0) {
				if q.Query, err = p.parseQuery(); err != nil {
					return nil, err
				}
			} else if t := p.peek(); t.kind == tokParam && isOpTok(p.peekAt(1), ")") {
				p.next()
				n, _ := strconv.Atoi(t.text)
				q.Param = &Param{Pos: t.pos, N: n}
			} else {
				// A constant array (its elements compared one by one), or
				// an array value (a column, a function's result).
				start := p.i
				q.Array, err = p.parseConstArray(map[bool]string{true: "ALL", false: "ANY"}[q.All])
				if err == nil && !isOpTok(p.peek(), ")") {
					err = errNotConstArray // ARRAY[1] || x, '{1}'::int[] || y: a value
				}
				if err == errNotConstArray {
					p.i = start
					q.Array = nil
					if q.ArrayExpr, err = p.parseExpr(); err != nil {
						return nil, err
					}
				} else if err != nil {
					return nil, err
				}
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			left = q
			continue
		}
		right, err := p.parseRange()
		if err != nil {
			return nil, err
		}
		left = &BinaryExpr{Pos: left.Position(), Op: op, L: left, R: right}
	}
}

// parseRange parses [NOT] BETWEEN, [NOT] IN and [NOT] LIKE/ILIKE.
func (p *parser) parseRange() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	left, err := p.parseOther()
	if err != nil {
		return nil, err
	}
	for {
		not := false
		k := 0
		if p.isKw("not") {
			n := p.peekAt(1)
			if !isKwTok(n, "in") && !isKwTok(n, "between") && !isKwTok(n, "like") && !isKwTok(n, "ilike") && !isKwTok(n, "similar") {
				return left, nil
			}
			not, k = true, 1
		}
		t := p.peekAt(k)
		switch {
		case isKwTok(t, "in"), isKwTok(t, "between"), isKwTok(t, "like"), isKwTok(t, "ilike"), isKwTok(t, "similar"):
		default:
			return left, nil
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.i += k + 1
		switch t.text {
		case "in":
			if _, err := p.expectOp("("); err != nil {
				return nil, err
			}
			if p.startsQuery(0) {
				q, err := p.parseQuery()
				if err != nil {
					return nil, err
				}
				left = &InSubquery{Pos: left.Position(), X: left, Query: q, Not: not}
			} else if p.isOp(")") {
				// x IN (): FALSE (SQLite's extension; SQL has no empty list).
				left = &InList{Pos: left.Position(), X: left, Not: not}
			} else {
				list, err := p.parseExprList()
				if err != nil {
					return nil, err
				}
				left = &InList{Pos: left.Position(), X: left, List: list, Not: not}
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
		case "between":
			if p.isKw("symmetric") || p.isKw("asymmetric") {
				return nil, p.errAt(p.peek(), "BETWEEN SYMMETRIC is not supported")
			}
			lo, err := p.parseOther()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKw("and"); err != nil {
				return nil, err
			}
			hi, err := p.parseOther()
			if err != nil {
				return nil, err
			}
			left = &Between{Pos: left.Position(), X: left, Lo: lo, Hi: hi, Not: not}
		case "similar":
			// x SIMILAR TO p [ESCAPE e]: x ~ similar_to_escape(p [, e]),
			// as PostgreSQL rewrites it (the SQL pattern as a regex).
			if _, err := p.expectKw("to"); err != nil {
				return nil, err
			}
			pat, err := p.parseOther()
			if err != nil {
				return nil, err
			}
			args := []Expr{pat}
			if p.acceptKw("escape") {
				e, err := p.parseOther()
				if err != nil {
					return nil, err
				}
				args = append(args, e)
			}
			var m Expr = &BinaryExpr{Pos: left.Position(), Op: "~", L: left, R: &FuncCall{Pos: pat.Position(), Name: Ident{Pos: pat.Position(), Name: "similar_to_escape"}, Args: args}}
			if not {
				m = &UnaryExpr{Pos: left.Position(), Op: "NOT", X: m}
			}
			left = m
		default: // like, ilike
			pat, err := p.parseOther()
			if err != nil {
				return nil, err
			}
			l := &Like{Pos: left.Position(), X: left, Pattern: pat, Not: not, ILike: t.text == "ilike"}
			if p.acceptKw("escape") {
				if l.Escape, err = p.parseOther(); err != nil {
					return nil, err
				}
			}
			left = l
		}
	}
}

func (p *parser) parseOther() (Expr, error) { return p.binaryChain(p.parseAdd, matchOther) }
func (p *parser) parseAdd() (Expr, error)   { return p.binaryChain(p.parseMul, matchAdd) }
func (p *parser) parseMul() (Expr, error)   { return p.binaryChain(p.parseExp, matchMul) }
func (p *parser) parseExp() (Expr, error)   { return p.binaryChain(p.parseAt, matchExp) }

// parseAt parses x AT TIME ZONE zone (binding tighter than ^ and looser
// than unary minus, as in PostgreSQL) as the call timezone(zone, x).
func (p *parser) parseAt() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.isKw("at") && isKwTok(p.peekAt(1), "time") && isKwTok(p.peekAt(2), "zone") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		t := p.next()
		p.next()
		p.next()
		z, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		x = &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "timezone"}, Args: []Expr{z, x}}
	}
	return x, nil
}

func (p *parser) parseUnary() (Expr, error) {
	if p.isOp("-") || p.isOp("+") {
		saved := p.depth
		defer func() { p.depth = saved }()
		if err := p.enter(); err != nil {
			return nil, err
		}
		t := p.next()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &UnaryExpr{Pos: t.pos, Op: t.text, X: x}, nil
	}
	return p.parsePostfix()
}

// parsePostfix parses primary followed by any number of "::type".
func (p *parser) parsePostfix() (Expr, error) {
	saved := p.depth
	defer func() { p.depth = saved }()
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for p.isOp("::") || p.isKw("collate") || p.isOp("[") {
		if p.isOp("[") {
			// x[i]: an array's element.
			if err := p.enter(); err != nil {
				return nil, err
			}
			t := p.next()
			idx, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if p.isOp(":") {
				return nil, p.errAt(t, "array slices (a[i:j]) are not supported")
			}
			if _, err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &Subscript{Pos: t.pos, X: x, Index: idx}
			continue
		}
		if err := p.enter(); err != nil {
			return nil, err
		}
		if c := p.next(); isKwTok(c, "collate") {
			// COLLATE: nicflow compares strings by their bytes, which is
			// the "C" collation, and that is the default; another is
			// refused rather than ignored.
			// NB: read by hand: "default" is a reserved word.
			var parts []string
			for {
				t := p.peek()
				if t.kind != tokIdent {
					return nil, p.errExpected("a collation name")
				}
				p.next()
				parts = append(parts, t.text)
				if !isOpTok(p.peek(), ".") || len(parts) == 2 {
					break
				}
				p.next()
			}
			coll := strings.ToLower(parts[len(parts)-1])
			if (len(parts) == 2 && parts[0] != "pg_catalog") || (coll != "default" && coll != "c" && coll != "posix" && coll != "ucs_basic") {
				return nil, p.errAt(c, "collation %q is not supported (nicflow compares strings by their bytes: \"C\", \"POSIX\" or \"default\")", strings.Join(parts, "."))
			}
			continue
		}
		ty, err := p.parseType()
		if err != nil {
			return nil, err
		}
		x = &Cast{Pos: x.Position(), X: x, Type: ty, ColonColon: true}
	}
	return x, nil
}

func (p *parser) parsePrimary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokNumber:
		p.next()
		return &Literal{Pos: t.pos, Kind: LitNumber, Text: t.text}, nil
	case tokString:
		p.next()
		return &Literal{Pos: t.pos, Kind: LitString, Text: t.text}, nil
	case tokBlob:
		p.next()
		return &Literal{Pos: t.pos, Kind: LitBlob, Text: t.text}, nil
	case tokParam:
		p.next()
		n, _ := strconv.Atoi(t.text)
		return &Param{Pos: t.pos, N: n}, nil
	case tokOp:
		if t.text == "(" {
			return p.parseParen()
		}
		if t.text == "{" {
			return p.parseStruct()
		}
		return nil, p.errExpected("an expression")
	case tokEOF:
		return nil, p.errExpected("an expression")
	}
	// an identifier or keyword
	if !t.quoted && IsReserved(t.text) {
		return p.parseKeywordExpr(t)
	}
	next := p.peekAt(1)
	if !t.quoted {
		zoned := (t.text == "timestamp" || t.text == "time") && (isKwTok(next, "with") || isKwTok(next, "without"))
		if typeLiteralNames[t.text] && (next.kind == tokString || zoned) {
			// TIMESTAMP '...', TIMESTAMP WITH TIME ZONE '...'.
			ty, err := p.parseType()
			if err != nil {
				return nil, err
			}
			if p.peek().kind != tokString {
				return nil, p.errExpected("a string literal after the type name")
			}
			s := p.next()
			return &TypedLiteral{Pos: t.pos, Type: ty, Value: s.text}, nil
		}
		if next.kind == tokOp && next.text == "(" {
			switch t.text {
			case "extract":
				return p.parseExtract()
			case "substring":
				return p.parseSubstring()
			case "position":
				return p.parsePosition()
			case "trim":
				return p.parseTrim()
			}
		}
	}
	if next.kind == tokOp && next.text == "(" {
		p.next()
		return p.parseFuncCall(Ident{Pos: t.pos, Name: t.text, Quoted: t.quoted})
	}
	// pg_catalog.f(...): the functions are in pg_catalog, where
	// PostgreSQL's tools name them.
	if !t.quoted && t.text == "information_schema" && isOpTok(next, ".") && p.peekAt(2).text == "_pg_expandarray" && isOpTok(p.peekAt(3), "(") {
		// information_schema._pg_expandarray(a): PostgreSQL's (pgjdbc
		// calls it), a set of records (x, n).
		p.next()
		p.next()
		f := p.next()
		return p.parseFuncCall(Ident{Pos: f.pos, Name: f.text})
	}
	if !t.quoted && t.text == "pg_catalog" && isOpTok(next, ".") && p.peekAt(2).kind == tokIdent && isOpTok(p.peekAt(3), "(") {
		p.next()
		p.next()
		f := p.next()
		return p.parseFuncCall(Ident{Pos: f.pos, Name: f.text, Quoted: f.quoted})
	}
	if !t.quoted && (t.text == "localtimestamp" || t.text == "localtime" || t.text == "current_catalog" || t.text == "current_schema") &&
		!isOpTok(next, ".") && !isOpTok(next, "(") {
		// LOCALTIMESTAMP, CURRENT_CATALOG and CURRENT_SCHEMA are
		// functions without parentheses, as CURRENT_DATE.
		p.next()
		return &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: t.text}}, nil
	}
	// column reference a[.b[.c]]
	p.next()
	ref := &ColumnRef{Pos: t.pos, Parts: []Ident{{Pos: t.pos, Name: t.text, Quoted: t.quoted}}}
	for p.isOp(".") {
		p.next()
		n := p.peek()
		if n.kind == tokOp && n.text == "*" {
			return nil, p.errAt(n, "t.* is allowed only in a select list")
		}
		if n.kind != tokIdent {
			return nil, p.errExpected("a column name after '.'")
		}
		p.next()
		ref.Parts = append(ref.Parts, Ident{Pos: n.pos, Name: n.text, Quoted: n.quoted})
	}
	if len(ref.Parts) > 3 {
		return nil, p.errAt(t, "column reference %s has too many dots", deparseColumnRef(ref))
	}
	return ref, nil
}

// parseKeywordExpr handles expressions that start with a reserved word.
func (p *parser) parseKeywordExpr(t token) (Expr, error) {
	switch t.text {
	case "null":
		p.next()
		return &Literal{Pos: t.pos, Kind: LitNull, Text: "null"}, nil
	case "true", "false":
		p.next()
		return &Literal{Pos: t.pos, Kind: LitBool, Text: t.text}, nil
	case "case":
		return p.parseCase()
	case "array":
		if isOpTok(p.peekAt(1), "(") && p.startsQuery(2) {
			p.next()
			p.next()
			q, err := p.parseQuery()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return &ArraySubquery{Pos: t.pos, Query: q}, nil
		}
		if !isOpTok(p.peekAt(1), "[") {
			break
		}
		p.next()
		p.next()
		a := &ArrayExpr{Pos: t.pos}
		if !p.acceptOp("]") {
			elems, err := p.parseExprList()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp("]"); err != nil {
				return nil, err
			}
			a.Elems = elems
		}
		return a, nil
	case "cast":
		p.next()
		if _, err := p.expectOp("("); err != nil {
			return nil, err
		}
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectKw("as"); err != nil {
			return nil, err
		}
		ty, err := p.parseType()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &Cast{Pos: t.pos, X: x, Type: ty}, nil
	case "exists":
		p.next()
		if _, err := p.expectOp("("); err != nil {
			return nil, err
		}
		if !p.startsQuery(0) {
			return nil, p.errExpected("a subquery")
		}
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &Exists{Pos: t.pos, Query: q}, nil
	case "interval":
		return p.parseInterval()
	case "left", "right":
		if n := p.peekAt(1); n.kind == tokOp && n.text == "(" {
			p.next()
			return p.parseFuncCall(Ident{Pos: t.pos, Name: t.text})
		}
	case "current_date":
		// CURRENT_DATE (and current_date(), as it prints).
		p.next()
		if p.isOp("(") && isOpTok(p.peekAt(1), ")") {
			p.next()
			p.next()
		}
		return &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "current_date"}}, nil
	case "current_timestamp":
		// CURRENT_TIMESTAMP [(precision)]: the precision is accepted
		// and ignored (timestamps keep microseconds).
		p.next()
		if p.isOp("(") {
			if _, err := p.parseTypeArgs(); err != nil {
				return nil, err
			}
		}
		return &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "current_timestamp"}}, nil
	case "current_time":
		// CURRENT_TIME [(precision)]: the precision is accepted and
		// ignored (times keep microseconds).
		p.next()
		if p.isOp("(") {
			if _, err := p.parseTypeArgs(); err != nil {
				return nil, err
			}
		}
		return &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "current_time"}}, nil
	}
	return nil, p.errExpected("an expression")
}

// parseParen parses "(expr)" or a scalar subquery "(query)".
func (p *parser) parseParen() (Expr, error) {
	t := p.peek()
	if p.startsQuery(1) && !isOpTok(p.peekAt(1), "(") {
		p.next()
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &Subquery{Pos: t.pos, Query: q}, nil
	}
	p.next()
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.isOp(",") {
		// (a, b, ...): a row constructor.
		row := &RowExpr{Pos: t.pos, Elems: []Expr{e}}
		for p.acceptOp(",") {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			row.Elems = append(row.Elems, x)
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return row, nil
	}
	if sub, ok := e.(*Subquery); ok && p.startsQueryTail() {
		// "((select 1) union (select 2))": the subquery read so far is the
		// first operand of a parenthesized query.
		q, err := p.parseQueryFrom(sub.Query)
		if err != nil {
			return nil, err
		}
		e = &Subquery{Pos: t.pos, Query: q}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.isOp(".") && p.peekAt(1).kind == tokIdent {
		// (record).field
		p.next()
		f := p.next()
		return &FieldSelect{Pos: t.pos, X: e, Field: Ident{Pos: f.pos, Name: f.text, Quoted: f.quoted}}, nil
	}
	return e, nil
}

func isOpTok(t token, op string) bool { return t.kind == tokOp && t.text == op }

func (p *parser) parseCase() (Expr, error) {
	t := p.next() // CASE
	c := &Case{Pos: t.pos}
	var err error
	if !p.isKw("when") {
		if c.Operand, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	for p.isKw("when") {
		w := p.next()
		cond, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectKw("then"); err != nil {
			return nil, err
		}
		res, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, &When{Pos: w.pos, Cond: cond, Result: res})
	}
	if len(c.Whens) == 0 {
		return nil, p.errExpected("WHEN")
	}
	if p.acceptKw("else") {
		if c.Else, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("end"); err != nil {
		return nil, err
	}
	return c, nil
}

// intervalUnits are the ANSI interval fields.
var intervalUnits = map[string]bool{"year": true, "month": true, "day": true, "hour": true, "minute": true, "second": true}

// parseInterval parses INTERVAL 'v' [unit [TO unit]] [(precision)].
func (p *parser) parseInterval() (Expr, error) {
	t := p.next() // INTERVAL
	v, err := p.parseString("an interval string such as '90' or '3 months'")
	if err != nil {
		return nil, err
	}
	iv := &IntervalLit{Pos: t.pos, Value: v, Precision: -1}
	if n := p.peek(); n.kind == tokIdent && !n.quoted && intervalUnits[n.text] {
		p.next()
		iv.Unit = n.text
		if p.isOp("(") {
			args, err := p.parseTypeArgs()
			if err != nil {
				return nil, err
			}
			if len(args) != 1 {
				return nil, p.errAt(n, "interval precision takes one number")
			}
			iv.Precision = args[0]
		}
		if p.acceptKw("to") {
			u := p.peek()
			if u.kind != tokIdent || u.quoted || !intervalUnits[u.text] {
				return nil, p.errExpected("an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND)")
			}
			p.next()
			iv.ToUnit = u.text
		}
	}
	return iv, nil
}

// parseStruct parses {'name': expr, ...} (names as strings or
// identifiers).
func (p *parser) parseStruct() (Expr, error) {
	t := p.next() // {
	st := &StructLit{Pos: t.pos}
	for !p.isOp("}") {
		n := p.peek()
		switch n.kind {
		case tokString, tokIdent:
			p.next()
		default:
			return nil, p.errExpected("a field name")
		}
		if _, err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		st.Names, st.Values = append(st.Names, n.text), append(st.Values, v)
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp("}"); err != nil {
		return nil, err
	}
	return st, nil
}

func (p *parser) parseFuncCall(name Ident) (Expr, error) {
	if name.Name == "row" && !name.Quoted {
		// ROW(a, b, ...): a row constructor.
		p.next() // (
		row := &RowExpr{Pos: name.Pos, Explicit: true}
		if !p.isOp(")") {
			var err error
			if row.Elems, err = p.parseExprList(); err != nil {
				return nil, err
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return row, nil
	}
	p.next() // (
	f := &FuncCall{Pos: name.Pos, Name: name}
	var err error
	switch {
	case p.isOp("*"):
		p.next()
		f.Star = true
	case p.isOp(")"):
	default:
		if p.acceptKw("distinct") {
			f.Distinct = true
		} else {
			p.acceptKw("all")
		}
		if f.Args, err = p.parseExprList(); err != nil {
			return nil, err
		}
		if f.OrderBy, err = byClause(p, "order", p.parseOrderList); err != nil {
			return nil, err
		}
		f.IgnoreNulls = p.nullTreatment()
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.nullTreatment() {
		f.IgnoreNulls = true
	}
	if p.isKw("within") && isKwTok(p.peekAt(1), "group") {
		p.next()
		p.next()
		if _, err := p.expectOp("("); err != nil {
			return nil, err
		}
		if f.WithinGroup, err = byClause(p, "order", p.parseOrderList); err != nil {
			return nil, err
		}
		if f.WithinGroup == nil {
			return nil, p.errExpected("ORDER BY")
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if p.isKw("filter") && isOpTok(p.peekAt(1), "(") {
		p.next()
		p.next()
		if _, err := p.expectKw("where"); err != nil {
			return nil, err
		}
		if f.Filter, err = p.parseExpr(); err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if p.isKw("over") {
		if f.Over, err = p.parseOver(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// nullTreatment reads an optional IGNORE NULLS (true) or RESPECT NULLS.
func (p *parser) nullTreatment() bool {
	if (p.isKw("ignore") || p.isKw("respect")) && isKwTok(p.peekAt(1), "nulls") {
		ignore := p.isKw("ignore")
		p.next()
		p.next()
		return ignore
	}
	return false
}

func (p *parser) parseOver() (*WindowSpec, error) {
	p.next() // OVER
	if t := p.peek(); t.kind == tokIdent && !p.isOp("(") {
		// OVER name: a window of the WINDOW clause.
		id, err := p.parseIdent("a window name")
		if err != nil {
			return nil, err
		}
		return &WindowSpec{Pos: t.pos, Ref: id.Name}, nil
	}
	if !p.isOp("(") {
		return nil, p.errExpected("'(' or a window name")
	}
	return p.parseWindowBody()
}

// parseWindowBody parses "( [name] [PARTITION BY ...] [ORDER BY ...]
// [frame] )".
func (p *parser) parseWindowBody() (*WindowSpec, error) {
	t, err := p.expectOp("(")
	if err != nil {
		return nil, err
	}
	w := &WindowSpec{Pos: t.pos}
	if n := p.peek(); n.kind == tokIdent && (n.quoted || !isKwTok(n, "partition") && !isKwTok(n, "order") && !isKwTok(n, "rows") && !isKwTok(n, "range") && !isKwTok(n, "groups")) {
		id, err := p.parseIdent("a window name")
		if err != nil {
			return nil, err
		}
		w.Ref = id.Name
	}
	if w.PartitionBy, err = byClause(p, "partition", p.parseExprList); err != nil {
		return nil, err
	}
	if w.OrderBy, err = byClause(p, "order", p.parseOrderList); err != nil {
		return nil, err
	}
	if f := p.peek(); isKwTok(f, "rows") || isKwTok(f, "range") || isKwTok(f, "groups") {
		p.next()
		fr := &Frame{Pos: f.pos}
		switch f.text {
		case "range":
			fr.Mode = FrameRange
		case "groups":
			fr.Mode = FrameGroups
		}
		if p.acceptKw("between") {
			if fr.Start, err = p.parseFrameBound(); err != nil {
				return nil, err
			}
			if _, err := p.expectKw("and"); err != nil {
				return nil, err
			}
			if fr.End, err = p.parseFrameBound(); err != nil {
				return nil, err
			}
		} else if fr.Start, err = p.parseFrameBound(); err != nil {
			return nil, err
		}
		if p.acceptKw("exclude") {
			switch {
			case p.acceptKw("current"):
				if _, err := p.expectKw("row"); err != nil {
					return nil, err
				}
				fr.Exclude = "current row"
			case p.acceptKw("group"):
				fr.Exclude = "group"
			case p.acceptKw("ties"):
				fr.Exclude = "ties"
			case p.acceptKw("no"):
				if _, err := p.expectKw("others"); err != nil {
					return nil, err
				}
			default:
				return nil, p.errExpected("CURRENT ROW, GROUP, TIES or NO OTHERS")
			}
		}
		w.Frame = fr
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return w, nil
}

func (p *parser) parseFrameBound() (*FrameBound, error) {
	t := p.peek()
	b := &FrameBound{Pos: t.pos}
	switch {
	case isKwTok(t, "unbounded"):
		p.next()
		switch {
		case p.acceptKw("preceding"):
			b.Kind = UnboundedPreceding
		case p.acceptKw("following"):
			b.Kind = UnboundedFollowing
		default:
			return nil, p.errExpected("PRECEDING or FOLLOWING")
		}
	case isKwTok(t, "current"):
		p.next()
		if _, err := p.expectKw("row"); err != nil {
			return nil, err
		}
		b.Kind = CurrentRow
	default:
		off, err := p.parseOther()
		if err != nil {
			return nil, err
		}
		b.Offset = off
		switch {
		case p.acceptKw("preceding"):
			b.Kind = Preceding
		case p.acceptKw("following"):
			b.Kind = Following
		default:
			return nil, p.errExpected("PRECEDING or FOLLOWING")
		}
	}
	return b, nil
}

// parseExtract parses EXTRACT(field FROM expr).
func (p *parser) parseExtract() (Expr, error) {
	t := p.next() // EXTRACT
	p.next()      // (
	f := p.peek()
	var field string
	switch f.kind {
	case tokIdent:
		field = f.text
		if f.quoted {
			field = strings.ToLower(f.text)
		}
	case tokString:
		field = strings.ToLower(f.text)
	default:
		return nil, p.errExpected("a field name (YEAR, MONTH, DAY, ...)")
	}
	p.next()
	if _, err := p.expectKw("from"); err != nil {
		return nil, err
	}
	x, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Extract{Pos: t.pos, Field: field, X: x}, nil
}

// parseSubstring parses SUBSTRING(x FROM a [FOR b]), SUBSTRING(x FOR b) and
// the plain call SUBSTRING(x, a [, b]) into FuncCall substring(x, a[, b]).
func (p *parser) parseSubstring() (Expr, error) {
	t := p.next() // SUBSTRING
	p.next()      // (
	f := &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "substring"}}
	x, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	f.Args = []Expr{x}
	switch {
	case p.isKw("from"):
		p.next()
		from, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, from)
		if p.acceptKw("for") {
			n, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, n)
		}
	case p.isKw("for"):
		ft := p.next()
		n, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, &Literal{Pos: ft.pos, Kind: LitNumber, Text: "1"}, n)
	case p.acceptOp(","):
		rest, err := p.parseExprList()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, rest...)
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return f, nil
}

// parsePosition parses POSITION(a IN b) into FuncCall position(a, b).
func (p *parser) parsePosition() (Expr, error) {
	t := p.next() // POSITION
	p.next()      // (
	a, err := p.parseOther()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectKw("in"); err != nil {
		return nil, err
	}
	b, err := p.parseOther()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: "position"}, Args: []Expr{a, b}}, nil
}

// parseTrim parses TRIM([BOTH|LEADING|TRAILING] [chars] [FROM] x) and
// TRIM(x [, chars]) into btrim/ltrim/rtrim(x [, chars]).
func (p *parser) parseTrim() (Expr, error) {
	t := p.next() // TRIM
	p.next()      // (
	name := "btrim"
	switch {
	case p.acceptKw("both"):
	case p.acceptKw("leading"):
		name = "ltrim"
	case p.acceptKw("trailing"):
		name = "rtrim"
	}
	f := &FuncCall{Pos: t.pos, Name: Ident{Pos: t.pos, Name: name}}
	if p.acceptKw("from") {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		f.Args = []Expr{x}
	} else {
		first, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		switch {
		case p.acceptKw("from"):
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.Args = []Expr{x, first}
		case p.acceptOp(","):
			chars, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.Args = []Expr{first, chars}
		default:
			f.Args = []Expr{first}
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return f, nil
}
