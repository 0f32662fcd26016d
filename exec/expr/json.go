package expr

import (
	"bytes"
	"encoding/json"
	"strconv"

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
