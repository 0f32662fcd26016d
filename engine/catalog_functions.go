package engine

import (
	"strconv"
	"strings"
)

// pg_catalog's functions that clients call on the catalog (psql's \d,
// SQLAlchemy's inspector, pgjdbc's DatabaseMetaData), defined in SQL over
// the system views of catalog_system.go, as PostgreSQL defines some of
// its own in SQL (plan.SQLFunctionCatalog: the binder binds a call's body
// in its place, the call's arguments substituted for $1, $2, ...).

// sqlFunctions are the bodies by name and number of arguments.
var sqlFunctions = map[string]map[int]string{
	// format_type(type OID, typmod): the type's SQL name, with its
	// modifiers ('numeric(15,2)'), NULL for a NULL OID, '???' for an
	// unknown one (PostgreSQL's answers).
	"format_type": {2: formatTypeBody()},
	// Comments: nicflow has no COMMENT ON, so pg_description is empty and
	// these give NULL, as PostgreSQL does for an object without one.
	"obj_description":   {1: descriptionBody("$1", "0", ""), 2: descriptionBody("$1", "0", "$2")},
	"col_description":   {2: descriptionBody("$1", "$2", "")},
	"shobj_description": {2: descriptionBody("$1", "0", "$2")},
	// Encodings: nicflow's text is UTF-8 (pg_database.encoding 6).
	"pg_encoding_to_char": {1: "CASE WHEN $1 = 6 THEN 'UTF8' WHEN $1 = 0 THEN 'SQL_ASCII' WHEN $1 IS NULL THEN CAST(NULL AS TEXT) ELSE '' END"},
	// pg_proc is empty (no user-defined functions), so no OID names a
	// function and these give NULL, as PostgreSQL does for such an OID.
	"pg_get_function_result":    {1: "CAST(NULL AS TEXT)"},
	"pg_get_function_arguments": {1: "CAST(NULL AS TEXT)"},
	// A constraint's definition (pg_constraint.conbin holds it as text).
	"pg_get_constraintdef": {1: constraintDefBody, 2: constraintDefBody},
	// The schemas searched (name[]): pg_catalog first (when asked for
	// the implicit ones too), then public, PostgreSQL's default
	// search_path; nicflow has no temporary schema.
	"current_schemas": {1: "CASE WHEN $1 THEN ARRAY['pg_catalog', 'public'] ELSE ARRAY['public'] END"},
	// nicflow has no partitioned tables: a relation's ancestors are
	// itself (PostgreSQL's answer for a table that is no partition).
	// NB: a set-returning function in PostgreSQL, here of one row, which
	// it is in the select list.
	"pg_partition_ancestors": {1: "CAST($1 AS regclass)"},
	// An index's CREATE INDEX (column 0), or its k-th key column's name
	// (pg_indexes holds the definitions; index names are unique in
	// nicflow's one schema).
	"pg_get_indexdef": {1: indexDefBody("0"), 3: indexDefBody("$2")},
	// A view's definition, as pg_views.definition holds it.
	"pg_get_viewdef": {1: viewDefBody, 2: viewDefBody},
	// pg_trigger is empty (no triggers): no OID names one.
	"pg_get_triggerdef": {1: "CAST(NULL AS TEXT)", 2: "CAST(NULL AS TEXT)"},
	// nicflow has no extended statistics (pg_statistic_ext is empty).
	"pg_get_statisticsobjdef_columns": {1: "CAST(NULL AS TEXT)"},
	// A relation can be published when it is a table (of kind r or p),
	// as PostgreSQL's rule for relations outside pg_catalog.
	"pg_relation_is_publishable": {1: "EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = $1 AND c.relkind IN ('r', 'p'))"},
	// nicflow has no sequences: no column owns one.
	"pg_get_serial_sequence": {2: "CAST(NULL AS TEXT)"},
}

// indexDefBody is pg_get_indexdef(index OID $1, column col).
func indexDefBody(col string) string {
	return "CASE WHEN " + col + " = 0 THEN (SELECT x.indexdef FROM pg_catalog.pg_indexes x JOIN pg_catalog.pg_class c ON c.relname = x.indexname WHERE c.oid = $1 AND c.relkind = 'i')" +
		" ELSE (SELECT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[" + col + " - 1] WHERE i.indexrelid = $1) END"
}

const viewDefBody = "(SELECT v.definition FROM pg_catalog.pg_views v JOIN pg_catalog.pg_class c ON c.relname = v.viewname WHERE c.oid = $1 AND c.relkind = 'v')"

const constraintDefBody = "(SELECT c.conbin FROM pg_catalog.pg_constraint c WHERE c.oid = $1)"

// SQLFunction implements plan.SQLFunctionCatalog.
func (c *StorageCatalog) SQLFunction(name string, nargs int) (string, bool) {
	body, ok := sqlFunctions[strings.TrimPrefix(name, "pg_catalog.")][nargs]
	return body, ok
}

// descriptionBody is the comment on object obj (column sub, 0 for the
// object itself) of catalog class (a regclass name; "" for any).
func descriptionBody(obj, sub, class string) string {
	s := "(SELECT d.description FROM pg_catalog.pg_description d WHERE d.objoid = " + obj + " AND d.objsubid = " + sub
	if class != "" {
		s += " AND d.classoid = CAST(" + class + " AS regclass)"
	}
	return s + ")"
}

// sqlTypeNames are format_type's names of the types of pgTypes.
var sqlTypeNames = map[string]string{
	"bool": "boolean", "int8": "bigint", "int2": "smallint", "int4": "integer", "float4": "real", "float8": "double precision",
	"varchar": "character varying", "timestamp": "timestamp without time zone", "timestamptz": "timestamp with time zone",
	"time": "time without time zone",
}

func formatTypeBody() string {
	var b strings.Builder
	b.WriteString("CASE WHEN $1 IS NULL THEN CAST(NULL AS TEXT)")
	for _, t := range pgTypes {
		name := t.name
		if n, ok := sqlTypeNames[name]; ok {
			name = n
		}
		when := " WHEN $1 = " + strconv.Itoa(t.oid) + " THEN "
		switch t.name {
		case "numeric":
			// typmod ((precision << 16) | scale) + 4.
			b.WriteString(when + "CASE WHEN $2 >= 4 THEN 'numeric(' || CAST(($2 - 4) / 65536 AS TEXT) || ',' || CAST(($2 - 4) % 65536 AS TEXT) || ')' ELSE 'numeric' END")
		case "varchar":
			// typmod length + 4.
			b.WriteString(when + "CASE WHEN $2 >= 4 THEN 'character varying(' || CAST($2 - 4 AS TEXT) || ')' ELSE 'character varying' END")
		default:
			b.WriteString(when + "'" + name + "'")
		}
	}
	for _, t := range pgTypes {
		name := t.name
		if n, ok := sqlTypeNames[name]; ok {
			name = n
		}
		b.WriteString(" WHEN $1 = " + strconv.Itoa(pgArrayOIDs[t.oid]) + " THEN '" + name + "[]'")
	}
	b.WriteString(" WHEN $1 = 22 THEN 'int2vector' ELSE '???' END")
	return b.String()
}
