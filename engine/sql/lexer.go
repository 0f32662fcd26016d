package sql

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pos is a position in the source text: a byte offset and a 1-based line and
// column (columns count characters, a tab counts as one).
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// Position returns p; every AST node embeds a Pos, so every node has it.
func (p Pos) Position() Pos { return p }

// tokKind classifies tokens. Keywords are not a kind of their own: an
// unquoted identifier token carries its case-folded text and the parser
// decides from context whether it is a keyword (PostgreSQL does the same for
// its unreserved keywords).
type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokIdent          // identifier or keyword; Text is lower-cased unless Quoted
	tokString         // '...' string literal; Text is the unescaped value
	tokNumber         // numeric literal; Text is the source spelling
	tokOp             // operator or punctuation; Text is its spelling
	tokBlob           // x'...' blob literal (SQLite, DuckDB); Text is the hex digits
	tokParam          // $n statement parameter; Text is the digits
)

// token is one token of a script. NB: fields are ordered to pack, and the
// position past a token is kept as a byte offset only: lex (parameters,
// params.go) holds one per token of a script.
type token struct {
	text   string
	pos    Pos
	end    int // byte offset just past the token
	kind   tokKind
	quoted bool // a "quoted identifier"
}

// describe names a token for error messages: "')'", "keyword FROM",
// "identifier \"x\"", "end of input".
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokIdent:
		if !t.quoted && IsReserved(t.text) {
			return "keyword " + strings.ToUpper(t.text)
		}
		return "identifier \"" + t.text + "\""
	case tokString:
		s := t.text
		if len(s) > 20 {
			s = s[:20] + "..."
		}
		return "string '" + s + "'"
	case tokNumber:
		return "number " + t.text
	case tokBlob:
		return "blob x'" + t.text + "'"
	case tokParam:
		return "parameter $" + t.text
	}
	return "'" + t.text + "'"
}

// lexer turns source text into tokens. It never panics on any input.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

// lex returns all tokens of src, ending with a tokEOF token, or a syntax
// error (unterminated string, quoted identifier or comment; bad character).
func lex(src string) ([]token, error) {
	l := &lexer{src: src, line: 1, col: 1}
	// NB: a guess of one token per 3 bytes avoids regrowth, which would
	// hold the old and the new array at once, up to lists of numbers
	// ("1,2,3,...": a token per 3.2 bytes at 200,000 values).
	toks := make([]token, 0, len(src)/3+1)
	var lastEnd Pos // just past the last token
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokEOF && len(toks) > 0 {
			// NB: errors "at end of input" point just past the last token,
			// not at a blank line after it.
			t.pos = lastEnd
		}
		lastEnd = l.pos()
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}

// tokenWindow hands the parser the tokens of a script as it reaches them:
// lexed on demand, and dropped once they are far behind (the parser looks
// a few tokens ahead and steps back at most one). So parsing holds a few
// tokens, not one per 3 bytes of the script (a 200,000-value IN list is
// 400,000 tokens, 50 MB of INSERTs millions). The script is lexed once
// before (newTokenWindow) so that a lexical error anywhere comes first, as
// when all tokens were lexed up front.
type tokenWindow struct {
	l       *lexer
	buf     []token // tokens base .. base+len(buf)-1
	base    int
	eof     bool // buf ends with the tokEOF token
	lastEnd Pos  // just past the last token lexed
}

// tokensBehind is how many tokens the window keeps behind the parser.
const tokensBehind = 16

// newTokenWindow checks that src lexes and returns the window over its
// tokens.
func newTokenWindow(src string) (*tokenWindow, error) {
	l := &lexer{src: src, line: 1, col: 1}
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tokEOF {
			break
		}
	}
	return &tokenWindow{l: &lexer{src: src, line: 1, col: 1}}, nil
}

// at returns token i of the script (the tokEOF token past the end).
func (w *tokenWindow) at(i int) token {
	if j := i - w.base; j >= 0 && j < len(w.buf) {
		return w.buf[j]
	}
	return w.lexTo(i)
}

// lexTo lexes up to token i and returns it (at's slow path).
func (w *tokenWindow) lexTo(i int) token {
	for !w.eof && i >= w.base+len(w.buf) {
		t, err := w.l.next()
		if err != nil {
			panic("sql: a script lexed twice differently: " + err.Error()) // recovered by Parse
		}
		if t.kind == tokEOF {
			w.eof = true
			if w.base+len(w.buf) > 0 {
				t.pos = w.lastEnd // "at end of input" points just past the last token
			}
		}
		w.lastEnd = w.l.pos()
		w.buf = append(w.buf, t)
	}
	if i >= w.base+len(w.buf) {
		return w.buf[len(w.buf)-1]
	}
	return w.buf[i-w.base]
}

// release drops the tokens more than tokensBehind before token i.
func (w *tokenWindow) release(i int) {
	if d := i - tokensBehind - w.base; d > 0 && d >= len(w.buf)/2 && d >= 64 {
		n := copy(w.buf, w.buf[d:])
		w.buf = w.buf[:n]
		w.base += d
	}
}

func (l *lexer) pos() Pos { return Pos{Offset: l.off, Line: l.line, Col: l.col} }

// advance moves past one character (a whole UTF-8 sequence), keeping line
// and column.
func (l *lexer) advance() {
	if l.off >= len(l.src) {
		return
	}
	c := l.src[l.off]
	if c == '\n' {
		l.line++
		l.col = 1
		l.off++
		return
	}
	if c < utf8.RuneSelf {
		l.off++
	} else {
		_, n := utf8.DecodeRuneInString(l.src[l.off:])
		l.off += n
	}
	l.col++
}

func (l *lexer) peekByte(k int) byte {
	if l.off+k < len(l.src) {
		return l.src[l.off+k]
	}
	return 0
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= utf8.RuneSelf
}

func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipSpace skips white space and comments ("-- ..." to end of line,
// "/* ... */" nested as in PostgreSQL).
func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.advance()
		case c == '-' && l.peekByte(1) == '-':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance()
			}
		case c == '/' && l.peekByte(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			depth := 1
			for depth > 0 {
				if l.off >= len(l.src) {
					return syntaxErrorAt(l.src, start, "unterminated /* comment")
				}
				if l.src[l.off] == '*' && l.peekByte(1) == '/' {
					depth--
					l.advance()
					l.advance()
				} else if l.src[l.off] == '/' && l.peekByte(1) == '*' {
					depth++
					l.advance()
					l.advance()
				} else {
					l.advance()
				}
			}
		default:
			return nil
		}
	}
	return nil
}

// twoCharOps are the operators of two characters, checked before single ones.
// "!~*" (the one of three) comes first.
var twoCharOps = [...]string{"->>", "#>>", "->", "#>", "!~*", "<=", ">=", "<>", "!=", "||", "::", "~*", "!~", "@>", "<@", "&&"}

const singleCharOps = "()[],;.+-*/%^=<>:~{}&|"

func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	start := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: start, end: l.off}, nil
	}
	c := l.src[l.off]
	switch {
	case (c == 'x' || c == 'X') && l.peekByte(1) == '\'':
		return l.blob(start)
	case (c == 'e' || c == 'E') && l.peekByte(1) == '\'':
		l.advance() // E
		s, err := l.escaped(start)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, text: s, pos: start, end: l.off}, nil
	case isIdentStart(c):
		for l.off < len(l.src) && isIdentCont(l.src[l.off]) {
			l.advance()
		}
		word := l.src[start.Offset:l.off]
		if !utf8.ValidString(word) {
			return token{}, syntaxErrorAt(l.src, start, "invalid UTF-8 in identifier")
		}
		return token{kind: tokIdent, text: foldIdent(word), pos: start, end: l.off}, nil
	case c == '$' && isDigit(l.peekByte(1)):
		l.advance()
		for l.off < len(l.src) && isDigit(l.src[l.off]) {
			l.advance()
		}
		text := l.src[start.Offset+1 : l.off]
		if n, err := strconv.Atoi(text); err != nil || n < 1 || n > 65535 {
			return token{}, syntaxErrorAt(l.src, start, "parameter $%s out of range (1 to 65535)", text)
		}
		return token{kind: tokParam, text: text, pos: start, end: l.off}, nil
	case isDigit(c) || (c == '.' && isDigit(l.peekByte(1))):
		return l.number(start)
	case c == '\'':
		s, err := l.quoted('\'', start, "string literal")
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, text: s, pos: start, end: l.off}, nil
	case c == '"':
		s, err := l.quoted('"', start, "quoted identifier")
		if err != nil {
			return token{}, err
		}
		if s == "" {
			return token{}, syntaxErrorAt(l.src, start, "zero-length quoted identifier")
		}
		return token{kind: tokIdent, text: s, quoted: true, pos: start, end: l.off}, nil
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[l.off:], op) {
			for range op {
				l.advance()
			}
			if op == "!=" {
				op = "<>"
			}
			return token{kind: tokOp, text: op, pos: start, end: l.off}, nil
		}
	}
	if strings.IndexByte(singleCharOps, c) >= 0 {
		l.advance()
		// NB: the source's byte, not string(c), which allocates.
		return token{kind: tokOp, text: l.src[start.Offset:l.off], pos: start, end: l.off}, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.off:])
	if r == utf8.RuneError {
		return token{}, syntaxErrorAt(l.src, start, "invalid byte 0x%02x in input", c)
	}
	return token{}, syntaxErrorAt(l.src, start, "unexpected character %q", r)
}

// number scans digits [. digits] [e [+-] digits], or . digits [...].
func (l *lexer) number(start Pos) (token, error) {
	for isDigit(l.peekByte(0)) {
		l.advance()
	}
	if l.peekByte(0) == '.' && l.peekByte(1) != '.' {
		l.advance()
		for isDigit(l.peekByte(0)) {
			l.advance()
		}
	}
	if c := l.peekByte(0); c == 'e' || c == 'E' {
		k := 1
		if s := l.peekByte(1); s == '+' || s == '-' {
			k = 2
		}
		if !isDigit(l.peekByte(k)) {
			return token{}, syntaxErrorAt(l.src, l.pos(), "trailing junk after numeric literal: exponent has no digits")
		}
		for ; k > 0; k-- {
			l.advance()
		}
		for isDigit(l.peekByte(0)) {
			l.advance()
		}
	}
	if c := l.peekByte(0); isIdentStart(c) {
		// NB: PostgreSQL 15+ rejects "123abc" too; accepting it as "123 AS abc"
		// hides typos.
		return token{}, syntaxErrorAt(l.src, l.pos(), "trailing junk after numeric literal")
	}
	return token{kind: tokNumber, text: l.src[start.Offset:l.off], pos: start, end: l.off}, nil
}

// blob scans x'hex digits': an even number of hex digits.
func (l *lexer) blob(start Pos) (token, error) {
	l.advance() // x
	l.advance() // opening quote
	end := strings.IndexByte(l.src[l.off:], '\'')
	if end < 0 {
		return token{}, syntaxErrorAt(l.src, start, "unterminated blob literal")
	}
	digits := l.src[l.off : l.off+end]
	for l.src[l.off] != '\'' {
		if c := l.src[l.off]; !isHexDigit(c) {
			r, _ := utf8.DecodeRuneInString(l.src[l.off:])
			return token{}, syntaxErrorAt(l.src, l.pos(), "invalid hexadecimal digit %q in blob literal", r)
		}
		l.advance()
	}
	l.advance() // closing quote
	if len(digits)%2 != 0 {
		return token{}, syntaxErrorAt(l.src, start, "blob literal x'%s' has an odd number of hexadecimal digits", digits)
	}
	return token{kind: tokBlob, text: digits, pos: start, end: l.off}, nil
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// escaped scans the rest of PostgreSQL's escape string E'...' from its
// opening quote: backslash escapes \b \f \n \r \t, \ooo (octal),
// \xhh (hexadecimal), \uXXXX and \UXXXXXXXX (code points), and any
// other character after a backslash as itself (\\, \'); a doubled quote
// is one quote.
func (l *lexer) escaped(start Pos) (string, error) {
	l.advance() // opening quote
	var b strings.Builder
	for {
		if l.off >= len(l.src) {
			return "", syntaxErrorAt(l.src, start, "unterminated string literal")
		}
		c := l.src[l.off]
		switch {
		case c == '\'' && l.peekByte(1) == '\'':
			b.WriteByte('\'')
			l.advance()
			l.advance()
			continue
		case c == '\'':
			l.advance()
			s := b.String()
			if !utf8.ValidString(s) {
				return "", syntaxErrorAt(l.src, start, "invalid UTF-8 in string literal")
			}
			return s, nil
		case c != '\\':
			b.WriteByte(c)
			l.advance()
			continue
		}
		at := l.pos()
		l.advance() // backslash
		if l.off >= len(l.src) {
			return "", syntaxErrorAt(l.src, start, "unterminated string literal")
		}
		e := l.src[l.off]
		digits := func(max int, ok func(byte) bool) string {
			from := l.off
			for l.off-from < max && l.off < len(l.src) && ok(l.src[l.off]) {
				l.advance()
			}
			return l.src[from:l.off]
		}
		switch e {
		case 'b', 'f', 'n', 'r', 't':
			b.WriteByte(map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[e])
			l.advance()
		case '0', '1', '2', '3', '4', '5', '6', '7':
			d := digits(3, func(c byte) bool { return c >= '0' && c <= '7' })
			v, _ := strconv.ParseUint(d, 8, 16)
			b.WriteByte(byte(v))
		case 'x':
			l.advance()
			d := digits(2, isHexDigit)
			if d == "" {
				b.WriteByte('x') // PostgreSQL: \x without digits is x
				continue
			}
			v, _ := strconv.ParseUint(d, 16, 8)
			b.WriteByte(byte(v))
		case 'u', 'U':
			l.advance()
			n := map[byte]int{'u': 4, 'U': 8}[e]
			d := digits(n, isHexDigit)
			v, err := strconv.ParseUint(d, 16, 32)
			if len(d) != n || err != nil || !utf8.ValidRune(rune(v)) || v == 0 {
				return "", syntaxErrorAt(l.src, at, "invalid Unicode escape: \\%c takes %d hexadecimal digits of a valid code point", e, n)
			}
			b.WriteRune(rune(v))
		default:
			// \\, \' and any other character: itself.
			r, size := utf8.DecodeRuneInString(l.src[l.off:])
			b.WriteRune(r)
			for range size {
				l.advance()
			}
		}
	}
}

// quoted scans a literal delimited by q where a doubled q stands for one.
func (l *lexer) quoted(q byte, start Pos, what string) (string, error) {
	l.advance() // opening quote
	var b strings.Builder
	from := l.off
	for {
		if l.off >= len(l.src) {
			return "", syntaxErrorAt(l.src, start, "unterminated %s", what)
		}
		if l.src[l.off] == q {
			b.WriteString(l.src[from:l.off])
			l.advance()
			if l.peekByte(0) == q {
				b.WriteByte(q)
				l.advance()
				from = l.off
				continue
			}
			s := b.String()
			if !utf8.ValidString(s) {
				return "", syntaxErrorAt(l.src, start, "invalid UTF-8 in %s", what)
			}
			return s, nil
		}
		l.advance()
	}
}

// foldIdent lower-cases ASCII letters of an unquoted identifier, as
// PostgreSQL does; other characters are kept.
func foldIdent(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
