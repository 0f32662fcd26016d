// Package sqlkw holds SQL's reserved words and the quoting of identifiers
// that follows from them, shared by the parser and deparser (engine/sql)
// and the quote_ident function (exec/expr), which must agree.
package sqlkw

import "strings"

// reserved lists the words that cannot be used as unquoted identifiers
// (column or table names, aliases without AS). It follows PostgreSQL's
// reserved and type/function-name keywords, so that "FROM t WHERE ..." and
// "a LEFT JOIN b" never read a keyword as an alias. Other keywords (year,
// date, value, first, ...) stay usable as names, as in PostgreSQL.
var reserved = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true,
	"as": true, "asc": true, "asymmetric": true, "between": true, "both": true, "case": true,
	"cast": true, "check": true, "collate": true, "column": true, "constraint": true,
	"create": true, "cross": true, "current_date": true, "current_time": true,
	"current_timestamp": true, "default": true, "desc": true, "distinct": true, "do": true,
	"else": true, "end": true, "except": true, "exists": true, "false": true, "fetch": true,
	"for": true, "foreign": true, "from": true, "full": true, "grant": true, "group": true,
	"having": true, "ilike": true, "in": true, "inner": true, "intersect": true,
	"interval": true, "into": true, "is": true, "join": true, "lateral": true, "leading": true,
	"left": true, "like": true, "limit": true, "natural": true, "not": true, "null": true,
	"offset": true, "on": true, "only": true, "or": true, "order": true, "outer": true,
	"over": true, "primary": true, "references": true, "returning": true, "right": true,
	"select": true, "similar": true, "some": true, "symmetric": true, "table": true,
	"then": true, "to": true, "trailing": true, "true": true, "union": true, "unique": true,
	"user": true, "using": true, "values": true, "when": true, "where": true, "window": true,
	"with": true,
}

// IsReserved reports whether word (lower case) is a reserved keyword, which
// must be quoted when it is used as a name.
func IsReserved(word string) bool { return reserved[word] }

// QuoteIdent returns name as it must be written in SQL: bare when it is a
// lower-case identifier that is not reserved, otherwise in double quotes
// (PostgreSQL's quote_ident).
func QuoteIdent(name string) string {
	ok := name != "" && !reserved[name]
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (i > 0 && (c >= '0' && c <= '9' || c == '$'))) {
			ok = false
		}
	}
	if ok {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
