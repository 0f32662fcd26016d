package expr

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// JSON over text (nicflow has no json type): PostgreSQL's -> and ->>, #>
// and #>>, json_extract_path and json_extract_path_text, one kernel
// walking a path of object keys (strings) and array indexes (integers;
// negative ones count from the end, as PostgreSQL's).
const (
	FnJSONGet      = "json_get"       // json_get(json, k1, k2, ...) -> the value at the path as JSON text (PostgreSQL's json ->, #>) [2-]
	FnJSONGetText  = "json_get_text"  // the same, a string unquoted, JSON null as NULL (->>, #>>) [2-]
	FnJSONPath     = "json_path"      // json_get over a path of texts, which index arrays too (#>, json_extract_path) [2-]
	FnJSONPathText = "json_path_text" // the same as text (#>>, json_extract_path_text) [2-]
)

func (c *compiler) compileJSON(e *Expr, args []node, desc string) (node, error) {
	if len(args) < 2 {
		return nil, nferr.Queryf("%s takes a JSON value and a path, in %s", e.Fn, desc)
	}
	str := arrow.BinaryTypes.String
	for i, a := range args {
		var err error
		switch {
		case a.dt().ID() == arrow.NULL:
			args[i] = newNullConst(str)
		case a.dt().ID() == arrow.STRING:
		case i > 0 && IsInteger(a.dt()):
			args[i], err = c.cast(a, arrow.PrimitiveTypes.Int64, desc)
		default:
			return nil, nferr.Queryf("%s needs JSON text and keys (text) or indexes (integers), not %s as argument %d, in %s", e.Fn, TypeName(a.dt()), i+1, desc)
		}
		if err != nil {
			return nil, err
		}
	}
	f := &funcNode{desc: desc, t: str, args: args, run: jsonGetKernel}
	if e.Fn == FnJSONGetText || e.Fn == FnJSONPathText {
		f.field = "text"
	}
	if e.Fn == FnJSONPath || e.Fn == FnJSONPathText {
		f.digits = 1
	}
	return f, nil
}

func jsonGetKernel(f *funcNode, out *vec, in []*vec, sel []int32, n int) error {
	w := newStrWriter(out, n)
	var err error
	var nulls []bool
	setNull := func(i int32) {
		if nulls == nil {
			nulls = make([]bool, n)
			if out.nulls != nil {
				copy(nulls, out.nulls)
			}
		}
		nulls[i] = true
	}
	each(sel, n, func(i int32) {
		w.at(i)
		if err != nil {
			return
		}
		v := json.RawMessage(bytes.TrimSpace(in[0].strAt(i)))
		if !json.Valid(v) {
			err = errAt("invalid input syntax for type json", f.desc)
			return
		}
		for _, k := range in[1:] {
			var ok bool
			if k.off != nil {
				key := string(k.strAt(i))
				if idx, perr := strconv.ParseInt(key, 10, 64); perr == nil && f.digits == 1 && len(v) > 0 && v[0] == '[' {
					// A path's element (#>, json_extract_path) indexes an array.
					v, ok = jsonElement(v, idx)
				} else {
					v, ok = jsonMember(v, key)
				}
			} else {
				v, ok = jsonElement(v, k.i64[i])
			}
			if !ok {
				setNull(i)
				return
			}
		}
		if f.field == "text" {
			switch {
			case bytes.Equal(v, []byte("null")):
				setNull(i)
				return
			case len(v) > 0 && v[0] == '"':
				var s string
				json.Unmarshal(v, &s)
				out.str = append(out.str, s...)
				return
			}
		}
		out.str = append(out.str, v...)
	})
	w.finish(n)
	if nulls != nil {
		out.nulls = nulls
	}
	return err
}

// jsonMember is object v's member k (the last of duplicates, as
// PostgreSQL's json operators take it), as its text.
func jsonMember(v json.RawMessage, k string) (json.RawMessage, bool) {
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return nil, false
	}
	r, ok := m[k]
	return bytes.TrimSpace(r), ok
}

// jsonElement is array v's element i (from 0; negative from the end).
func jsonElement(v json.RawMessage, i int64) (json.RawMessage, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return nil, false
	}
	if i < 0 {
		i += int64(len(a))
	}
	if i < 0 || i >= int64(len(a)) {
		return nil, false
	}
	return bytes.TrimSpace(a[i]), true
}

// JSONPath splits a #> path, PostgreSQL's text array '{a,b,0}', into its
// elements (quoted ones with "..." and backslashes).
func JSONPath(s string) ([]string, bool) {
	s = string(bytes.TrimSpace([]byte(s)))
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	var out []string
	for len(body) > 0 {
		body = string(bytes.TrimLeft([]byte(body), " "))
		var el string
		if body != "" && body[0] == '"' {
			j := 1
			var b []byte
			for ; j < len(body) && body[j] != '"'; j++ {
				if body[j] == '\\' && j+1 < len(body) {
					j++
				}
				b = append(b, body[j])
			}
			if j >= len(body) {
				return nil, false
			}
			el, body = string(b), body[j+1:]
		} else {
			j := 0
			for j < len(body) && body[j] != ',' {
				j++
			}
			el, body = string(bytes.TrimSpace([]byte(body[:j]))), body[j:]
		}
		out = append(out, el)
		body = string(bytes.TrimLeft([]byte(body), " "))
		if body != "" {
			if body[0] != ',' {
				return nil, false
			}
			body = body[1:]
		}
	}
	return out, true
}

// The arrays behind PostgreSQL's JSON set-returning functions (the binder
// unnests them): json_array_elements[_text], json_each[_text] and
// json_object_keys, and their jsonb names. Args[1] is the name the query
// called, for PostgreSQL's error texts. JSON is text, so elements and
// values keep their text as written (json's rule; jsonb would normalize
// spacing and key order), and an object's members keep their order and
// duplicates.
const (
	FnJSONElems      = "json_array_items"             // json_array_items(j, fname) text[] [2]: an array's elements as JSON text
	FnJSONElemsText  = "json_array_items_text"        // the same, strings unquoted, JSON null as NULL [2]
	FnJSONKeys       = "json_object_keys_list"        // an object's keys [2]
	FnJSONValues     = "json_object_values_list"      // an object's values as JSON text [2]
	FnJSONValuesText = "json_object_values_text_list" // the same, strings unquoted, JSON null as NULL [2]
)

// IsJSONList reports the functions above.
func IsJSONList(fn string) bool {
	switch fn {
	case FnJSONElems, FnJSONElemsText, FnJSONKeys, FnJSONValues, FnJSONValuesText:
		return true
	}
	return false
}

// compileJSONList types one of the functions above into r.
func compileJSONList(e *Expr, args []node, r *rowNode, desc string) (node, error) {
	if len(args) != 2 {
		return nil, nferr.Internalf("%s takes a JSON value and the called function's name, in %s", e.Fn, desc)
	}
	name, ok := args[1].(*constNode)
	if !ok || name.k != pStr {
		return nil, nferr.Internalf("%s needs the called function's name as a constant, in %s", e.Fn, desc)
	}
	switch args[0].dt().ID() {
	case arrow.NULL:
		args[0] = newNullConst(arrow.BinaryTypes.String)
	case arrow.STRING:
	default:
		return nil, nferr.Queryf("function %s(%s) does not exist in %s: it takes json", name.s, TypeName(args[0].dt()), desc)
	}
	r.t, r.strict = ArrowList(arrow.BinaryTypes.String), false
	fname, fn := name.s, e.Fn
	r.fn = func(r *rowNode, i int32) error {
		if r.ins[0].isNull(i) {
			r.lb.null()
			return nil
		}
		v := bytes.TrimSpace(r.ins[0].strAt(i))
		if !json.Valid(v) {
			return badJSON(fname)
		}
		var err error
		switch fn {
		case FnJSONElems, FnJSONElemsText:
			err = jsonElems(r, v, fn == FnJSONElemsText, fname)
		default:
			err = jsonMembers(r, v, fn, fname)
		}
		if err != nil {
			return err
		}
		r.lb.end()
		return nil
	}
	return r, nil
}

// badJSON is the data error of a value that is not JSON, met by the
// function called fname.
func badJSON(fname string) error {
	return nferr.Dataf("invalid input syntax for type json in %s", fname)
}

// jsonKind names what the JSON value v is, for PostgreSQL's errors: "an
// object", "an array" or "a scalar".
func jsonKind(v []byte) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "a scalar"
}

// addJSONText adds one element or value: its JSON text, or as text (a
// string unquoted, null as NULL).
func addJSONText(r *rowNode, v []byte, asText bool) {
	v = bytes.TrimSpace(v)
	if asText {
		switch {
		case bytes.Equal(v, []byte("null")):
			r.lb.elems.null()
			return
		case len(v) > 0 && v[0] == '"':
			var s string
			json.Unmarshal(v, &s)
			r.lb.elems.addStr([]byte(s))
			return
		}
	}
	r.lb.elems.addStr(v)
}

func jsonElems(r *rowNode, v []byte, asText bool, fname string) error {
	if v[0] != '[' {
		if strings.HasSuffix(fname, "_array_length") {
			return nferr.Dataf("cannot get array length of a non-array")
		}
		return nferr.Dataf("cannot extract elements from %s (in %s)", jsonKind(v), fname)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return badJSON(fname)
	}
	for _, x := range a {
		addJSONText(r, x, asText)
	}
	return nil
}

// jsonMembers adds an object's keys or values, in the order written.
func jsonMembers(r *rowNode, v []byte, fn, fname string) error {
	if v[0] != '{' {
		if strings.HasSuffix(fname, "_object_keys") {
			return nferr.Dataf("cannot call %s on %s", fname, jsonKind(v))
		}
		return nferr.Dataf("cannot call %s on a non-object", fname)
	}
	d := json.NewDecoder(bytes.NewReader(v))
	bad := func() error { return badJSON(fname) }
	if _, err := d.Token(); err != nil { // {
		return bad()
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return bad()
		}
		var val json.RawMessage
		if err := d.Decode(&val); err != nil {
			return bad()
		}
		switch fn {
		case FnJSONKeys:
			r.lb.elems.addStr([]byte(k.(string)))
		default:
			addJSONText(r, val, fn == FnJSONValuesText)
		}
	}
	return nil
}

// appendJSONArray appends to_json of the array whose elements (of type et)
// are texts[s:e] as PostgreSQL writes it: [1,2], ["a",null], [true],
// timestamps as "2024-01-02T03:04:05".
func appendJSONArray(dst []byte, et arrow.DataType, texts *vec, s, e int32) []byte {
	dst = append(dst, '[')
	for j := s; j < e; j++ {
		if j > s {
			dst = append(dst, ',')
		}
		if texts.isNull(j) {
			dst = append(dst, "null"...)
			continue
		}
		t := texts.strAt(j)
		switch {
		case IsNumeric(et):
			dst = append(dst, t...)
		case et.ID() == arrow.BOOL:
			if len(t) > 0 && t[0] == 't' {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		default:
			if et.ID() == arrow.TIMESTAMP {
				t = bytes.Replace(t, []byte(" "), []byte("T"), 1)
			}
			dst = AppendJSONString(dst, t)
		}
	}
	return append(dst, ']')
}

// AppendJSONString appends s as a JSON string, escaped as PostgreSQL's
// to_json(text) escapes it.
func AppendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
				continue
			}
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// jsonTypeName is json_typeof of the valid JSON value v.
func jsonTypeName(v []byte) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
