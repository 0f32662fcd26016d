package storage

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Columns of foreign Parquet files (decisions D56). A file
// written by another tool may hold columns nicflow does not read: nested
// ones (LIST, STRUCT, MAP, repeated fields) and leaves of a type nicflow
// has no reading for. Such a column does not make the file unreadable:
// a table made from the file's footer (file tables, external tables,
// load into a new table) has the columns nicflow reads, in file order,
// and lists the others in Table.Unreadable. The engine's binder fails a
// query that names one of them, or selects *, with Unreadable.Err (a
// KindData error naming the column and the file); a query on the other
// columns runs. A table column matched to a file column nicflow does not
// read (COPY FROM or load into an existing table, a later file of an
// external table) fails with the same error.

// Unreadable is a column of a Parquet file nicflow does not read.
type Unreadable struct {
	// Name is the file's top-level column name.
	Name string `json:"name"`
	// Kind is what the column is, in a word or two: LIST, STRUCT, MAP,
	// or the Parquet type of a leaf nicflow has no reading for.
	Kind string `json:"kind"`
	// Reason says why nicflow does not read it.
	Reason string `json:"reason"`
	// File is the file whose footer described it.
	File string `json:"file"`
}

// Err is the error of a query that reads u.
func (u Unreadable) Err() error {
	return nferr.Dataf("column %s of %s cannot be read: %s (the file's other columns can be: name them instead of *)", u.Name, u.File, u.Reason)
}

// footerColumn is one top-level column of a Parquet file.
type footerColumn struct {
	name string
	// leaf is the column's leaf index (readable columns only).
	leaf int
	// typ is its Arrow type; nil when bad is set.
	typ      arrow.DataType
	nullable bool
	bad      *Unreadable
}

// footerColumns lists the top-level columns of a Parquet file in order:
// those nicflow reads with their types and leaves, the others with why
// they are not read.
func footerColumns(path string, md *metadata.FileMetaData) []footerColumn {
	sc := md.Schema
	ivs := intervalColumns(md)
	var out []footerColumn
	var arrowSch *arrow.Schema // nested columns' Arrow form, for messages
	seen := map[string]bool{}
	for i := 0; i < sc.NumColumns(); i++ {
		c := sc.Column(i)
		root := sc.ColumnRoot(i)
		name := root.Name()
		if seen[name] {
			continue // another leaf of a nested column
		}
		seen[name] = true
		if lt, ok := listColumn(sc, i); ok {
			out = append(out, footerColumn{name: name, leaf: i, typ: lt, nullable: root.RepetitionType() != parquet.Repetitions.Required})
			continue
		}
		if len(c.ColumnPath()) > 1 || c.MaxRepetitionLevel() > 0 {
			if arrowSch == nil {
				arrowSch = nestedArrowSchema(sc, md)
			}
			kind := nestedKind(root)
			reason := fmt.Sprintf("it is a nested %s column", kind)
			if arrowSch != nil {
				if fs, ok := arrowSch.FieldsByName(name); ok && len(fs) == 1 {
					reason = fmt.Sprintf("it is a nested %s column (%s)", kind, fs[0].Type)
				}
			}
			reason += ", and nicflow reads no nested columns but lists of plain values yet (no STRUCT, MAP or list of lists)"
			out = append(out, footerColumn{name: name, leaf: -1, bad: &Unreadable{Name: name, Kind: kind, Reason: reason, File: path}})
			continue
		}
		t, err := arrowTypeOfColumn(c, ivs)
		if err != nil {
			kind := c.PhysicalType().String()
			if c.PhysicalType() == parquet.Types.FixedLenByteArray {
				kind = fmt.Sprintf("FIXED_LEN_BYTE_ARRAY(%d)", c.TypeLength())
			}
			if lt := c.LogicalType(); lt != nil && !lt.IsNone() {
				kind += " " + lt.String()
			}
			reason := strings.TrimPrefix(err.Error(), "column "+c.Path()+": ")
			out = append(out, footerColumn{name: name, leaf: -1, bad: &Unreadable{Name: name, Kind: kind, Reason: reason, File: path}})
			continue
		}
		out = append(out, footerColumn{name: name, leaf: i, typ: t, nullable: c.MaxDefinitionLevel() > 0})
	}
	return out
}

// nestedArrowSchema is the Arrow form arrow-go gives the file's columns
// (nil if it has none), used only to describe nested columns.
func nestedArrowSchema(sc *schema.Schema, md *metadata.FileMetaData) (s *arrow.Schema) {
	defer func() {
		if recover() != nil {
			s = nil
		}
	}()
	s, err := pqarrow.FromParquet(sc, nil, md.KeyValueMetadata())
	if err != nil {
		return nil
	}
	return s
}

// nestedKind names a nested top-level node: LIST, MAP, STRUCT, or a
// repeated field (the legacy form of a list).
func nestedKind(n schema.Node) string {
	if n.RepetitionType() == parquet.Repetitions.Repeated {
		return "repeated"
	}
	switch n.LogicalType().(type) {
	case schema.ListLogicalType:
		return "LIST"
	case schema.MapLogicalType:
		return "MAP"
	case schema.VariantLogicalType:
		return "VARIANT"
	}
	switch n.ConvertedType() {
	case schema.ConvertedTypes.List:
		return "LIST"
	case schema.ConvertedTypes.Map, schema.ConvertedTypes.MapKeyValue:
		return "MAP"
	}
	return "STRUCT"
}

// unreadableOfFooter lists the columns of a Parquet file nicflow does not
// read (nil: none).
func unreadableOfFooter(path string, md *metadata.FileMetaData) []Unreadable {
	var out []Unreadable
	for _, c := range footerColumns(path, md) {
		if c.bad != nil {
			out = append(out, *c.bad)
		}
	}
	return out
}

// ParquetUnreadable lists the columns of the Parquet file path (opened
// through root when it is set) that nicflow does not read: what a load
// of the file leaves out.
func ParquetUnreadable(root *FileRoot, path string) ([]Unreadable, error) {
	md, _, err := readFooterIn(root, path)
	if err != nil {
		return nil, err
	}
	return unreadableOfFooter(path, md), nil
}

// listColumn reports whether leaf i of sc is the element of a top-level
// LIST column nicflow reads, and its Arrow type (a list of the element's
// type): the standard three-level form (<rep> group (LIST) { repeated
// group list { <rep> element; } }) or the legacy two-level one (<rep>
// group (LIST) { repeated <type> element; }), one leaf of a plain type
// (no list of lists, structs or intervals).
func listColumn(sc *schema.Schema, i int) (arrow.DataType, bool) {
	c := sc.Column(i)
	root := sc.ColumnRoot(i)
	if c.MaxRepetitionLevel() != 1 || !isListNode(root) {
		return nil, false
	}
	g, ok := root.(*schema.GroupNode)
	if !ok || g.NumFields() != 1 || g.RepetitionType() == parquet.Repetitions.Repeated {
		return nil, false
	}
	// The element: the repeated child itself (two levels) or its one
	// child (three levels).
	switch rep := g.Field(0).(type) {
	case *schema.PrimitiveNode:
		if rep.RepetitionType() != parquet.Repetitions.Repeated || len(c.ColumnPath()) != 2 {
			return nil, false
		}
	case *schema.GroupNode:
		if rep.RepetitionType() != parquet.Repetitions.Repeated || rep.NumFields() != 1 || len(c.ColumnPath()) != 3 {
			return nil, false
		}
		if _, leaf := rep.Field(0).(*schema.PrimitiveNode); !leaf {
			return nil, false
		}
	default:
		return nil, false
	}
	et, err := leafArrowType(c)
	if err != nil || et.ID() == arrow.INTERVAL_MONTH_DAY_NANO {
		return nil, false
	}
	return arrow.ListOf(et), true
}

// isListNode reports a group annotated LIST.
func isListNode(n schema.Node) bool {
	if _, ok := n.LogicalType().(schema.ListLogicalType); ok {
		return true
	}
	return n.ConvertedType() == schema.ConvertedTypes.List
}

// listLevels are the definition levels of the list whose element is leaf
// c (listColumn): below listDef the list is NULL, at listDef it is empty,
// from elemDef on a level is an element (NULL below c's maximum).
func listLevels(c *schema.Column) (listDef, elemDef int16) {
	elemDef = c.MaxDefinitionLevel()
	if c.SchemaNode().RepetitionType() != parquet.Repetitions.Repeated {
		// Three levels: an optional element adds one level below the
		// repeated group's.
		if c.SchemaNode().RepetitionType() == parquet.Repetitions.Optional {
			elemDef--
		}
	}
	// The repeated node adds one level above the list's own.
	return elemDef - 1, elemDef
}
