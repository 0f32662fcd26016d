package tpch

import (
	"math"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Table identifies one of the eight TPC-H tables.
type Table int

// The eight tables, in dbgen's order.
const (
	Part Table = iota
	PartSupp
	Supplier
	Customer
	Orders
	Lineitem
	Nation
	Region
	numTables
)

var tableNames = [numTables]string{"part", "partsupp", "supplier", "customer", "orders", "lineitem", "nation", "region"}

// String returns the table's SQL name ("lineitem").
func (t Table) String() string {
	if t >= 0 && t < numTables {
		return tableNames[t]
	}
	return "table(" + strconv.Itoa(int(t)) + ")"
}

// AllTables lists the eight tables.
func AllTables() []Table {
	return []Table{Part, PartSupp, Supplier, Customer, Orders, Lineitem, Nation, Region}
}

// ParseTable returns the table named s (case-insensitive).
func ParseTable(s string) (Table, error) {
	for i, n := range tableNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Table(i), nil
		}
	}
	return 0, nferr.Queryf("unknown TPC-H table %q (want one of %s)", s, strings.Join(tableNames[:], ", "))
}

// MaxSF is the largest scale factor the generator accepts: from SF 30000 on
// dbgen switches o_custkey and l_partkey to a different 64-bit generator,
// which this package does not implement.
const MaxSF = 29999

// Scale holds the row counts and ranges derived from a scale factor.
//
// dbgen's rules: for SF >= 1 every base count is multiplied by SF; for
// SF < 1 it is multiplied by int(1000*SF)/1000 (at least one row). This
// package applies the second formula to every SF, which is identical for
// integral SF and extends dbgen (which truncates a fractional SF > 1 to an
// integer) to fractional SF > 1 with proportional row counts.
type Scale struct {
	SF float64
	// Rows of the driver tables; partsupp has 4 rows per part, lineitem 1 to 7
	// rows per order.
	Parts, Suppliers, Customers, Orders int64
	// Clerks is the o_clerk range: max(1000, 1000*SF) (dbgen: scale*1000,
	// with scale = 1 for SF < 1).
	Clerks int64
}

// NewScale validates sf and derives the row counts.
func NewScale(sf float64) (Scale, error) {
	if math.IsNaN(sf) || math.IsInf(sf, 0) || sf <= 0 {
		return Scale{}, nferr.Queryf("scale factor must be a positive number, got %v", sf)
	}
	if sf > MaxSF {
		return Scale{}, nferr.Queryf("scale factor %v is too large (maximum %d: dbgen uses another generator from SF 30000 on)", sf, MaxSF)
	}
	// NB: computed in float64 exactly as dbgen's (int)(1000 * flt_scale), so
	// e.g. SF 0.29 gives 289 like dbgen does.
	intScale := int64(1000 * sf)
	rows := func(base int64) int64 {
		n := base * intScale / 1000
		if n < 1 {
			n = 1
		}
		return n
	}
	clerks := intScale
	if clerks < 1000 {
		clerks = 1000
	}
	return Scale{
		SF:        sf,
		Parts:     rows(200000),
		Suppliers: rows(10000),
		Customers: rows(150000),
		Orders:    rows(1500000),
		Clerks:    clerks,
	}, nil
}

// Rows returns the exact row count of table t, or -1 for lineitem, whose
// count is known only after generation (on average 4 per order).
func (s Scale) Rows(t Table) int64 {
	switch t {
	case Part:
		return s.Parts
	case PartSupp:
		return 4 * s.Parts
	case Supplier:
		return s.Suppliers
	case Customer:
		return s.Customers
	case Orders:
		return s.Orders
	case Nation:
		return int64(len(dists.nations.members))
	case Region:
		return int64(len(dists.regions.members))
	}
	return -1
}

// EstimatedRows returns Rows, or 4 per order for lineitem (progress bars).
func (s Scale) EstimatedRows(t Table) int64 {
	if t == Lineitem {
		return 4 * s.Orders
	}
	return s.Rows(t)
}

// driver returns the table whose row index drives t's generation (part for
// partsupp, orders for lineitem) and its row count.
func (s Scale) driverRows(t Table) int64 {
	switch t {
	case PartSupp:
		return s.Parts
	case Lineitem:
		return s.Orders
	}
	return s.Rows(t)
}
