package expr

import (
	"bytes"
	"encoding/json"
	"github.com/nicflow/nicflow/internal/pgarray"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Arrays (SQL T[]): one-dimensional, 1-based, of a scalar element type,
// as PostgreSQL's. A value is a row of an Arrow list array whose items are
// the elements (NULL elements allowed); a vector of arrays (pList) holds
// that list array itself, aligned with the batch's rows, its validity the
// NULL arrays. Kernels here work row by row: they read the elements
// through the child array's vector (listView) and build their results
// with vbuild, which appends values of any physical kind.
//
// Text form (casts to and from text, output): {1,2,NULL}, elements
// double-quoted when empty, NULL (any case), or holding a space, comma,
// brace, quote or backslash, with \ before " and \ inside quotes; booleans
// are t and f there, as PostgreSQL's boolout prints them.

// int2vector (PostgreSQL's type of pg_index.indkey and indoption) is an
// array of integers whose subscripts start at 0 and whose text form is
// its elements separated by spaces ("1 3"); it is an Arrow list whose item
// field is named "int2vector" (Int2VectorArrow), so that it survives
// plans, batches and Arrow IPC as its own type.

// Int2VectorArrow is the Arrow type of int2vector.
var Int2VectorArrow arrow.DataType = arrow.ListOfField(arrow.Field{Name: "int2vector", Type: arrow.PrimitiveTypes.Int32, Nullable: true})

// IsInt2Vector reports the int2vector type.
func IsInt2Vector(t arrow.DataType) bool {
	lt, ok := t.(*arrow.ListType)
	return ok && lt.ElemField().Name == "int2vector"
}

// arrayLower is the subscript of an array type's first element.
func arrayLower(t arrow.DataType) int64 {
	if IsInt2Vector(t) {
		return 0
	}
	return 1
}

// The array functions of KindCall expressions.
const (
	FnArray         = "array"           // ARRAY[a, b, ...] [0-]: the arguments are of the element type
	FnArraySub      = "array_subscript" // a[i] [2]: 1-based, NULL out of range
	FnArrayLength   = "array_length"    // array_length(a, dim) [2]: NULL for an empty array or dim <> 1
	FnCardinality   = "cardinality"     // cardinality(a) [1]: the number of elements
	FnArrayToString = "array_to_string" // array_to_string(a, sep [, null]) [2-3]
	FnStringToArray = "string_to_array" // string_to_array(s, sep [, null]) text[] [2-3]
	FnArrayPosition = "array_position"  // array_position(a, x) [2]: the first i with a[i] IS NOT DISTINCT FROM x
	FnArrayAny      = "array_any"       // x op ANY (a) [3]: Args[0] the operator's Fn as a string literal
	FnArrayAll      = "array_all"       // x op ALL (a) [3]
	FnArrayCmp      = "array_cmp"       // a op b over arrays [3]: Args[0] the operator's Fn; element by element
	FnArrayCat      = "array_cat"       // a || b over arrays [2]: a's elements then b's; a NULL array adds none, both NULL give NULL
	FnIntSeries     = "int_series"      // int_series(start, stop [, step]) bigint[] [2-3]: generate_series's values as an array (NULL for a NULL argument)
	FnJSONOfArray   = "json_of_array"   // json_of_array(a) [1]: to_json of an array, [1,2] or ["a",null]
	FnJSONTypeof    = "json_typeof"     // json_typeof(j) [1]: object, array, string, number, boolean or null
	FnArrayContains = "array_contains"  // a @> b [2]: every element of b is in a (NULL elements match nothing)
	FnArrayOverlap  = "array_overlap"   // a && b [2]: a and b share an element (NULL elements match nothing)
)

// maxSeriesArray bounds the values of one row's int_series.
const maxSeriesArray = 10_000_000

// ArrowList is the Arrow type of an array of elem.
func ArrowList(elem arrow.DataType) arrow.DataType { return arrow.ListOf(elem) }

// IsArray reports an array type.
func IsArray(t arrow.DataType) bool { return t != nil && t.ID() == arrow.LIST }

// ArrayElem is the element type of an array type (nil for another).
func ArrayElem(t arrow.DataType) arrow.DataType {
	if lt, ok := t.(*arrow.ListType); ok {
		return lt.Elem()
	}
	return nil
}

// vbuild appends values of one physical kind into a vector.
type vbuild struct {
	v       vec
	k       pkind
	n       int
	hasNull bool
}

func newVBuild(k pkind, capacity int) *vbuild {
	b := &vbuild{k: k}
	b.v.nulls = make([]bool, 0, capacity)
	if k == pStr {
		b.v.off = append(make([]int32, 0, capacity+1), 0)
	}
	return b
}

// add appends value i of s (a NULL when it is).
func (b *vbuild) add(s *vec, i int32) {
	if s.isNull(i) {
		b.null()
		return
	}
	b.v.nulls = append(b.v.nulls, false)
	switch b.k {
	case pBool:
		b.v.b = append(b.v.b, s.b[i])
	case pI32:
		b.v.i32 = append(b.v.i32, s.i32[i])
	case pI64:
		b.v.i64 = append(b.v.i64, s.i64[i])
	case pF64:
		b.v.f64 = append(b.v.f64, s.f64[i])
	case pD128:
		b.v.d = append(b.v.d, s.d[i])
	case pIv:
		b.v.iv = append(b.v.iv, s.iv[i])
	case pStr:
		b.v.str = append(b.v.str, s.strAt(i)...)
		b.v.off = append(b.v.off, int32(len(b.v.str)))
	}
	b.n++
}

// addStr appends a string (pStr only).
func (b *vbuild) addStr(s []byte) {
	b.v.nulls = append(b.v.nulls, false)
	b.v.str = append(b.v.str, s...)
	b.v.off = append(b.v.off, int32(len(b.v.str)))
	b.n++
}

// addI32 appends an int32 (pI32 only).
func (b *vbuild) addI32(x int32) {
	b.v.nulls = append(b.v.nulls, false)
	b.v.i32 = append(b.v.i32, x)
	b.n++
}

// addBool appends a boolean (pBool only).
func (b *vbuild) addBool(x bool) {
	b.v.nulls = append(b.v.nulls, false)
	b.v.b = append(b.v.b, x)
	b.n++
}

// addI64 appends an int64 (pI64 only).
func (b *vbuild) addI64(x int64) {
	b.v.nulls = append(b.v.nulls, false)
	b.v.i64 = append(b.v.i64, x)
	b.n++
}

func (b *vbuild) null() {
	b.hasNull = true
	b.v.nulls = append(b.v.nulls, true)
	switch b.k {
	case pBool:
		b.v.b = append(b.v.b, false)
	case pI32:
		b.v.i32 = append(b.v.i32, 0)
	case pI64:
		b.v.i64 = append(b.v.i64, 0)
	case pF64:
		b.v.f64 = append(b.v.f64, 0)
	case pD128:
		b.v.d = append(b.v.d, decimal128.Num{})
	case pIv:
		b.v.iv = append(b.v.iv, arrow.MonthDayNanoInterval{})
	case pStr:
		b.v.off = append(b.v.off, int32(len(b.v.str)))
	}
	b.n++
}

// done is the vector built (nil nulls when none is NULL).
func (b *vbuild) done() *vec {
	if !b.hasNull {
		b.v.nulls = nil
	}
	if b.k == pStr && len(b.v.off) == 0 {
		b.v.off = []int32{0}
	}
	return &b.v
}

// array makes an Arrow array of type t from the values built.
func (b *vbuild) array(t arrow.DataType) arrow.Array {
	return toArray(memory.DefaultAllocator, b.done(), t, b.n, nil, placeAll)
}

// makeList is the list array of n rows of type lt: row i the elements
// child[offs[i]:offs[i+1]], NULL where nulls says (nil: none).
func makeList(lt arrow.DataType, n int, offs []int32, nulls []bool, child arrow.Array) arrow.Array {
	var validity *memory.Buffer
	nullCount := 0
	if nulls != nil {
		validity = memory.NewResizableBuffer(memory.DefaultAllocator)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bm := validity.Bytes()
		clear(bm)
		for i := 0; i < n; i++ {
			if nulls[i] {
				nullCount++
			} else {
				bitutil.SetBit(bm, i)
			}
		}
	}
	ob := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offs[:n+1]))
	d := array.NewData(lt, n, []*memory.Buffer{validity, ob}, []arrow.ArrayData{child.Data()}, nullCount, 0)
	a := array.MakeFromData(d)
	d.Release()
	return a
}

// listBuild builds a list array row by row.
type listBuild struct {
	elems *vbuild
	offs  []int32
	nulls []bool
	any   bool
}

func newListBuild(ek pkind, rows int) *listBuild {
	return &listBuild{elems: newVBuild(ek, rows), offs: append(make([]int32, 0, rows+1), 0), nulls: make([]bool, 0, rows)}
}

// end closes the current row (its elements added since the last end).
func (l *listBuild) end() {
	l.offs = append(l.offs, int32(l.elems.n))
	l.nulls = append(l.nulls, false)
}

func (l *listBuild) null() {
	l.offs = append(l.offs, int32(l.elems.n))
	l.nulls = append(l.nulls, true)
	l.any = true
}

// vec is the pList vector of the rows built.
func (l *listBuild) vec(lt arrow.DataType) *vec {
	child := l.elems.array(ArrayElem(lt))
	nulls := l.nulls
	if !l.any {
		nulls = nil
	}
	a := makeList(lt, len(l.nulls), l.offs, nulls, child)
	child.Release()
	return &vec{arr: a, nulls: nulls}
}

// listView reads the elements of a pList vector.
type listView struct {
	l   *array.List
	ev  *vec
	ek  pkind
	col colNode
}

func (lv *listView) load(v *vec, elem arrow.DataType) error {
	lv.l = v.arr.(*array.List)
	k, ok := kindOf(elem)
	if !ok {
		return nferr.Queryf("arrays of %s are not supported", elem)
	}
	lv.ek = k
	lv.col = colNode{idx: 0, t: elem, k: k}
	child := lv.l.ListValues()
	var err error
	lv.ev, err = lv.col.eval(&evalBatch{cols: []arrow.Array{child}, n: child.Len()}, nil)
	return err
}

// rng is the child positions of row i's elements.
func (lv *listView) rng(i int32) (int32, int32) {
	s, e := lv.l.ValueOffsets(int(i))
	return int32(s), int32(e)
}

// inSel walks a selection in order: next reports whether row i is in it.
type inSel struct {
	sel []int32
	j   int
}

func (s *inSel) next(i int32) bool {
	if s.sel == nil {
		return true
	}
	for s.j < len(s.sel) && s.sel[s.j] < i {
		s.j++
	}
	return s.j < len(s.sel) && s.sel[s.j] == i
}

// rowNode computes its value row by row: fn appends row i's result to out
// (a vbuild of the result's kind, or lb for an array result).
type rowNode struct {
	t      arrow.DataType
	args   []node
	desc   string
	strict bool // a NULL argument gives NULL
	fn     func(r *rowNode, i int32) error

	ins   []*vec
	views []*listView // of the array arguments (nil for others)
	out   *vbuild
	lb    *listBuild
	loc   *time.Location
	op    cmpOp
	field string
}

func (r *rowNode) dt() arrow.DataType { return r.t }

func (r *rowNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	r.ins = r.ins[:0]
	if r.views == nil {
		r.views = make([]*listView, len(r.args))
	}
	for j, a := range r.args {
		v, err := a.eval(b, sel)
		if err != nil {
			return nil, err
		}
		r.ins = append(r.ins, v)
		if IsArray(a.dt()) {
			if r.views[j] == nil {
				r.views[j] = &listView{}
			}
			if err := r.views[j].load(v, ArrayElem(a.dt())); err != nil {
				return nil, err
			}
		}
	}
	n := b.n
	k, _ := kindOf(r.t)
	if k == pList {
		ek, _ := kindOf(ArrayElem(r.t))
		r.lb = newListBuild(ek, n)
	} else {
		r.out = newVBuild(k, n)
	}
	in := inSel{sel: sel}
	for i := int32(0); i < int32(n); i++ {
		skip := !in.next(i)
		if !skip && r.strict {
			for _, v := range r.ins {
				if v.isNull(i) {
					skip = true
					break
				}
			}
		}
		if skip {
			r.null()
			continue
		}
		if err := r.fn(r, i); err != nil {
			return nil, err
		}
	}
	if k == pList {
		return r.lb.vec(r.t), nil
	}
	return r.out.done(), nil
}

func (r *rowNode) null() {
	if r.lb != nil {
		r.lb.null()
	} else {
		r.out.null()
	}
}

// compareAt compares value i of a with value j of b, both of kind k; ok
// is false for a kind without an order here.
func compareAt(k pkind, a *vec, i int32, b *vec, j int32) (int, bool) {
	switch k {
	case pBool:
		return b2i(a.b[i]) - b2i(b.b[j]), true
	case pI32:
		return cmpOrd(a.i32[i], b.i32[j]), true
	case pI64:
		return cmpOrd(a.i64[i], b.i64[j]), true
	case pF64:
		return cmpOrd(floatKey(a.f64[i]), floatKey(b.f64[j])), true
	case pD128:
		return a.d[i].Cmp(b.d[j]), true
	case pStr:
		return bytes.Compare(a.strAt(i), b.strAt(j)), true
	case pIv:
		// NB: by fields (equality is exact; the order is not PostgreSQL's
		// normalized one, which the binder refuses for arrays).
		x, y := a.iv[i], b.iv[j]
		if c := cmpOrd(x.Months, y.Months); c != 0 {
			return c, true
		}
		if c := cmpOrd(x.Days, y.Days); c != 0 {
			return c, true
		}
		return cmpOrd(x.Nanoseconds, y.Nanoseconds), true
	}
	return 0, false
}

func cmpOrd[T int32 | int64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// opHolds is whether c (a comparison's sign) satisfies op.
func opHolds(op cmpOp, c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	case opGe:
		return c >= 0
	}
	return false
}

// needsQuote reports whether an element's text is quoted in an array's
// text form.
func needsQuote(s []byte) bool {
	if len(s) == 0 || strings.EqualFold(string(s), "null") {
		return true
	}
	for _, c := range s {
		switch c {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}

// AppendArrayElem appends an element's text to an array's text form,
// quoted where it must be.
func AppendArrayElem(dst, s []byte) []byte {
	if !needsQuote(s) {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// elemTexts is the text of every element of a child array of type et (as
// a string vector of child.Len() rows): the cast to text, booleans t/f.
func elemTexts(child arrow.Array, et arrow.DataType, desc string, loc *time.Location) (*vec, error) {
	k, ok := kindOf(et)
	if !ok {
		return nil, nferr.Queryf("arrays of %s are not supported in %s", et, desc)
	}
	col := &colNode{idx: 0, t: et, k: k}
	b := &evalBatch{cols: []arrow.Array{child}, n: child.Len()}
	if k == pBool {
		v, err := col.eval(b, nil)
		if err != nil {
			return nil, err
		}
		out := newVBuild(pStr, b.n)
		for i := int32(0); i < int32(b.n); i++ {
			switch {
			case v.isNull(i):
				out.null()
			case v.b[i]:
				out.addStr([]byte("t"))
			default:
				out.addStr([]byte("f"))
			}
		}
		return out.done(), nil
	}
	n, err := newCast(col, arrow.BinaryTypes.String, desc, loc)
	if err != nil {
		return nil, err
	}
	return n.eval(b, nil)
}

// arrayCastNode casts text to an array, an array to text, or an array to
// an array of another element type (element by element, with the
// element's cast).
type arrayCastNode struct {
	x        node
	from, to arrow.DataType
	desc     string
	loc      *time.Location
}

func (c *arrayCastNode) dt() arrow.DataType { return c.to }

func newArrayCast(x node, to arrow.DataType, desc string, loc *time.Location) (node, error) {
	from := x.dt()
	switch {
	case IsArray(to) && (from.ID() == arrow.STRING || IsArray(from)):
	case IsArray(from) && to.ID() == arrow.STRING:
	default:
		return nil, nferr.Queryf("cannot cast %s to %s in %s", TypeName(from), TypeName(to), desc)
	}
	if IsArray(to) {
		if _, ok := kindOf(ArrayElem(to)); !ok {
			return nil, nferr.Queryf("arrays of %s are not supported in %s", ArrayElem(to), desc)
		}
	}
	return &arrayCastNode{x: x, from: from, to: to, desc: desc, loc: loc}, nil
}

func (c *arrayCastNode) eval(b *evalBatch, sel []int32) (*vec, error) {
	xv, err := c.x.eval(b, sel)
	if err != nil {
		return nil, err
	}
	n := b.n
	in := inSel{sel: sel}
	switch {
	case c.from.ID() == arrow.STRING:
		// The elements' texts, cast together to the element type.
		texts := newVBuild(pStr, n)
		offs := append(make([]int32, 0, n+1), 0)
		nulls := make([]bool, n)
		anyNull := false
		for i := int32(0); i < int32(n); i++ {
			if !in.next(i) || xv.isNull(i) {
				nulls[i], anyNull = true, true
				offs = append(offs, int32(texts.n))
				continue
			}
			var elems []string
			var en []bool
			ok := true
			if IsInt2Vector(c.to) {
				elems = strings.Fields(string(xv.strAt(i)))
				en = make([]bool, len(elems))
			} else {
				elems, en, ok = pgarray.Parse(string(xv.strAt(i)))
			}
			if !ok {
				return nil, nferr.Dataf("malformed array literal: %q in %s", string(xv.strAt(i)), c.desc)
			}
			for j, e := range elems {
				if en[j] {
					texts.null()
				} else {
					texts.addStr([]byte(e))
				}
			}
			offs = append(offs, int32(texts.n))
		}
		strs := texts.array(arrow.BinaryTypes.String)
		child, err := castChild(strs, ArrayElem(c.to), c.desc, c.loc)
		strs.Release()
		if err != nil {
			return nil, err
		}
		if !anyNull {
			nulls = nil
		}
		a := makeList(c.to, n, offs, nulls, child)
		child.Release()
		return &vec{arr: a, nulls: nulls}, nil
	case IsArray(c.to):
		l := xv.arr.(*array.List)
		child, err := castChild(l.ListValues(), ArrayElem(c.to), c.desc, c.loc)
		if err != nil {
			return nil, err
		}
		offs := make([]int32, n+1)
		for i := 0; i < n; i++ {
			s, e := l.ValueOffsets(i)
			offs[i], offs[i+1] = int32(s), int32(e)
		}
		a := makeList(c.to, n, offs, xv.nulls, child)
		child.Release()
		return &vec{arr: a, nulls: xv.nulls}, nil
	}
	// An array to its text.
	l := xv.arr.(*array.List)
	ev, err := elemTexts(l.ListValues(), ArrayElem(c.from), c.desc, c.loc)
	if err != nil {
		return nil, err
	}
	out := newVBuild(pStr, n)
	var buf []byte
	for i := int32(0); i < int32(n); i++ {
		if !in.next(i) || xv.isNull(i) {
			out.null()
			continue
		}
		s, e := l.ValueOffsets(int(i))
		buf = appendText(buf[:0], IsInt2Vector(c.from), ev, int32(s), int32(e))
		out.addStr(buf)
	}
	return out.done(), nil
}

// AppendArrayText appends the text form of elements [s, e) of the string
// vector ev.
func AppendArrayText(dst []byte, ev *vec, s, e int32) []byte {
	dst = append(dst, '{')
	for j := s; j < e; j++ {
		if j > s {
			dst = append(dst, ',')
		}
		if ev.isNull(j) {
			dst = append(dst, "NULL"...)
			continue
		}
		dst = AppendArrayElem(dst, ev.strAt(j))
	}
	return append(dst, '}')
}

// appendText appends an array's text form, or an int2vector's (its
// elements separated by spaces).
func appendText(dst []byte, vector bool, ev *vec, s, e int32) []byte {
	if !vector {
		return AppendArrayText(dst, ev, s, e)
	}
	for j := s; j < e; j++ {
		if j > s {
			dst = append(dst, ' ')
		}
		if ev.isNull(j) {
			dst = append(dst, "NULL"...)
			continue
		}
		dst = append(dst, ev.strAt(j)...)
	}
	return dst
}

// castChild casts a whole child array to et.
func castChild(child arrow.Array, et arrow.DataType, desc string, loc *time.Location) (arrow.Array, error) {
	if arrow.TypeEqual(child.DataType(), et) {
		child.Retain()
		return child, nil
	}
	k, ok := kindOf(child.DataType())
	if !ok {
		return nil, nferr.Queryf("arrays of %s are not supported in %s", child.DataType(), desc)
	}
	col := &colNode{idx: 0, t: child.DataType(), k: k}
	n, err := newCast(col, et, desc, loc)
	if err != nil {
		return nil, err
	}
	b := &evalBatch{cols: []arrow.Array{child}, n: child.Len()}
	v, err := n.eval(b, nil)
	if err != nil {
		return nil, err
	}
	return toArray(memory.DefaultAllocator, v, et, b.n, nil, placeAll), nil
}

// ArrayTexts is the text form of row i of a list array of elements
// formatted by elem (booleans t/f).
func ArrayTexts(a arrow.Array) (func(i int) string, error) {
	l, ok := a.(*array.List)
	if !ok {
		return nil, nferr.Internalf("not an array: %s", a.DataType())
	}
	ev, err := elemTexts(l.ListValues(), ArrayElem(a.DataType()), "output", nil)
	if err != nil {
		return nil, err
	}
	vector := IsInt2Vector(a.DataType())
	return func(i int) string {
		s, e := l.ValueOffsets(i)
		return string(appendText(nil, vector, ev, int32(s), int32(e)))
	}, nil
}

// compileArray builds the array functions.
func (c *compiler) compileArray(e *Expr, args []node, desc string) (node, error) {
	arr := func(i int) error {
		if i >= len(args) || !IsArray(args[i].dt()) {
			return nferr.Queryf("function %s needs an array as argument %d in %s", e.Fn, i+1, desc)
		}
		return nil
	}
	integer := func(i int) error {
		t := args[i].dt()
		if t.ID() == arrow.NULL {
			args[i] = newNullConst(arrow.PrimitiveTypes.Int64)
			return nil
		}
		if !IsInteger(t) {
			return nferr.Queryf("function %s needs an integer as argument %d, not %s, in %s", e.Fn, i+1, TypeName(t), desc)
		}
		var err error
		args[i], err = c.cast(args[i], arrow.PrimitiveTypes.Int64, desc)
		return err
	}
	text := func(i int) error {
		t := args[i].dt()
		if t.ID() == arrow.NULL {
			args[i] = newNullConst(arrow.BinaryTypes.String)
			return nil
		}
		if t.ID() != arrow.STRING {
			return nferr.Queryf("function %s needs text as argument %d, not %s, in %s", e.Fn, i+1, TypeName(t), desc)
		}
		return nil
	}
	// twoArrays checks two arguments, arrays of one type (the binder
	// casts them alike).
	twoArrays := func() error {
		if err := arity(e, 2, 2); err != nil {
			return err
		}
		if err := arr(0); err != nil {
			return err
		}
		if err := arr(1); err != nil {
			return err
		}
		if !arrow.TypeEqual(args[0].dt(), args[1].dt()) {
			return nferr.Internalf("%s of %s and %s (the binder casts them alike) in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
		}
		return nil
	}
	i32 := arrow.PrimitiveTypes.Int32
	r := &rowNode{args: args, desc: desc, strict: true, loc: c.loc}
	if IsJSONList(e.Fn) {
		return compileJSONList(e, args, r, desc)
	}
	switch e.Fn {
	case FnArray:
		if len(args) == 0 {
			return nil, nferr.Queryf("cannot determine the type of an empty array in %s: cast it (ARRAY[]::integer[])", desc)
		}
		et := args[0].dt()
		for _, a := range args[1:] {
			if !arrow.TypeEqual(a.dt(), et) {
				return nil, nferr.Internalf("ARRAY[...] of mixed types %s and %s in %s", TypeName(et), TypeName(a.dt()), desc)
			}
		}
		if et.ID() == arrow.NULL || IsArray(et) {
			return nil, nferr.Queryf("ARRAY[...] of %s is not supported in %s", TypeName(et), desc)
		}
		if _, ok := kindOf(et); !ok {
			return nil, nferr.Queryf("arrays of %s are not supported in %s", et, desc)
		}
		r.t, r.strict = ArrowList(et), false
		r.fn = func(r *rowNode, i int32) error {
			for _, v := range r.ins {
				r.lb.elems.add(v, i)
			}
			r.lb.end()
			return nil
		}
		return r, nil
	case FnArraySub:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		if err := integer(1); err != nil {
			return nil, err
		}
		r.t = ArrayElem(args[0].dt())
		lower := arrayLower(args[0].dt())
		r.fn = func(r *rowNode, i int32) error {
			lv := r.views[0]
			s, en := lv.rng(i)
			k := r.ins[1].i64[i] - lower + 1
			if k < 1 || k > int64(en-s) {
				r.out.null()
				return nil
			}
			r.out.add(lv.ev, s+int32(k-1))
			return nil
		}
		return r, nil
	case FnArrayCat:
		if err := twoArrays(); err != nil {
			return nil, err
		}
		r.t, r.strict = ArrowList(ArrayElem(args[0].dt())), false
		r.fn = func(r *rowNode, i int32) error {
			if r.ins[0].isNull(i) && r.ins[1].isNull(i) {
				r.lb.null()
				return nil
			}
			for k := 0; k < 2; k++ {
				if r.ins[k].isNull(i) {
					continue
				}
				s, en := r.views[k].rng(i)
				for j := s; j < en; j++ {
					r.lb.elems.add(r.views[k].ev, j)
				}
			}
			r.lb.end()
			return nil
		}
		return r, nil
	case FnIntSeries:
		if err := arity(e, 2, 3); err != nil {
			return nil, err
		}
		for i := range args {
			if err := integer(i); err != nil {
				return nil, err
			}
		}
		r.t = ArrowList(arrow.PrimitiveTypes.Int64)
		r.fn = func(r *rowNode, i int32) error {
			start, stop, step := r.ins[0].i64[i], r.ins[1].i64[i], int64(1)
			if len(r.ins) == 3 {
				step = r.ins[2].i64[i]
			}
			if step == 0 {
				return nferr.Queryf("step size cannot equal zero")
			}
			n := 0
			for v := start; (step > 0 && v <= stop) || (step < 0 && v >= stop); v += step {
				if n++; n > maxSeriesArray {
					return nferr.Resourcef("generate_series of a row's columns: more than %d values in %s", maxSeriesArray, desc)
				}
				r.lb.elems.addI64(v)
				if (step > 0 && v > math.MaxInt64-step) || (step < 0 && v < math.MinInt64-step) {
					break // the next value would overflow: past stop
				}
			}
			r.lb.end()
			return nil
		}
		return r, nil
	case FnArrayLength, FnCardinality:
		if err := arr(0); err != nil {
			return nil, err
		}
		if e.Fn == FnArrayLength {
			if err := arity(e, 2, 2); err != nil {
				return nil, err
			}
			if err := integer(1); err != nil {
				return nil, err
			}
		} else if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		r.t = i32
		length := e.Fn == FnArrayLength
		r.fn = func(r *rowNode, i int32) error {
			s, en := r.views[0].rng(i)
			if length && (r.ins[1].i64[i] != 1 || en == s) {
				r.out.null()
				return nil
			}
			r.out.addI32(en - s)
			return nil
		}
		return r, nil
	case FnArrayContains, FnArrayOverlap:
		if err := twoArrays(); err != nil {
			return nil, err
		}
		r.t = arrow.FixedWidthTypes.Boolean
		et := ArrayElem(args[0].dt())
		overlap := e.Fn == FnArrayOverlap
		var texts [2]*vec
		var of [2]*array.List
		set := map[string]struct{}{}
		r.fn = func(r *rowNode, i int32) error {
			for k := range 2 {
				if lv := r.views[k]; of[k] != lv.l {
					var err error
					if texts[k], err = elemTexts(lv.l.ListValues(), et, r.desc, r.loc); err != nil {
						return err
					}
					of[k] = lv.l
				}
			}
			// Elements compare by their text: one text per value of a type.
			clear(set)
			s, en := r.views[0].rng(i)
			for j := s; j < en; j++ {
				if !texts[0].isNull(j) {
					set[string(texts[0].strAt(j))] = struct{}{}
				}
			}
			s, en = r.views[1].rng(i)
			res := !overlap
			for j := s; j < en; j++ {
				_, in := set[string(texts[1].strAt(j))]
				in = in && !texts[1].isNull(j)
				if overlap && in {
					res = true
					break
				}
				if !overlap && !in {
					res = false
					break
				}
			}
			r.out.addBool(res)
			return nil
		}
		return r, nil
	case FnJSONTypeof:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		if err := text(0); err != nil {
			return nil, err
		}
		r.t = arrow.BinaryTypes.String
		r.fn = func(r *rowNode, i int32) error {
			v := bytes.TrimSpace(r.ins[0].strAt(i))
			if !json.Valid(v) {
				return badJSON("json_typeof")
			}
			r.out.addStr([]byte(jsonTypeName(v)))
			return nil
		}
		return r, nil
	case FnJSONOfArray:
		if err := arity(e, 1, 1); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		r.t = arrow.BinaryTypes.String
		et := ArrayElem(args[0].dt())
		var texts *vec
		var of *array.List
		var buf []byte
		r.fn = func(r *rowNode, i int32) error {
			lv := r.views[0]
			if of != lv.l {
				var err error
				if texts, err = elemTexts(lv.l.ListValues(), et, r.desc, r.loc); err != nil {
					return err
				}
				of = lv.l
			}
			s, en := lv.rng(i)
			buf = appendJSONArray(buf[:0], et, texts, s, en)
			r.out.addStr(buf)
			return nil
		}
		return r, nil
	case FnArrayToString:
		if err := arity(e, 2, 3); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		for i := 1; i < len(args); i++ {
			if err := text(i); err != nil {
				return nil, err
			}
		}
		r.t, r.strict = arrow.BinaryTypes.String, false
		var texts *vec
		var of *array.List
		var buf []byte
		r.fn = func(r *rowNode, i int32) error {
			if r.ins[0].isNull(i) || r.ins[1].isNull(i) {
				r.out.null()
				return nil
			}
			lv := r.views[0]
			if of != lv.l {
				var err error
				if texts, err = elemTexts(lv.l.ListValues(), ArrayElem(r.args[0].dt()), r.desc, r.loc); err != nil {
					return err
				}
				of = lv.l
			}
			sep := r.ins[1].strAt(i)
			var nullStr []byte
			hasNull := len(r.ins) > 2 && !r.ins[2].isNull(i)
			if hasNull {
				nullStr = r.ins[2].strAt(i)
			}
			buf = buf[:0]
			first := true
			s, en := lv.rng(i)
			for j := s; j < en; j++ {
				if texts.isNull(j) && !hasNull {
					continue
				}
				if !first {
					buf = append(buf, sep...)
				}
				first = false
				if texts.isNull(j) {
					buf = append(buf, nullStr...)
				} else {
					buf = append(buf, texts.strAt(j)...)
				}
			}
			r.out.addStr(buf)
			return nil
		}
		return r, nil
	case FnStringToArray:
		if err := arity(e, 2, 3); err != nil {
			return nil, err
		}
		for i := range args {
			if err := text(i); err != nil {
				return nil, err
			}
		}
		r.t, r.strict = ArrowList(arrow.BinaryTypes.String), false
		r.fn = func(r *rowNode, i int32) error {
			if r.ins[0].isNull(i) {
				r.lb.null()
				return nil
			}
			s := r.ins[0].strAt(i)
			var nullStr []byte
			hasNull := len(r.ins) > 2 && !r.ins[2].isNull(i)
			if hasNull {
				nullStr = r.ins[2].strAt(i)
			}
			add := func(p []byte) {
				if hasNull && bytes.Equal(p, nullStr) {
					r.lb.elems.null()
				} else {
					r.lb.elems.addStr(p)
				}
			}
			switch {
			case len(s) == 0:
			case r.ins[1].isNull(i):
				// A NULL separator: each character an element.
				for _, ch := range string(s) {
					add([]byte(string(ch)))
				}
			case len(r.ins[1].strAt(i)) == 0:
				add(s)
			default:
				for _, p := range bytes.Split(s, r.ins[1].strAt(i)) {
					add(p)
				}
			}
			r.lb.end()
			return nil
		}
		return r, nil
	case FnArrayPosition:
		if err := arity(e, 2, 2); err != nil {
			return nil, err
		}
		if err := arr(0); err != nil {
			return nil, err
		}
		et := ArrayElem(args[0].dt())
		if args[1].dt().ID() == arrow.NULL {
			args[1] = newNullConst(et)
		}
		if !arrow.TypeEqual(args[1].dt(), et) {
			return nil, nferr.Internalf("array_position of %s in %s (the binder casts them alike) in %s", TypeName(args[1].dt()), TypeName(args[0].dt()), desc)
		}
		r.t, r.strict = i32, false
		r.fn = func(r *rowNode, i int32) error {
			if r.ins[0].isNull(i) {
				r.out.null()
				return nil
			}
			lv := r.views[0]
			x := r.ins[1]
			s, en := lv.rng(i)
			for j := s; j < en; j++ {
				if lv.ev.isNull(j) || x.isNull(i) {
					if lv.ev.isNull(j) && x.isNull(i) {
						r.out.addI32(j - s + 1)
						return nil
					}
					continue
				}
				if c, ok := compareAt(lv.ek, lv.ev, j, x, i); ok && c == 0 {
					r.out.addI32(j - s + 1)
					return nil
				}
			}
			r.out.null()
			return nil
		}
		return r, nil
	case FnArrayAny, FnArrayAll, FnArrayCmp:
		if err := arity(e, 3, 3); err != nil {
			return nil, err
		}
		opc, ok := args[0].(*constNode)
		if !ok || opc.k != pStr {
			return nil, nferr.Internalf("%s needs its operator as a string constant in %s", e.Fn, desc)
		}
		op, ok := cmpOpOf[opc.s]
		if !ok {
			return nil, nferr.Internalf("%s of operator %q in %s", e.Fn, opc.s, desc)
		}
		args = args[1:]
		r.args, r.op = args, op
		if e.Fn == FnArrayCmp {
			if err := arr(0); err != nil {
				return nil, err
			}
		}
		if err := arr(1); err != nil {
			return nil, err
		}
		et := ArrayElem(args[1].dt())
		if args[0].dt().ID() == arrow.NULL {
			args[0] = newNullConst(et)
			if e.Fn == FnArrayCmp {
				args[0] = newNullConst(args[1].dt())
			}
		}
		xt := args[0].dt()
		if e.Fn == FnArrayCmp {
			xt = ArrayElem(xt)
		}
		if !arrow.TypeEqual(xt, et) {
			return nil, nferr.Internalf("%s compares %s with %s (the binder casts them alike) in %s", e.Fn, TypeName(args[0].dt()), TypeName(args[1].dt()), desc)
		}
		if k, _ := kindOf(et); k == pIv && op != opEq && op != opNe {
			return nil, nferr.Queryf("intervals in arrays compare only for equality in %s", desc)
		}
		r.t = arrow.FixedWidthTypes.Boolean
		all := e.Fn == FnArrayAll
		if e.Fn == FnArrayCmp {
			r.fn = arrayCmpRow
			return r, nil
		}
		r.fn = func(r *rowNode, i int32) error {
			lv := r.views[1]
			x := r.ins[0]
			s, en := lv.rng(i)
			null := false
			for j := s; j < en; j++ {
				if lv.ev.isNull(j) {
					null = true
					continue
				}
				c, _ := compareAt(lv.ek, x, i, lv.ev, j)
				if opHolds(r.op, c) != all {
					r.out.add(&vec{b: []bool{!all}}, 0)
					return nil
				}
			}
			if null {
				r.out.null()
				return nil
			}
			r.out.add(&vec{b: []bool{all}}, 0)
			return nil
		}
		// x NULL: NULL, unless the array is empty (ANY: false, ALL: true).
		r.strict = false
		inner := r.fn
		r.fn = func(r *rowNode, i int32) error {
			if r.ins[1].isNull(i) {
				r.out.null()
				return nil
			}
			if r.ins[0].isNull(i) {
				s, en := r.views[1].rng(i)
				if s == en {
					r.out.add(&vec{b: []bool{all}}, 0)
				} else {
					r.out.null()
				}
				return nil
			}
			return inner(r, i)
		}
		return r, nil
	}
	return nil, nferr.Queryf("unknown function %q in %s", e.Fn, desc)
}

// arrayCmpRow compares two arrays as PostgreSQL does: element by element
// (NULL elements equal each other and sort after any value), then by
// length.
func arrayCmpRow(r *rowNode, i int32) error {
	a, b := r.views[0], r.views[1]
	as, ae := a.rng(i)
	bs, be := b.rng(i)
	c := 0
	for j := int32(0); c == 0 && as+j < ae && bs+j < be; j++ {
		an, bn := a.ev.isNull(as+j), b.ev.isNull(bs+j)
		switch {
		case an && bn:
		case an:
			c = 1
		case bn:
			c = -1
		default:
			c, _ = compareAt(a.ek, a.ev, as+j, b.ev, bs+j)
		}
	}
	if c == 0 {
		c = cmpOrd(ae-as, be-bs)
	}
	r.out.add(&vec{b: []bool{opHolds(r.op, c)}}, 0)
	return nil
}

// broadcastList is m rows of the one-row list one (NULL when null).
func broadcastList(t arrow.DataType, one arrow.Array, null bool, m int) arrow.Array {
	ek, _ := kindOf(ArrayElem(t))
	lb := newListBuild(ek, m)
	if null || one == nil {
		for i := 0; i < m; i++ {
			lb.null()
		}
		return lb.vec(t).arr
	}
	var lv listView
	if err := lv.load(&vec{arr: one}, ArrayElem(t)); err != nil {
		panic(err) // the type was checked when the constant was made
	}
	s, e := lv.rng(0)
	for i := 0; i < m; i++ {
		for j := s; j < e; j++ {
			lb.elems.add(lv.ev, j)
		}
		lb.end()
	}
	return lb.vec(t).arr
}

// gatherLists merges the array vectors of a CASE's branches (parts,
// each over its rows) into one of type lt; a row no part has is NULL.
func gatherLists(lt arrow.DataType, parts []part, sel []int32, n int) (*vec, error) {
	which := make([]int, n)
	for i := range which {
		which[i] = -1
	}
	views := make([]listView, len(parts))
	for p, pt := range parts {
		if err := views[p].load(pt.v, ArrayElem(lt)); err != nil {
			return nil, err
		}
		for _, i := range pt.rows {
			which[i] = p
		}
	}
	ek, _ := kindOf(ArrayElem(lt))
	lb := newListBuild(ek, n)
	in := inSel{sel: sel}
	for i := int32(0); i < int32(n); i++ {
		p := -1
		if in.next(i) {
			p = which[i]
		}
		if p < 0 || parts[p].v.isNull(i) {
			lb.null()
			continue
		}
		s, e := views[p].rng(i)
		for j := s; j < e; j++ {
			lb.elems.add(views[p].ev, j)
		}
		lb.end()
	}
	return lb.vec(lt), nil
}

// listToArray copies the rows of a pList vector that p places into a new
// array from mem.
func listToArray(mem memory.Allocator, v *vec, n int, sel []int32, p placement) arrow.Array {
	src := v.arr
	if p != placeDense {
		src.Retain()
	} else {
		parts := make([]arrow.Array, len(sel))
		for j, i := range sel {
			parts[j] = array.NewSlice(v.arr, int64(i), int64(i)+1)
		}
		if len(parts) == 0 {
			parts = append(parts, array.NewSlice(v.arr, 0, 0))
		}
		var err error
		src, err = array.Concatenate(parts, memory.DefaultAllocator)
		for _, q := range parts {
			q.Release()
		}
		if err != nil {
			panic(err) // the parts are of one type
		}
	}
	defer src.Release()
	out, err := array.Concatenate([]arrow.Array{src}, mem)
	if err != nil {
		panic(err)
	}
	return out
}
