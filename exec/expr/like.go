package expr

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// LIKE patterns compile to a matcher once per query. '%' matches any run
// of characters, '_' exactly one character (one UTF-8 sequence; an invalid
// byte counts as one character); matching is case-sensitive and byte-exact
// otherwise. There is no default escape character (SQL standard; note
// PostgreSQL defaults to backslash): ESCAPE 'c' makes c quote the next
// character, and ESCAPE '' means none.
//
// Fast paths: patterns without '_' that are an exact string, 'abc%',
// '%abc', '%abc%', 'abc%xyz' use bytes.Equal/HasPrefix/HasSuffix/Index;
// everything else runs the segment matcher: the pattern is split at '%'
// into segments matching a fixed number of characters; the first is
// anchored at the start, the last at the end, the middle ones are found
// leftmost-first, which is correct because '%' absorbs any gap.

type LikeKind uint8

const (
	LikeExact    LikeKind = iota // no wildcard
	LikePrefix                   // abc%
	LikeSuffix                   // %abc
	LikeContains                 // %abc%
	LikePreSuf                   // abc%xyz
	LikeAny                      // %
	LikeGeneral
)

// likeTok is a run of literal bytes, or (wild > 0) that many '_'.
type likeTok struct {
	lit  []byte
	wild int
}

// likeSeg is the part of a pattern between two '%'.
type likeSeg struct {
	toks  []likeTok
	chars int  // characters the segment matches
	plain bool // no '_': one literal run
}

type likeMatcher struct {
	Kind       LikeKind
	a, b       []byte // literal(s) of the fast paths
	segs       []likeSeg
	startAnch  bool // the pattern does not begin with '%'
	endAnch    bool // the pattern does not end with '%'
	hasPercent bool
	// need is the longest literal every match contains (nil: none worth
	// searching for): a batch is searched for it once, end to end, and
	// only the rows holding it are matched (candidateRows).
	need   []byte
	needAt int // the position in need of its rarest byte
}

// byteFreq ranks how common a byte is in text (higher: more common), from
// English letter frequencies; other bytes rank low (rare) except space.
func byteFreq(c byte) int {
	const order = "etaoinshrdlcumwfgypbvkjxqz" // most to least common
	switch {
	case c == ' ':
		return 100
	case c >= 'a' && c <= 'z':
		return 60 - strings.IndexByte(order, c)*2
	case c >= 'A' && c <= 'Z':
		return 20
	}
	return 10
}

// rarestByte is the position of lit's rarest byte.
func rarestByte(lit []byte) int {
	at := 0
	for i := range lit {
		if byteFreq(lit[i]) < byteFreq(lit[at]) {
			at = i
		}
	}
	return at
}

// minNeed is the shortest required literal worth a whole-batch search.
const minNeed = 3

// compileLike parses pattern with escape character esc (-1: none).
func CompileLikePattern(pattern []byte, esc int) (*likeMatcher, error) {
	m := &likeMatcher{}
	var segs []likeSeg
	var cur likeSeg
	var lit []byte
	flushLit := func() {
		if len(lit) > 0 {
			cur.toks = append(cur.toks, likeTok{lit: lit})
			cur.chars += utf8.RuneCount(lit)
			lit = nil
		}
	}
	for i := 0; i < len(pattern); {
		ch := pattern[i]
		if esc >= 0 && int(ch) == esc || esc >= 0x80 && hasRuneAt(pattern, i, rune(esc)) {
			_, w := utf8.DecodeRune(pattern[i:])
			i += w
			if i >= len(pattern) {
				return nil, nferr.Queryf("LIKE pattern must not end with the escape character: %q", string(pattern))
			}
			_, w = utf8.DecodeRune(pattern[i:])
			lit = append(lit, pattern[i:i+w]...)
			i += w
			continue
		}
		switch ch {
		case '%':
			flushLit()
			segs = append(segs, cur)
			cur = likeSeg{}
			m.hasPercent = true
			i++
		case '_':
			flushLit()
			if n := len(cur.toks); n > 0 && cur.toks[n-1].wild > 0 {
				cur.toks[n-1].wild++
			} else {
				cur.toks = append(cur.toks, likeTok{wild: 1})
			}
			cur.chars++
			i++
		default:
			_, w := utf8.DecodeRune(pattern[i:])
			lit = append(lit, pattern[i:i+w]...)
			i += w
		}
	}
	flushLit()
	segs = append(segs, cur)
	for i := range segs {
		s := &segs[i]
		s.plain = true
		for _, t := range s.toks {
			if t.wild > 0 {
				s.plain = false
			}
		}
	}
	m.segs = segs
	m.startAnch = true
	m.endAnch = true
	// Leading/trailing empty segments mean the pattern starts/ends with '%'.
	if len(segs) > 1 {
		m.startAnch = len(segs[0].toks) > 0
		m.endAnch = len(segs[len(segs)-1].toks) > 0
	}
	// Drop empty segments: consecutive '%' are one.
	var ne []likeSeg
	for _, s := range segs {
		if len(s.toks) > 0 {
			ne = append(ne, s)
		}
	}
	allPlain := true
	for _, s := range ne {
		allPlain = allPlain && s.plain
	}
	lit0 := func(i int) []byte {
		if len(ne[i].toks) == 0 {
			return nil
		}
		return ne[i].toks[0].lit
	}
	switch {
	case !m.hasPercent && allPlain:
		m.Kind = LikeExact
		if len(ne) > 0 {
			m.a = lit0(0)
		}
	case m.hasPercent && len(ne) == 0:
		m.Kind = LikeAny
	case allPlain && len(ne) == 1 && m.startAnch && !m.endAnch:
		m.Kind, m.a = LikePrefix, lit0(0)
	case allPlain && len(ne) == 1 && !m.startAnch && m.endAnch:
		m.Kind, m.a = LikeSuffix, lit0(0)
	case allPlain && len(ne) == 1 && !m.startAnch && !m.endAnch:
		m.Kind, m.a = LikeContains, lit0(0)
	case allPlain && len(ne) == 2 && m.startAnch && m.endAnch:
		m.Kind, m.a, m.b = LikePreSuf, lit0(0), lit0(1)
	default:
		m.Kind = LikeGeneral
	}
	m.segs = ne
	if m.Kind == LikeContains || m.Kind == LikeGeneral {
		// The literal whose rarest byte is rarest: the search runs on
		// that byte (bytes.IndexByte is vectorized) and checks the
		// literal around each hit.
		best := 1 << 30
		for _, s := range ne {
			for _, t := range s.toks {
				if len(t.lit) < minNeed {
					continue
				}
				at := rarestByte(t.lit)
				if f := byteFreq(t.lit[at]); f < best || f == best && len(t.lit) > len(m.need) {
					best, m.need, m.needAt = f, t.lit, at
				}
			}
		}
	}
	return m, nil
}

// candidateRows marks the rows in [lo, hi) whose string holds lit, by
// searching the batch's string bytes from row lo's start to row hi's end
// at once (a vectorized bytes.Index over long runs, instead of a call per
// row): a hit is a candidate when it lies within one row, and the search
// then resumes at the next row. Rows are contiguous and in order in str
// (vec's INVARIANT).
func candidateRows(str []byte, off []int32, lo, hi int, lit []byte, at int, marks []bool) {
	clear(marks[lo:hi])
	p, end := int(off[lo]), int(off[hi])
	r := lo
	c := lit[at]
	for p+len(lit) <= end {
		// The next place lit may start: its rarest byte found first.
		i := bytes.IndexByte(str[p+at:end-len(lit)+at+1], c)
		if i < 0 {
			return
		}
		hit := p + i
		if !bytes.Equal(str[hit:hit+len(lit)], lit) {
			p = hit + 1
			continue
		}
		for int(off[r+1]) <= hit {
			r++
		}
		if hit+len(lit) <= int(off[r+1]) {
			marks[r] = true
			p = int(off[r+1])
			r++
			continue
		}
		p = hit + 1
	}
}

func hasRuneAt(p []byte, i int, r rune) bool {
	got, _ := utf8.DecodeRune(p[i:])
	return got == r
}

// match reports whether s matches the pattern.
func (m *likeMatcher) Match(s []byte) bool {
	switch m.Kind {
	case LikeExact:
		return bytes.Equal(s, m.a)
	case LikePrefix:
		return bytes.HasPrefix(s, m.a)
	case LikeSuffix:
		return bytes.HasSuffix(s, m.a)
	case LikeContains:
		return bytes.Contains(s, m.a)
	case LikePreSuf:
		return len(s) >= len(m.a)+len(m.b) && bytes.HasPrefix(s, m.a) && bytes.HasSuffix(s, m.b)
	case LikeAny:
		return true
	}
	return m.matchGeneral(s)
}

// matchSegAt matches seg at s[pos:], returning the end position or -1.
func matchSegAt(seg *likeSeg, s []byte, pos int) int {
	for _, t := range seg.toks {
		if t.wild > 0 {
			for k := 0; k < t.wild; k++ {
				if pos >= len(s) {
					return -1
				}
				_, w := utf8.DecodeRune(s[pos:])
				pos += w
			}
			continue
		}
		if !bytes.HasPrefix(s[pos:], t.lit) {
			return -1
		}
		pos += len(t.lit)
	}
	return pos
}

// findSeg finds the leftmost match of seg in s at or after pos: its start
// and end, or -1.
func findSeg(seg *likeSeg, s []byte, pos int) (int, int) {
	if seg.plain {
		lit := seg.toks[0].lit
		i := bytes.Index(s[pos:], lit)
		if i < 0 {
			return -1, -1
		}
		return pos + i, pos + i + len(lit)
	}
	if lit := seg.toks[0].lit; len(lit) > 0 {
		// Anchor on the leading literal: only its occurrences can start a
		// match.
		for p := pos; p <= len(s); {
			i := bytes.Index(s[p:], lit)
			if i < 0 {
				return -1, -1
			}
			if e := matchSegAt(seg, s, p+i); e >= 0 {
				return p + i, e
			}
			p += i + 1
		}
		return -1, -1
	}
	for p := pos; p <= len(s); {
		if e := matchSegAt(seg, s, p); e >= 0 {
			return p, e
		}
		if p == len(s) {
			break
		}
		_, w := utf8.DecodeRune(s[p:])
		p += w
	}
	return -1, -1
}

func (m *likeMatcher) matchGeneral(s []byte) bool {
	segs := m.segs
	if !m.hasPercent {
		// Only '_' wildcards: one anchored segment covering all of s.
		if len(segs) == 0 {
			return len(s) == 0
		}
		return matchSegAt(&segs[0], s, 0) == len(s)
	}
	pos, end := 0, len(s)
	if m.startAnch {
		e := matchSegAt(&segs[0], s, 0)
		if e < 0 {
			return false
		}
		pos = e
		segs = segs[1:]
	}
	if m.endAnch {
		last := &segs[len(segs)-1]
		// The last segment matches exactly last.chars characters: step back
		// that many characters from the end.
		st := len(s)
		for k := 0; k < last.chars; k++ {
			if st <= pos {
				return false
			}
			_, w := utf8.DecodeLastRune(s[pos:st])
			st -= w
		}
		if st < pos || matchSegAt(last, s, st) != len(s) {
			return false
		}
		end = st
		segs = segs[:len(segs)-1]
	}
	for i := range segs {
		_, e := findSeg(&segs[i], s[:end], pos)
		if e < 0 {
			return false
		}
		pos = e
	}
	return pos <= end
}

// likeNode is x LIKE pattern (neg: NOT LIKE).
type likeNode struct {
	x   node
	pat node // non-constant pattern (nil when m is set)
	m   *likeMatcher
	esc int
	neg bool

	last     []byte // cache for non-constant patterns
	lastM    *likeMatcher
	lastV    *vec
	lastPV   *vec
	s1       []int32
	out      []int32
	v        vec
	matchBuf []bool
	nulls    []bool
	cand     []bool // likeSelect's candidate rows
}

func (c *compiler) compileLike(args []node, neg bool, desc string) (node, error) {
	for _, a := range args {
		if id := a.dt().ID(); id != arrow.STRING && id != arrow.NULL {
			return nil, nferr.Queryf("LIKE needs VARCHAR operands, not %s, in %s", TypeName(a.dt()), desc)
		}
	}
	esc := -1
	if len(args) == 3 {
		ec, ok := args[2].(*constNode)
		if !ok {
			return nil, nferr.Queryf("the ESCAPE of %s must be a constant", desc)
		}
		if ec.null {
			return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
		}
		switch utf8.RuneCountInString(ec.s) {
		case 0:
		case 1:
			r, _ := utf8.DecodeRuneInString(ec.s)
			esc = int(r)
		default:
			return nil, nferr.Queryf("invalid escape string %q in %s: must be one character", ec.s, desc)
		}
	}
	if args[0].dt().ID() == arrow.NULL || args[1].dt().ID() == arrow.NULL {
		return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
	}
	x := &likeNode{x: args[0], esc: esc, neg: neg}
	if pc, ok := args[1].(*constNode); ok {
		if pc.null {
			return &constNode{t: arrow.FixedWidthTypes.Boolean, k: pBool, null: true}, nil
		}
		m, err := CompileLikePattern([]byte(pc.s), esc)
		if err != nil {
			return nil, nferr.Wrap(nferr.KindQuery, err, "%s", desc)
		}
		x.m = m
	} else {
		x.pat = args[1]
	}
	return x, nil
}

func (x *likeNode) dt() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

// run evaluates the matches at the rows of sel; rows with a NULL operand
// are excluded from the returned selection of non-NULL rows.
func (x *likeNode) run(b *evalBatch, sel []int32) (v *vec, pv *vec, s []int32, err error) {
	v, err = x.x.eval(b, sel)
	if err != nil {
		return nil, nil, nil, err
	}
	var pnulls []bool
	if x.pat != nil {
		pv, err = x.pat.eval(b, sel)
		if err != nil {
			return nil, nil, nil, err
		}
		pnulls = pv.nulls
	}
	x.lastV, x.lastPV = v, pv
	s = sel
	if v.nulls != nil || pnulls != nil {
		s = nonNullSel(&x.s1, sel, b.n, v.nulls, pnulls)
	}
	return v, pv, s, nil
}

// matcherFor returns the matcher of row i's pattern (non-constant case).
func (x *likeNode) matcherFor(pv *vec, i int32) (*likeMatcher, error) {
	p := pv.strAt(i)
	if x.lastM != nil && bytes.Equal(p, x.last) {
		return x.lastM, nil
	}
	m, err := CompileLikePattern(p, x.esc)
	if err != nil {
		return nil, err
	}
	x.last = append(x.last[:0], p...)
	x.lastM = m
	return m, nil
}

func (x *likeNode) filter(b *evalBatch, sel []int32) ([]int32, error) {
	v, pv, s, err := x.run(b, sel)
	if err != nil {
		return nil, err
	}
	n := b.n
	size := n
	if s != nil {
		size = len(s)
	}
	out := Grow(x.out, size)
	x.out = out
	if x.m != nil {
		return likeSelect(x.m, x.neg, out, v, s, n, &x.cand), nil
	}
	k := 0
	var ferr error
	each(s, n, func(i int32) {
		if ferr != nil {
			return
		}
		m, err := x.matcherFor(pv, i)
		if err != nil {
			ferr = err
			return
		}
		out[k] = i
		k += b2i(m.Match(v.strAt(i)) != x.neg)
	})
	if ferr != nil {
		return nil, ferr
	}
	return out[:k], nil
}

// likeSelect writes the rows of sel (nil: all n) whose string matches m
// (neg: does not match) to out. The pattern kind is switched on once.
func likeSelect(m *likeMatcher, neg bool, out []int32, v *vec, sel []int32, n int, scratch *[]bool) []int32 {
	k := 0
	str, off := v.str, v.off
	if m.need != nil && n > 0 && (sel == nil || len(sel) > 0) {
		lo, hi := 0, n
		if sel != nil {
			lo, hi = int(sel[0]), int(sel[len(sel)-1])+1
		}
		if cap(*scratch) < n {
			*scratch = make([]bool, n)
		}
		marks := (*scratch)[:n]
		candidateRows(str, off, lo, hi, m.need, m.needAt, marks)
		contains := m.Kind == LikeContains
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i((marks[i] && (contains || m.Match(str[off[i]:off[i+1]]))) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i((marks[i] && (contains || m.Match(str[off[i]:off[i+1]]))) != neg)
			}
		}
		return out[:k]
	}
	switch m.Kind {
	case LikePrefix:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(bytes.HasPrefix(str[off[i]:off[i+1]], m.a) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(bytes.HasPrefix(str[off[i]:off[i+1]], m.a) != neg)
			}
		}
	case LikeSuffix:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(bytes.HasSuffix(str[off[i]:off[i+1]], m.a) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(bytes.HasSuffix(str[off[i]:off[i+1]], m.a) != neg)
			}
		}
	case LikeContains:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(bytes.Contains(str[off[i]:off[i+1]], m.a) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(bytes.Contains(str[off[i]:off[i+1]], m.a) != neg)
			}
		}
	case LikeExact:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(bytes.Equal(str[off[i]:off[i+1]], m.a) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(bytes.Equal(str[off[i]:off[i+1]], m.a) != neg)
			}
		}
	default:
		if sel == nil {
			for i := 0; i < n; i++ {
				out[k] = int32(i)
				k += b2i(m.Match(str[off[i]:off[i+1]]) != neg)
			}
		} else {
			for _, i := range sel {
				out[k] = i
				k += b2i(m.Match(str[off[i]:off[i+1]]) != neg)
			}
		}
	}
	return out[:k]
}

func (x *likeNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	pass, err := x.filter(b, sel)
	if err != nil {
		return nil, err
	}
	var pn []bool
	if x.lastPV != nil {
		pn = x.lastPV.nulls
	}
	nulls := orNulls(&x.nulls, sel, b.n, x.lastV.nulls, pn)
	boolFromFilter(&x.v, sel, b.n, pass, nulls)
	return &x.v, nil
}
