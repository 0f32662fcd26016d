package engine

import (
	"cmp"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/engine/bind"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/storage"
)

// The system catalogs: information_schema (tables, columns, views) and the
// basics of PostgreSQL's pg_catalog that tools and users query (pg_tables,
// pg_views, pg_namespace, pg_class, pg_attribute, pg_type, pg_database).
// Both are read-only views the engine makes from the catalog at each
// lookup, as SQL over VALUES; a pg_catalog name is found unqualified too
// (PostgreSQL searches pg_catalog first), after the user's tables.
//
// OIDs: PostgreSQL's for the schemas and types; a table's or view's is a
// hash of its name above 16384 (the first user OID), so it stays the same
// while the object exists.

// systemTable is one system view: its columns, their SQL types, and its
// rows as SQL literals.
type systemTable struct {
	cols  []string
	types []string
	rows  func(c *StorageCatalog) [][]string
}

// The OIDs of the schemas and the owner.
const (
	oidPgCatalog = 11
	oidPublic    = 2200
	oidInfo      = 13000
	oidOwner     = 10
	oidBtree     = 403 // pg_am's btree
)

var systemTables = map[string]systemTable{
	"information_schema.tables": {
		cols:  []string{"table_catalog", "table_schema", "table_name", "table_type"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				kind := "BASE TABLE"
				if t.External {
					kind = "EXTERNAL TABLE"
				}
				rows = append(rows, quoted("nicflow", sqlSchema(t.Schema), t.Name, kind))
			}
			for _, v := range c.db.Views() {
				rows = append(rows, quoted("nicflow", sqlSchema(v.Schema), v.Name, "VIEW"))
			}
			return rows
		},
	},
	"information_schema.columns": {
		cols:  []string{"table_catalog", "table_schema", "table_name", "column_name", "ordinal_position", "column_default", "is_nullable", "data_type"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "INTEGER", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				for i, col := range t.Columns {
					def := "NULL"
					if i < len(t.Defaults) && t.Defaults[i] != "" {
						def = sql.QuoteString(t.Defaults[i])
					}
					null := "NO"
					if col.Nullable {
						null = "YES"
					}
					r := quoted("nicflow", sqlSchema(t.Schema), t.Name, col.Name)
					r = append(r, strconv.Itoa(i+1), def)
					rows = append(rows, append(r, quoted(null, columnType(col))...))
				}
			}
			return rows
		},
	},
	"information_schema.views": {
		cols:  []string{"table_catalog", "table_schema", "table_name", "view_definition"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, v := range c.db.Views() {
				rows = append(rows, quoted("nicflow", sqlSchema(v.Schema), v.Name, v.SQL))
			}
			return rows
		},
	},
	"information_schema.table_constraints": {
		cols:  []string{"constraint_catalog", "constraint_schema", "constraint_name", "table_catalog", "table_schema", "table_name", "constraint_type"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				s := sqlSchema(t.Schema)
				add := func(name, kind string) {
					rows = append(rows, quoted("nicflow", s, name, "nicflow", s, t.Name, kind))
				}
				for _, ix := range t.Indexes {
					switch {
					case ix.Primary:
						add(ix.Name, "PRIMARY KEY")
					case ix.Constraint:
						add(ix.Name, "UNIQUE")
					}
				}
				for _, ch := range t.Checks {
					add(ch.Name, "CHECK")
				}
				for _, fk := range t.ForeignKeys {
					add(fk.Name, "FOREIGN KEY")
				}
			}
			return rows
		},
	},
	"information_schema.key_column_usage": {
		cols:  []string{"constraint_catalog", "constraint_schema", "constraint_name", "table_catalog", "table_schema", "table_name", "column_name", "ordinal_position"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "INTEGER"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				s := sqlSchema(t.Schema)
				add := func(name string, cols []string) {
					for i, col := range cols {
						rows = append(rows, append(quoted("nicflow", s, name, "nicflow", s, t.Name, col), strconv.Itoa(i+1)))
					}
				}
				for _, ix := range t.Indexes {
					if ix.Constraint {
						add(ix.Name, ix.Columns)
					}
				}
				for _, fk := range t.ForeignKeys {
					add(fk.Name, fk.Columns)
				}
			}
			return rows
		},
	},
	"information_schema.referential_constraints": {
		cols:  []string{"constraint_catalog", "constraint_schema", "constraint_name", "unique_constraint_catalog", "unique_constraint_schema", "unique_constraint_name", "match_option", "update_rule", "delete_rule"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				for _, fk := range t.ForeignKeys {
					refSchema := t.Schema
					if i := strings.IndexByte(fk.RefTable, '.'); i >= 0 {
						refSchema = fk.RefTable[:i]
					}
					match := "NONE" // PostgreSQL's name for MATCH SIMPLE
					if fk.MatchFull {
						match = "FULL"
					}
					rows = append(rows, quoted("nicflow", sqlSchema(t.Schema), fk.Name, "nicflow", sqlSchema(refSchema), fk.RefIndex,
						match, cmp.Or(fk.OnUpdate, "NO ACTION"), cmp.Or(fk.OnDelete, "NO ACTION")))
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_namespace": {
		cols:  []string{"oid", "nspname", "nspowner"},
		types: []string{"INTEGER", "TEXT", "INTEGER"},
		rows: func(*StorageCatalog) [][]string {
			return [][]string{
				{strconv.Itoa(oidPgCatalog), sql.QuoteString("pg_catalog"), strconv.Itoa(oidOwner)},
				{strconv.Itoa(oidPublic), sql.QuoteString("public"), strconv.Itoa(oidOwner)},
				{strconv.Itoa(oidInfo), sql.QuoteString("information_schema"), strconv.Itoa(oidOwner)},
			}
		},
	},
	"pg_catalog.pg_database": {
		// One database; its strings compare by bytes (the "C" collation).
		// datacl is NULL (default privileges: nicflow has no GRANT), of no
		// type: nicflow has no arrays (aclitem[] in PostgreSQL).
		cols: []string{"oid", "datname", "datdba", "encoding", "datlocprovider", "datistemplate", "datallowconn", "datconnlimit",
			"dattablespace", "datcollate", "datctype", "daticulocale", "datacl"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "INTEGER", "TEXT", "BOOLEAN", "BOOLEAN", "INTEGER",
			"INTEGER", "TEXT", "TEXT", "TEXT", ""},
		rows: func(*StorageCatalog) [][]string {
			return [][]string{{"1", sql.QuoteString("nicflow"), strconv.Itoa(oidOwner), "6", "'c'", "false", "true", "-1", // 6: UTF8
				"1663", "'C'", "'C'", "CAST(NULL AS TEXT)", "NULL"}}
		},
	},
	"pg_catalog.pg_proc": {
		// Functions: nicflow has no user-defined functions, and its
		// built-in ones are not listed (PostgreSQL lists its own here).
		cols: []string{"oid", "proname", "pronamespace", "proowner", "prokind", "prorettype", "pronargs", "proretset", "prosecdef", "provolatile", "prolang",
			"proargtypes", "proallargtypes", "proargmodes", "proargnames", "proargdefaults", "pronargdefaults", "proisstrict", "prosrc"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "INTEGER", "TEXT", "INTEGER", "INTEGER", "BOOLEAN", "BOOLEAN", "TEXT", "INTEGER",
			"OIDVECTOR", "INTEGER[]", "TEXT[]", "TEXT[]", "TEXT", "INTEGER", "BOOLEAN", "TEXT"},
		rows: func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_class": {
		// Tables (r, f for external ones), views (v) and indexes (i, of
		// access method btree). nicflow has no TOAST tables, rules,
		// triggers, row security, tablespaces, typed tables or storage
		// options: those columns hold PostgreSQL's values for a relation
		// without them (reloptions and relacl NULL).
		cols: []string{"oid", "relname", "relnamespace", "relkind", "relowner", "reltuples", "relnatts", "relam", "relhasindex", "relchecks", "reltype", "relpersistence", "relispartition",
			"relpages", "reltoastrelid", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity", "reltablespace", "reloftype", "relreplident", "relisshared",
			"relfilenode", "relhassubclass", "relispopulated", "relfrozenxid", "reloptions", "relacl", "relpartbound"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "TEXT", "INTEGER", "DOUBLE PRECISION", "INTEGER", "INTEGER", "BOOLEAN", "INTEGER", "INTEGER", "TEXT", "BOOLEAN",
			"INTEGER", "INTEGER", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "INTEGER", "INTEGER", "TEXT", "BOOLEAN",
			"INTEGER", "BOOLEAN", "BOOLEAN", "INTEGER", "TEXT[]", "TEXT[]", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			rel := func(oid int, name, kind string, tuples int64, natts, am int, hasIndex bool, checks int) []string {
				return []string{strconv.Itoa(oid), sql.QuoteString(name), strconv.Itoa(oidPublic), sql.QuoteString(kind),
					strconv.Itoa(oidOwner), "CAST(" + strconv.FormatInt(tuples, 10) + " AS DOUBLE PRECISION)", strconv.Itoa(natts), strconv.Itoa(am),
					strconv.FormatBool(hasIndex), strconv.Itoa(checks), "0", "'p'", "false",
					"0", "0", "false", "false", "false", "false", "0", "0", "'d'", "false",
					strconv.Itoa(oid), "false", "true", "0", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT)"}
			}
			// A foreign key's tables have triggers in PostgreSQL (its
			// checks), and psql's \d lists foreign keys only then.
			triggers := map[string]bool{}
			for _, t := range c.db.Tables() {
				for _, fk := range t.ForeignKeys {
					triggers[t.Schema+"."+t.Name] = true
					ref := fk.RefTable
					if !strings.Contains(ref, ".") {
						ref = t.Schema + "." + ref
					}
					triggers[ref] = true
				}
			}
			for _, t := range c.db.Tables() {
				kind := "r"
				if t.External {
					kind = "f"
				}
				r := rel(relOID(t.Schema, t.Name), t.Name, kind, t.Rows(), len(t.Columns), 0, len(t.Indexes) > 0, len(t.Checks))
				r[16] = strconv.FormatBool(triggers[t.Schema+"."+t.Name])
				rows = append(rows, r)
				for _, ix := range t.Indexes {
					rows = append(rows, rel(relOID(t.Schema, ix.Name), ix.Name, "i", t.Rows(), len(ix.Columns), oidBtree, false, 0))
				}
			}
			for _, v := range c.db.Views() {
				rows = append(rows, rel(relOID(v.Schema, v.Name), v.Name, "v", -1, len(v.Fields), 0, false, 0))
			}
			return rows
		},
	},
	"pg_catalog.pg_index": {
		// One row per index (nicflow's are btree, of columns, without
		// predicates: indexprs and indpred NULL). indkey holds the
		// columns' numbers (attnum), indoption 0 for each (ASC NULLS
		// LAST), indcollation the default collation (100) for text
		// columns, else 0.
		cols: []string{"indexrelid", "indrelid", "indnatts", "indnkeyatts", "indisunique", "indnullsnotdistinct", "indisprimary", "indisexclusion", "indimmediate",
			"indisclustered", "indisvalid", "indcheckxmin", "indisready", "indislive", "indisreplident", "indkey", "indcollation", "indoption", "indexprs", "indpred"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "INTEGER", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN",
			"BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "INT2VECTOR", "OIDVECTOR", "INT2VECTOR", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				for _, ix := range t.Indexes {
					keys, colls, opts := make([]string, len(ix.Columns)), make([]string, len(ix.Columns)), make([]string, len(ix.Columns))
					for i, name := range ix.Columns {
						n := attnum(t, name)
						keys[i], colls[i], opts[i] = strconv.Itoa(n), "0", "0"
						if n > 0 && typeOID(t.Columns[n-1]) == 1043 {
							colls[i] = "100"
						}
					}
					unique := ix.Unique || ix.Primary || ix.Constraint
					rows = append(rows, []string{strconv.Itoa(relOID(t.Schema, ix.Name)), strconv.Itoa(relOID(t.Schema, t.Name)), strconv.Itoa(len(ix.Columns)), strconv.Itoa(len(ix.Columns)),
						strconv.FormatBool(unique), "false", strconv.FormatBool(ix.Primary), "false", "true",
						"false", "true", "false", "true", "true", "false",
						"CAST(" + sql.QuoteString(strings.Join(keys, " ")) + " AS INT2VECTOR)", "CAST(" + sql.QuoteString("{"+strings.Join(colls, ",")+"}") + " AS OIDVECTOR)",
						"CAST(" + sql.QuoteString(strings.Join(opts, " ")) + " AS INT2VECTOR)", "CAST(NULL AS TEXT)", "CAST(NULL AS TEXT)"})
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_description": {
		// Comments on objects: nicflow has no COMMENT ON, so none.
		cols:  []string{"objoid", "classoid", "objsubid", "description"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "TEXT"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_attrdef": {
		// Column defaults; adbin holds the default's SQL text, which
		// pg_get_expr returns as it is.
		cols:  []string{"oid", "adrelid", "adnum", "adbin"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				oid := relOID(t.Schema, t.Name)
				for i, d := range t.Defaults {
					if d != "" {
						rows = append(rows, []string{strconv.Itoa(oid + i + 1), strconv.Itoa(oid), strconv.Itoa(i + 1), sql.QuoteString(d)})
					}
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_sequence": {
		// Sequences: nicflow has none.
		cols:  []string{"seqrelid", "seqtypid", "seqstart", "seqincrement", "seqmax", "seqmin", "seqcache", "seqcycle"},
		types: []string{"INTEGER", "INTEGER", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BIGINT", "BOOLEAN"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_enum": {
		// Enum labels: nicflow has no enum types.
		cols:  []string{"oid", "enumtypid", "enumsortorder", "enumlabel"},
		types: []string{"INTEGER", "INTEGER", "DOUBLE PRECISION", "TEXT"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_constraint": {
		// Primary keys (p), unique constraints (u), foreign keys (f) and
		// checks (c). conbin holds the constraint's definition as
		// pg_get_constraintdef prints it (in PostgreSQL an expression
		// tree), as pg_attrdef.adbin holds a default's text. conkey
		// holds the constrained columns' numbers (NULL for a check:
		// nicflow does not record which columns its expression reads),
		// confkey a foreign key's referenced ones. No constraint is
		// inherited (conparentid 0, conislocal).
		cols: []string{"oid", "conname", "connamespace", "contype", "condeferrable", "condeferred", "convalidated", "conrelid", "conindid",
			"confrelid", "confupdtype", "confdeltype", "confmatchtype", "conbin", "conkey", "confkey", "conparentid", "conislocal", "coninhcount", "connoinherit", "contypid"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "TEXT", "BOOLEAN", "BOOLEAN", "BOOLEAN", "INTEGER", "INTEGER",
			"INTEGER", "TEXT", "TEXT", "TEXT", "TEXT", "SMALLINT[]", "SMALLINT[]", "INTEGER", "BOOLEAN", "INTEGER", "BOOLEAN", "INTEGER"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			tables := c.db.Tables()
			for _, t := range tables {
				rel := relOID(t.Schema, t.Name)
				add := func(name, kind string, index, ref int, upd, del, match, def, key, fkey string) {
					rows = append(rows, []string{strconv.Itoa(relOID(t.Schema, name)), sql.QuoteString(name), strconv.Itoa(oidPublic), sql.QuoteString(kind),
						"false", "false", "true", strconv.Itoa(rel), strconv.Itoa(index), strconv.Itoa(ref), sql.QuoteString(upd), sql.QuoteString(del), sql.QuoteString(match), sql.QuoteString(def),
						key, fkey, "0", "true", "0", strconv.FormatBool(kind == "c"), "0"})
				}
				const none = "CAST(NULL AS SMALLINT[])"
				for _, ix := range t.Indexes {
					switch {
					case ix.Primary:
						add(ix.Name, "p", relOID(t.Schema, ix.Name), 0, " ", " ", " ", "PRIMARY KEY ("+identList(ix.Columns)+")", attnums(t, ix.Columns), none)
					case ix.Constraint:
						add(ix.Name, "u", relOID(t.Schema, ix.Name), 0, " ", " ", " ", "UNIQUE ("+identList(ix.Columns)+")", attnums(t, ix.Columns), none)
					}
				}
				for _, ch := range t.Checks {
					add(ch.Name, "c", 0, 0, " ", " ", " ", "CHECK ("+ch.SQL+")", none, none)
				}
				for _, fk := range t.ForeignKeys {
					refSchema, refName, _ := strings.Cut(fk.RefTable, ".")
					if refName == "" {
						refSchema, refName = t.Schema, fk.RefTable
					}
					def := "FOREIGN KEY (" + identList(fk.Columns) + ") REFERENCES " + sql.QuoteIdent(refName) + "(" + identList(fk.RefColumns) + ")"
					match := "s"
					if fk.MatchFull {
						def += " MATCH FULL"
						match = "f"
					}
					action := func(a string) string {
						return map[string]string{"": "a", "NO ACTION": "a", "RESTRICT": "r", "CASCADE": "c", "SET NULL": "n", "SET DEFAULT": "d"}[strings.ToUpper(a)]
					}
					if a := strings.ToUpper(fk.OnUpdate); a != "" && a != "NO ACTION" {
						def += " ON UPDATE " + a
					}
					if a := strings.ToUpper(fk.OnDelete); a != "" && a != "NO ACTION" {
						def += " ON DELETE " + a
					}
					fkey := none
					for _, rt := range tables {
						if rt.Schema == refSchema && rt.Name == refName {
							fkey = attnums(rt, fk.RefColumns)
						}
					}
					add(fk.Name, "f", relOID(refSchema, fk.RefIndex), relOID(refSchema, refName), action(fk.OnUpdate), action(fk.OnDelete), match, def, attnums(t, fk.Columns), fkey)
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_indexes": {
		cols:  []string{"schemaname", "tablename", "indexname", "tablespace", "indexdef"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				for _, ix := range t.Indexes {
					rows = append(rows, append(quoted(sqlSchema(t.Schema), t.Name, ix.Name), "CAST(NULL AS TEXT)", sql.QuoteString(indexDef(t.Schema, t.Name, ix))))
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_collation": {
		// Collations: the default one (100, which text columns have) and
		// "C" (950); nicflow's strings compare by bytes, which both are.
		cols:  []string{"oid", "collname", "collnamespace", "collowner", "collprovider", "collisdeterministic", "collencoding", "collcollate", "collctype"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "INTEGER", "TEXT", "BOOLEAN", "INTEGER", "TEXT", "TEXT"},
		rows: func(*StorageCatalog) [][]string {
			return [][]string{
				{"100", "'default'", strconv.Itoa(oidPgCatalog), strconv.Itoa(oidOwner), "'d'", "true", "-1", "CAST(NULL AS TEXT)", "CAST(NULL AS TEXT)"},
				{"950", "'C'", strconv.Itoa(oidPgCatalog), strconv.Itoa(oidOwner), "'c'", "true", "-1", "'C'", "'C'"},
			}
		},
	},
	"pg_catalog.pg_am": {
		// Access methods: btree, nicflow's indexes' (sorted); its tables
		// have none (relam 0).
		cols:  []string{"oid", "amname", "amhandler", "amtype"},
		types: []string{"INTEGER", "TEXT", "TEXT", "TEXT"},
		rows: func(*StorageCatalog) [][]string {
			return [][]string{{strconv.Itoa(oidBtree), "'btree'", "'bthandler'", "'i'"}}
		},
	},
	"pg_catalog.pg_attribute": {
		// attstorage is the type's (p for fixed-length, x for variable);
		// no column has statistics targets, compression, options or
		// privileges of its own.
		cols: []string{"attrelid", "attname", "atttypid", "attnum", "attnotnull", "atthasdef", "attisdropped", "atttypmod", "attlen", "attidentity", "attgenerated", "attcollation",
			"attstorage", "attstattarget", "attcompression", "attislocal", "attinhcount", "attndims", "attoptions", "attfdwoptions", "attacl"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "INTEGER", "BOOLEAN", "BOOLEAN", "BOOLEAN", "INTEGER", "INTEGER", "TEXT", "TEXT", "INTEGER",
			"TEXT", "INTEGER", "TEXT", "BOOLEAN", "INTEGER", "INTEGER", "TEXT[]", "TEXT[]", "TEXT[]"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				oid := strconv.Itoa(relOID(t.Schema, t.Name))
				for i, col := range t.Columns {
					hasDef := i < len(t.Defaults) && t.Defaults[i] != ""
					typ := typeOID(col)
					storage := "'p'"
					if pgTypeLen(typ) < 0 {
						storage = "'x'"
					}
					rows = append(rows, []string{oid, sql.QuoteString(col.Name), strconv.Itoa(typ), strconv.Itoa(i + 1),
						strconv.FormatBool(!col.Nullable), strconv.FormatBool(hasDef), "false", strconv.Itoa(typeMod(col)), strconv.Itoa(pgTypeLen(typ)), "''", "''", strconv.Itoa(collation(typ)),
						storage, "-1", "''", "true", "0", "0", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])"})
				}
				// An index's attributes: its key columns, numbered from 1.
				// (A view's columns follow the tables'.)
				for _, ix := range t.Indexes {
					ioid := strconv.Itoa(relOID(t.Schema, ix.Name))
					for k, name := range ix.Columns {
						n := attnum(t, name)
						if n == 0 {
							continue
						}
						col := t.Columns[n-1]
						typ := typeOID(col)
						storage := "'p'"
						if pgTypeLen(typ) < 0 {
							storage = "'x'"
						}
						rows = append(rows, []string{ioid, sql.QuoteString(col.Name), strconv.Itoa(typ), strconv.Itoa(k + 1),
							strconv.FormatBool(!col.Nullable), "false", "false", strconv.Itoa(typeMod(col)), strconv.Itoa(pgTypeLen(typ)), "''", "''", strconv.Itoa(collation(typ)),
							storage, "-1", "''", "true", "0", "0", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])"})
					}
				}
			}
			for _, v := range c.db.Views() {
				oid := strconv.Itoa(relOID(v.Schema, v.Name))
				for i, col := range v.Fields {
					typ := typeOID(col)
					storage := "'p'"
					if pgTypeLen(typ) < 0 {
						storage = "'x'"
					}
					rows = append(rows, []string{oid, sql.QuoteString(col.Name), strconv.Itoa(typ), strconv.Itoa(i + 1),
						"false", "false", "false", strconv.Itoa(typeMod(col)), strconv.Itoa(pgTypeLen(typ)), "''", "''", strconv.Itoa(collation(typ)),
						storage, "-1", "''", "true", "0", "0", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])", "CAST(NULL AS TEXT[])"})
				}
			}
			return rows
		},
	},
	"pg_catalog.pg_type": {
		// Base types ('b') and their array types (typcategory 'A', typelem
		// the element's OID; the base type's typarray names it); int2vector
		// (pg_index.indkey) is an array of int2 too. No domains or
		// composites.
		cols: []string{"oid", "typname", "typnamespace", "typowner", "typlen", "typbyval", "typtype", "typcategory", "typispreferred", "typisdefined",
			"typdelim", "typrelid", "typelem", "typarray", "typinput", "typoutput", "typreceive", "typsend", "typalign", "typstorage",
			"typnotnull", "typbasetype", "typtypmod", "typndims", "typcollation", "typdefault"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "INTEGER", "INTEGER", "BOOLEAN", "TEXT", "TEXT", "BOOLEAN", "BOOLEAN",
			"TEXT", "INTEGER", "INTEGER", "INTEGER", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT",
			"BOOLEAN", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "TEXT"},
		rows: func(*StorageCatalog) (rows [][]string) {
			row := func(t pgType, elem, array int, in, out string) []string {
				byVal := t.len > 0 && t.len <= 8
				align, storage := "'i'", "'p'"
				switch {
				case t.len == 8:
					align = "'d'"
				case t.len == 2:
					align = "'s'"
				case t.len == 1:
					align = "'c'"
				case t.len < 0:
					storage = "'x'"
				}
				kind := "'b'"
				coll := "0"
				if t.category == "S" {
					coll = "100" // the default collation
				}
				return []string{strconv.Itoa(t.oid), sql.QuoteString(t.name), strconv.Itoa(oidPgCatalog), strconv.Itoa(oidOwner), strconv.Itoa(t.len),
					strconv.FormatBool(byVal), kind, sql.QuoteString(t.category), strconv.FormatBool(t.preferred), "true",
					"','", "0", strconv.Itoa(elem), strconv.Itoa(array), sql.QuoteString(in + "in"), sql.QuoteString(out + "out"), sql.QuoteString(in + "recv"), sql.QuoteString(out + "send"), align, storage,
					"false", "0", "-1", "0", coll, "CAST(NULL AS TEXT)"}
			}
			for _, t := range pgTypes {
				rows = append(rows, row(t, 0, pgArrayOIDs[t.oid], t.name, t.name))
				// Its array type: _name, of variable length, aligned as
				// the element (d for 8-byte ones).
				a := pgType{oid: pgArrayOIDs[t.oid], name: "_" + t.name, len: -1, category: "A"}
				r := row(a, t.oid, 0, "array_", "array_")
				if t.len == 8 {
					r[18] = "'d'"
				}
				if t.category == "S" {
					r[24] = "100"
				}
				rows = append(rows, r)
			}
			v := row(pgType{oid: 22, name: "int2vector", len: -1, category: "A"}, 21, 1006, "int2vector", "int2vector")
			rows = append(rows, v, row(pgType{oid: 1006, name: "_int2vector", len: -1, category: "A"}, 22, 0, "array_", "array_"))
			for _, t := range pgPseudoTypes {
				r := row(t, 0, 0, t.name+"_", t.name+"_")
				r[6] = "'p'" // typtype: a pseudo-type
				rows = append(rows, r)
			}
			return rows
		},
	},
	"pg_catalog.pg_settings": {
		// The server's read-only settings (bind.ServerSettings: what SHOW
		// and current_setting give); a session's SET settings are not
		// listed (SHOW gives them).
		cols:  []string{"name", "setting", "unit", "category", "short_desc", "context", "vartype", "source", "boot_val", "reset_val"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(*StorageCatalog) (rows [][]string) {
			for name, v := range bind.ServerSettings {
				rows = append(rows, append(quoted(name, v), "CAST(NULL AS TEXT)", "'Preset Options'", "''", "'internal'", "'string'", "'default'", sql.QuoteString(v), sql.QuoteString(v)))
			}
			return rows
		},
	},
	"pg_catalog.pg_roles": {
		// Roles: the owner of every object, nicflow (OID 10, what
		// pg_get_userbyid names); the users of "nicflow user add" log in
		// but own nothing and are not listed.
		cols: []string{"oid", "rolname", "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb", "rolcanlogin", "rolreplication", "rolconnlimit",
			"rolvaliduntil", "rolbypassrls", "rolconfig"},
		types: []string{"INTEGER", "TEXT", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "INTEGER", "TIMESTAMPTZ", "BOOLEAN", "TEXT[]"},
		rows: func(*StorageCatalog) [][]string {
			return [][]string{{strconv.Itoa(oidOwner), "'nicflow'", "true", "true", "true", "true", "true", "false", "-1", "CAST(NULL AS TIMESTAMPTZ)", "true", "CAST(NULL AS TEXT[])"}}
		},
	},
	"pg_catalog.pg_auth_members": {
		// Role memberships: nicflow has no GRANT of roles.
		cols:  []string{"oid", "roleid", "member", "grantor", "admin_option"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "INTEGER", "BOOLEAN"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_policy": {
		// Row security policies: nicflow has none.
		cols:  []string{"oid", "polname", "polrelid", "polcmd", "polpermissive", "polroles", "polqual", "polwithcheck"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "TEXT", "BOOLEAN", "INTEGER[]", "TEXT", "TEXT"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_statistic_ext": {
		// Extended statistics (CREATE STATISTICS): nicflow has none.
		cols:  []string{"oid", "stxrelid", "stxname", "stxnamespace", "stxowner", "stxstattarget", "stxkeys", "stxkind", "stxexprs"},
		types: []string{"INTEGER", "INTEGER", "TEXT", "INTEGER", "INTEGER", "INTEGER", "INT2VECTOR", "TEXT[]", "TEXT"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_publication": {
		// Logical replication publications: nicflow has none.
		cols:  []string{"oid", "pubname", "pubowner", "puballtables", "pubinsert", "pubupdate", "pubdelete", "pubtruncate", "pubviaroot"},
		types: []string{"INTEGER", "TEXT", "INTEGER", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN", "BOOLEAN"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_publication_namespace": {
		cols:  []string{"oid", "pnpubid", "pnnspid"},
		types: []string{"INTEGER", "INTEGER", "INTEGER"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_publication_rel": {
		cols:  []string{"oid", "prpubid", "prrelid", "prqual", "prattrs"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "TEXT", "INT2VECTOR"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_inherits": {
		// Inheritance and partitions: nicflow has neither.
		cols:  []string{"inhrelid", "inhparent", "inhseqno", "inhdetachpending"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "BOOLEAN"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_trigger": {
		// Triggers: nicflow has none.
		cols:  []string{"oid", "tgrelid", "tgparentid", "tgname", "tgfoid", "tgtype", "tgenabled", "tgisinternal", "tgconstraint"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "TEXT", "INTEGER", "INTEGER", "TEXT", "BOOLEAN", "INTEGER"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_depend": {
		// Dependencies between objects: nicflow records none here (an
		// index's or constraint's table is in pg_index and pg_constraint;
		// there are no extensions, sequences or rules).
		cols:  []string{"classid", "objid", "objsubid", "refclassid", "refobjid", "refobjsubid", "deptype"},
		types: []string{"INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "TEXT"},
		rows:  func(*StorageCatalog) [][]string { return nil },
	},
	"pg_catalog.pg_tables": {
		cols:  []string{"schemaname", "tablename", "tableowner", "hasindexes"},
		types: []string{"TEXT", "TEXT", "TEXT", "BOOLEAN"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, t := range c.db.Tables() {
				rows = append(rows, append(quoted(sqlSchema(t.Schema), t.Name, "nicflow"), strconv.FormatBool(len(t.Indexes) > 0)))
			}
			return rows
		},
	},
	"pg_catalog.pg_views": {
		cols:  []string{"schemaname", "viewname", "viewowner", "definition"},
		types: []string{"TEXT", "TEXT", "TEXT", "TEXT"},
		rows: func(c *StorageCatalog) (rows [][]string) {
			for _, v := range c.db.Views() {
				rows = append(rows, quoted(sqlSchema(v.Schema), v.Name, "nicflow", v.SQL))
			}
			return rows
		},
	},
}

// pgType is one of PostgreSQL's types that nicflow's map to.
type pgType struct {
	oid  int
	name string
	len  int
	// category is typcategory (B boolean, N numeric, S string, D date and
	// time, T timespan, U user/other); preferred is typispreferred.
	category  string
	preferred bool
}

var pgTypes = []pgType{
	{16, "bool", 1, "B", true}, {17, "bytea", -1, "U", false}, {20, "int8", 8, "N", false}, {21, "int2", 2, "N", false},
	{23, "int4", 4, "N", false}, {25, "text", -1, "S", true}, {700, "float4", 4, "N", false}, {701, "float8", 8, "N", true},
	{1043, "varchar", -1, "S", false}, {1082, "date", 4, "D", false}, {1114, "timestamp", 8, "D", false},
	{1186, "interval", 16, "T", true}, {1700, "numeric", -1, "N", false}, {1083, "time", 8, "D", false},
	{1184, "timestamptz", 8, "D", true},
}

// pgPseudoTypes are PostgreSQL's pseudo-types that clients name
// ('trigger'::regtype in pgcli's function list): no value has them.
var pgPseudoTypes = []pgType{
	{2249, "record", -1, "P", false}, {2275, "cstring", -2, "P", false}, {2276, "any", 4, "P", false},
	{2277, "anyarray", -1, "P", false}, {2278, "void", 4, "P", false}, {2279, "trigger", 4, "P", false},
	{3838, "event_trigger", 4, "P", false}, {2281, "internal", 8, "P", false}, {2283, "anyelement", 4, "P", false},
}

// pgArrayOIDs are the OIDs of the array types of pgTypes (PostgreSQL's
// _bool, _int4, ...), by the element's.
var pgArrayOIDs = map[int]int{
	16: 1000, 17: 1001, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 700: 1021, 701: 1022, 1043: 1015, 1082: 1182,
	1114: 1115, 1186: 1187, 1700: 1231, 1083: 1183, 1184: 1185,
}

// typeOID is the PostgreSQL type OID of a stored column (text when
// unknown).
func typeOID(col storage.Column) int {
	t, err := storage.ParseType(col.Type)
	if err != nil {
		return 25
	}
	return typeOIDOf(t)
}

// typeOIDOf is the PostgreSQL type OID of Arrow type t (text when
// unknown; an array's is its element's array type, _int4 and so on).
func typeOIDOf(t arrow.DataType) int {
	switch t.ID() {
	case arrow.LIST:
		if a, ok := pgArrayOIDs[typeOIDOf(t.(*arrow.ListType).Elem())]; ok {
			return a
		}
		return 25
	case arrow.BOOL:
		return 16
	case arrow.INT8, arrow.INT16:
		return 21
	case arrow.INT32:
		return 23
	case arrow.INT64:
		return 20
	case arrow.FLOAT32:
		return 700
	case arrow.FLOAT64:
		return 701
	case arrow.STRING, arrow.LARGE_STRING:
		return 1043
	case arrow.BINARY:
		return 17
	case arrow.DATE32:
		return 1082
	case arrow.TIMESTAMP:
		if expr.HasZone(t) {
			return 1184
		}
		return 1114
	case arrow.INTERVAL_MONTH_DAY_NANO:
		return 1186
	case arrow.TIME64:
		return 1083
	case arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128:
		return 1700
	}
	return 25
}

// collation is the collation OID of a column of type OID oid: the
// default one (100) for strings, else none.
func collation(oid int) int {
	if oid == 25 || oid == 1043 {
		return 100
	}
	return 0
}

// pgTypeLen is the typlen of type OID oid (-1: variable length).
func pgTypeLen(oid int) int {
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.len
		}
	}
	return -1
}

// typeMod is a column's atttypmod as PostgreSQL computes it: numeric(p,s)
// ((p << 16) | s) + 4, else -1 (nicflow's text columns carry no length).
func typeMod(col storage.Column) int {
	t, err := storage.ParseType(col.Type)
	if err != nil {
		return -1
	}
	if d, ok := t.(arrow.DecimalType); ok {
		return (int(d.GetPrecision())<<16 | int(d.GetScale())) + 4
	}
	return -1
}

// systemOIDs are PostgreSQL's OIDs of the pg_catalog relations nicflow
// has, for 'pg_class'::regclass.
var systemOIDs = map[string]int{
	"pg_class": 1259, "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_namespace": 2615,
	"pg_description": 2609, "pg_attrdef": 2604, "pg_database": 1262, "pg_am": 2601, "pg_constraint": 2606, "pg_index": 2610, "pg_collation": 3456, "pg_roles": 1260, "pg_auth_members": 1261,
	"pg_policy": 3256, "pg_statistic_ext": 3381, "pg_publication": 6104, "pg_publication_namespace": 6237, "pg_publication_rel": 6106, "pg_inherits": 2611,
	"pg_trigger": 2620, "pg_settings": 12002, "pg_depend": 2608,
	"pg_tables": 12000, "pg_views": 12001,
}

// OIDOf implements plan.OIDCatalog: a relation's OID (a user table or
// view, or a pg_catalog relation), a type's or a schema's.
func (c *StorageCatalog) OIDOf(kind, name string) (int, bool) {
	schema, rel, qualified := strings.Cut(name, ".")
	if !qualified {
		schema, rel = "", name
	}
	switch kind {
	case "regclass":
		if schema == "" || schema == "pg_catalog" {
			if oid, ok := systemOIDs[rel]; ok {
				return oid, true
			}
		}
		if schema == "pg_catalog" {
			return 0, false
		}
		if t, _ := c.LookupTable(name); t != nil {
			if st, ok := t.Handle.(*storage.Table); ok {
				return relOID(st.Schema, st.Name), true
			}
		}
		for _, v := range c.db.Views() {
			if v.Name == rel && (schema == "" || sqlSchema(v.Schema) == schema) {
				return relOID(v.Schema, v.Name), true
			}
		}
		for _, t := range c.db.Tables() {
			for _, ix := range t.Indexes {
				if ix.Name == rel && (schema == "" || sqlSchema(t.Schema) == schema) {
					return relOID(t.Schema, ix.Name), true
				}
			}
		}
	case "regtype":
		if schema != "" && schema != "pg_catalog" {
			return 0, false
		}
		for _, ts := range [][]pgType{pgTypes, pgPseudoTypes} {
			for _, t := range ts {
				if t.name == rel {
					return t.oid, true
				}
			}
		}
		alias := map[string]string{"integer": "int4", "bigint": "int8", "smallint": "int2", "boolean": "bool", "double precision": "float8",
			"real": "float4", "numeric": "numeric", "decimal": "numeric", "character varying": "varchar", "timestamp without time zone": "timestamp",
			"timestamp with time zone": "timestamptz", "time without time zone": "time"}
		if a, ok := alias[rel]; ok {
			return c.OIDOf(kind, a)
		}
	case "regnamespace":
		if qualified {
			return 0, false
		}
		oid, ok := map[string]int{"pg_catalog": oidPgCatalog, "public": oidPublic, "information_schema": oidInfo}[name]
		return oid, ok
	}
	return 0, false
}

// relOID is the OID of table or view name in schema: a hash above the
// first user OID.
func relOID(schema, name string) int {
	h := fnv.New32a()
	h.Write([]byte(schema + "." + name))
	return 16384 + int(h.Sum32()%1_000_000_000)
}

// columnType is a stored column's SQL type name.
func columnType(col storage.Column) string {
	if at, err := storage.ParseType(col.Type); err == nil {
		if plan.IsTime(at) {
			return "time without time zone" // PostgreSQL's name
		}
		return plan.TypeString(at)
	}
	return col.Type
}

// viewFields are a view's output columns as the catalog keeps them (a
// type nicflow does not store has Type "": pg_attribute says text).
func viewFields(s *arrow.Schema) []storage.Column {
	if s == nil {
		return nil
	}
	out := make([]storage.Column, s.NumFields())
	for i, f := range s.Fields() {
		tn, _ := storage.TypeName(f.Type)
		out[i] = storage.Column{Name: f.Name, Type: tn, Nullable: true}
	}
	return out
}

// attnum is the number (pg_attribute.attnum, from 1) of table t's column
// name, 0 when it has none.
func attnum(t *storage.Table, name string) int {
	for i, col := range t.Columns {
		if col.Name == name {
			return i + 1
		}
	}
	return 0
}

// attnums is the SMALLINT[] of the numbers of t's columns names.
func attnums(t *storage.Table, names []string) string {
	n := make([]string, len(names))
	for i, name := range names {
		n[i] = strconv.Itoa(attnum(t, name))
	}
	return "CAST('{" + strings.Join(n, ",") + "}' AS SMALLINT[])"
}

// identList is names as a SQL list, quoted where they must be.
func identList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = sql.QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// indexDef is an index's CREATE INDEX, as pg_get_indexdef and
// pg_indexes.indexdef print it (nicflow's indexes are sorted: btree).
func indexDef(schema, table string, ix storage.Index) string {
	u := ""
	if ix.Unique || ix.Primary || ix.Constraint {
		u = "UNIQUE "
	}
	return "CREATE " + u + "INDEX " + sql.QuoteIdent(ix.Name) + " ON " + sqlSchema(schema) + "." + sql.QuoteIdent(table) + " USING btree (" + identList(ix.Columns) + ")"
}

func quoted(vals ...string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = sql.QuoteString(v)
	}
	return out
}

// systemView is the SQL of system view name (information_schema.x,
// pg_catalog.x, or an unqualified pg_catalog name), or "" for another.
func (c *StorageCatalog) systemView(name string) string {
	name = strings.ToLower(name)
	st, ok := systemTables[name]
	if !ok && !strings.Contains(name, ".") {
		st, ok = systemTables["pg_catalog."+name]
	}
	if !ok {
		return ""
	}
	rows := st.rows(c)
	if len(rows) == 0 {
		// No row: the columns' types from a row the WHERE removes.
		nulls := make([]string, len(st.cols))
		for i, col := range st.cols {
			nulls[i] = "CAST(NULL AS " + st.types[i] + ") AS " + col
			if st.types[i] == "" {
				nulls[i] = "NULL AS " + col // a column of no type (always NULL)
			}
		}
		return "SELECT " + strings.Join(nulls, ", ") + " WHERE false"
	}
	sort.Slice(rows, func(i, j int) bool { return strings.Join(rows[i], "\x00") < strings.Join(rows[j], "\x00") })
	var b strings.Builder
	b.WriteString("SELECT * FROM (VALUES ")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + strings.Join(r, ", ") + ")")
	}
	b.WriteString(") AS t(" + strings.Join(st.cols, ", ") + ")")
	return b.String()
}
