package pgarray

import "strings"

// Parse reads a one-dimensional array in PostgreSQL's text form:
// {a,b}, {"a b","c\"d"}, NULL (unquoted, any case) for a NULL element,
// blanks around elements ignored. ok is false for a malformed one.
func Parse(s string) (elems []string, nulls []bool, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, nil, false
	}
	body := s[1 : len(s)-1]
	if strings.TrimSpace(body) == "" {
		return nil, nil, true
	}
	isBlank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for i := 0; ; {
		for i < len(body) && isBlank(body[i]) {
			i++
		}
		var b strings.Builder
		quoted := i < len(body) && body[i] == '"'
		if quoted {
			i++
			for ; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' && i+1 < len(body) {
					i++
				}
				b.WriteByte(body[i])
			}
			if i >= len(body) {
				return nil, nil, false
			}
			i++
		} else {
			for ; i < len(body) && body[i] != ','; i++ {
				switch body[i] {
				case '{', '}', '"':
					return nil, nil, false // nested arrays are not supported
				case '\\':
					if i+1 < len(body) {
						i++
					}
				}
				b.WriteByte(body[i])
			}
		}
		v := b.String()
		if !quoted {
			v = strings.TrimRight(v, " \t\n\r")
			if v == "" {
				return nil, nil, false
			}
		}
		null := !quoted && strings.EqualFold(v, "null")
		if null {
			v = ""
		}
		elems = append(elems, v)
		nulls = append(nulls, null)
		for i < len(body) && isBlank(body[i]) {
			i++
		}
		if i == len(body) {
			return elems, nulls, true
		}
		if body[i] != ',' {
			return nil, nil, false
		}
		i++
	}
}
