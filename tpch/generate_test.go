package tpch

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/nicflow/nicflow/internal/nferr"
)

func fileMD5(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestGenerateTblParallelChunks writes all tables in many small chunks on
// several goroutines: the files must still be byte-identical to dbgen's.
func TestGenerateTblParallelChunks(t *testing.T) {
	dir := t.TempDir()
	opts := GenOptions{SF: 0.01, Dir: dir, Format: FormatTbl, Parallel: 3, chunkRows: 777}
	res, err := Generate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 8 {
		t.Fatalf("got %d tables", len(res.Tables))
	}
	for _, s := range readDbgenSums(t) {
		if s.sf != 0.01 {
			continue
		}
		if got := fileMD5(t, filepath.Join(dir, s.table.String()+".tbl")); got != s.md5 {
			t.Errorf("%s.tbl: md5 %s, dbgen %s", s.table, got, s.md5)
		}
		for _, r := range res.Tables {
			if r.Table == s.table && (r.Rows != s.rows || r.Bytes != s.bytes) {
				t.Errorf("%s: result says %d rows %d bytes, dbgen %d rows %d bytes", s.table, r.Rows, r.Bytes, s.rows, s.bytes)
			}
		}
	}
	want := []string{"customer.tbl", "lineitem.tbl", "nation.tbl", "orders.tbl", "part.tbl", "partsupp.tbl", "region.tbl", "supplier.tbl", MarkerFile}
	if got := listDir(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("directory holds %v, want %v", got, want)
	}
}

// renderCell prints one Arrow value the way dbgen prints it in a .tbl file.
func renderCell(t *testing.T, col string, a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Decimal128:
		v := a.Value(i).LowBits()
		if col == "l_quantity" {
			return strconv.FormatInt(int64(v)/100, 10)
		}
		return string(appendMoney(nil, int64(v)))
	case *array.Decimal64:
		if col == "l_quantity" {
			return strconv.FormatInt(int64(a.Value(i))/100, 10)
		}
		return string(appendMoney(nil, int64(a.Value(i))))
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.String:
		return a.Value(i)
	}
	t.Fatalf("column %s: unexpected array type %s", col, a.DataType())
	return ""
}

// renderTable renders a table read back from files as .tbl text.
func renderTable(t *testing.T, tbl arrow.Table) string {
	var sb strings.Builder
	rdr := array.NewTableReader(tbl, 4096)
	defer rdr.Release()
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			for c := 0; c < int(rec.NumCols()); c++ {
				sb.WriteString(renderCell(t, rec.ColumnName(c), rec.Column(c), r))
				sb.WriteByte('|')
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

func tblText(t *testing.T, tb Table, sf float64) string {
	var buf bytes.Buffer
	if _, err := WriteTbl(context.Background(), &buf, tb, sf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return "line " + strconv.Itoa(i+1) + ": got " + la[i] + " want " + lb[i]
		}
	}
	return "lengths differ: " + strconv.Itoa(len(la)) + " vs " + strconv.Itoa(len(lb)) + " lines"
}

// TestGenerateParquetMatchesTbl writes Parquet (small row groups, many
// files), reads it back with pqarrow and compares every value with the
// dbgen-identical text.
func TestGenerateParquetMatchesTbl(t *testing.T) {
	dir := t.TempDir()
	opts := GenOptions{SF: 0.01, Dir: dir, Parallel: 2, Parquet: ParquetOptions{RowGroupRows: 5000, RowGroupsPerFile: 2}}
	res, err := Generate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// NB: not a CheckedAllocator: arrow-go v18.8.0's DELTA_BINARY_PACKED
	// decoder never releases a block buffer it allocates
	// (deltaBitPackDecoder.initBlock), and the keys are delta-encoded
	// (nicflow's own reader, the flat decoder, allocates none).
	mem := memory.NewGoAllocator()
	for _, r := range res.Tables {
		if r.Table == Lineitem && len(r.Files) < 2 {
			t.Errorf("lineitem in %d files, want several", len(r.Files))
		}
		var tables []arrow.Table
		for _, rel := range r.Files {
			if want := r.Table.String() + "/" + r.Table.String() + "-"; !strings.HasPrefix(rel, want) {
				t.Errorf("file %s not under %s", rel, want)
			}
			pf, err := file.OpenParquetFile(filepath.Join(dir, rel), false)
			if err != nil {
				t.Fatal(err)
			}
			md := pf.MetaData()
			for g := 0; g < md.NumRowGroups(); g++ {
				rg := md.RowGroup(g)
				// lineitem and partsupp groups hold 1250 orders or parts:
				// about, not exactly, 5000 rows.
				limit := int64(5000)
				if r.Table == Lineitem {
					limit = 1250 * 7
				}
				if rg.NumRows() > limit {
					t.Errorf("%s row group %d has %d rows, want <= %d", rel, g, rg.NumRows(), limit)
				}
				for c := 0; c < rg.NumColumns(); c++ {
					cc, _ := rg.ColumnChunk(c)
					if ok, _ := cc.StatsSet(); !ok {
						t.Errorf("%s column %d has no statistics", rel, c)
					}
				}
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, mem)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := fr.ReadTable(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			tables = append(tables, tbl)
			pf.Close()
		}
		// Check the physical types: decimals as INT64 DECIMAL(15,2).
		sch := tables[0].Schema()
		for i, c := range tableCols[r.Table] {
			f := sch.Field(i)
			if f.Name != c.name {
				t.Errorf("%s column %d is %s, want %s", r.Table, i, f.Name, c.name)
			}
			if c.kind == kDecimal {
				dt, ok := f.Type.(arrow.DecimalType)
				if !ok || dt.GetPrecision() != 15 || dt.GetScale() != 2 {
					t.Errorf("%s.%s read back as %s, want decimal(15,2)", r.Table, c.name, f.Type)
				}
			}
		}
		var sb strings.Builder
		for _, tbl := range tables {
			sb.WriteString(renderTable(t, tbl))
			tbl.Release()
		}
		if got, want := sb.String(), tblText(t, r.Table, 0.01); got != want {
			t.Errorf("%s: Parquet differs from .tbl: %s", r.Table, firstDiff(got, want))
		}
	}
	// Decimal columns are INT64-backed in the file.
	pf, err := file.OpenParquetFile(filepath.Join(dir, res.Tables[0].Files[0]), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	col := pf.MetaData().Schema.Column(pRetailprice)
	if col.PhysicalType() != parquet.Types.Int64 {
		t.Errorf("p_retailprice physical type %s, want INT64", col.PhysicalType())
	}
	// Keys and prices without a dictionary are delta-encoded (D73),
	// dictionary columns are not.
	cc, err := pf.MetaData().RowGroup(0).ColumnChunk(pRetailprice)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked) {
		t.Errorf("p_retailprice encodings %v, want DELTA_BINARY_PACKED", cc.Encodings())
	}
	for c := 0; c < pf.MetaData().Schema.NumColumns(); c++ {
		cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(c)
		if tableCols[Part][c].dict && slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked) {
			t.Errorf("%s is delta-encoded, want a dictionary", tableCols[Part][c].name)
		}
	}
}

// TestRecordsMatchTbl checks the Arrow streaming API against the text.
func TestRecordsMatchTbl(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, tb := range []Table{Lineitem, Supplier, Nation} {
		var sb strings.Builder
		err := Records(context.Background(), tb, 0.01, mem, 0, 0, func(rec arrow.RecordBatch) error {
			if !rec.Schema().Equal(ArrowSchema(tb)) {
				t.Fatalf("schema %s", rec.Schema())
			}
			tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
			sb.WriteString(renderTable(t, tbl))
			tbl.Release()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sb.String(), tblText(t, tb, 0.01); got != want {
			t.Errorf("%s: records differ from .tbl: %s", tb, firstDiff(got, want))
		}
	}
	// A range in the middle starts exactly where the full stream is.
	var got []int64
	err := Records(context.Background(), Orders, 0.01, mem, 1001, 3, func(rec arrow.RecordBatch) error {
		got = append(got, rec.Column(0).(*array.Int64).Int64Values()...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{orderKey(1001), orderKey(1002), orderKey(1003)}; len(got) != 3 || got[0] != want[0] || got[2] != want[2] {
		t.Errorf("orders 1001..1003 keys %v, want %v", got, want)
	}
}

func TestGenerateBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, o := range map[string]GenOptions{
		"zero sf":     {SF: 0, Dir: dir},
		"negative sf": {SF: -1, Dir: dir},
		"huge sf":     {SF: 1e6, Dir: dir},
		"no dir":      {SF: 1},
		"bad table":   {SF: 1, Dir: dir, Tables: []Table{42}},
		"bad format":  {SF: 1, Dir: dir, Format: "csv"},
		"bad codec":   {SF: 1, Dir: dir, Parquet: ParquetOptions{Codec: "brotli9"}},
	} {
		if _, err := Generate(ctx, o); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%s: got %v, want a query (usage) error", name, err)
		}
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("bad options left %v", got)
	}
	// A directory that cannot be created: its parent is a file.
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(ctx, GenOptions{SF: 0.01, Dir: filepath.Join(f, "sub"), Tables: []Table{Region}}); !nferr.Is(err, nferr.KindIO) {
		t.Errorf("unwritable dir: got %v, want an i/o error", err)
	}
	if _, err := ParseTable("lineitems"); err == nil || !strings.Contains(err.Error(), "lineitems") {
		t.Errorf("ParseTable: %v", err)
	}
}

// TestGenerateExistingAndIfMissing: existing data is kept without Force,
// IfMissing skips complete data, Force replaces, and nothing temporary
// is left behind.
func TestGenerateExistingAndIfMissing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base := GenOptions{SF: 0.01, Dir: dir, Tables: []Table{Nation, Region, Supplier}}
	if _, err := Generate(ctx, base); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	old := fileMD5(t, filepath.Join(dir, "supplier", "supplier-0000.parquet"))

	_, err := Generate(ctx, base)
	if !nferr.Is(err, nferr.KindQuery) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second run without force: %v", err)
	}
	if got := listDir(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("failed run changed the directory: %v -> %v", before, got)
	}

	im := base
	im.IfMissing = true
	if res, err := Generate(ctx, im); err != nil || !res.Skipped {
		t.Errorf("if-missing on complete data: skipped=%v err=%v", res.Skipped, err)
	}
	// Another SF is not "complete": if-missing generates, and here fails
	// because the data exists (no force).
	im.SF = 0.02
	if _, err := Generate(ctx, im); err == nil {
		t.Errorf("if-missing with another SF over existing data succeeded")
	}
	// A missing file makes the data incomplete.
	im.SF = 0.01
	if err := os.Remove(filepath.Join(dir, "nation", "nation-0000.parquet")); err != nil {
		t.Fatal(err)
	}
	if res, err := Generate(ctx, im); err == nil || res.Skipped {
		t.Errorf("if-missing with a missing file: skipped=%v err=%v", res.Skipped, err)
	}

	f := base
	f.Force = true
	f.SF = 0.02
	if _, err := Generate(ctx, f); err != nil {
		t.Fatal(err)
	}
	if fileMD5(t, filepath.Join(dir, "supplier", "supplier-0000.parquet")) == old {
		t.Errorf("force did not replace supplier")
	}
	m, err := readMarker(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.Tables["supplier"]; e.SF != 0.02 || e.Rows != 200 || e.Format != FormatParquet {
		t.Errorf("marker entry %+v", e)
	}
	for _, n := range listDir(t, dir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("temporary %s left behind", n)
		}
	}
}

// TestGenerateCanceled: a canceled generation leaves nothing behind.
func TestGenerateCanceled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	opts := GenOptions{SF: 0.01, Dir: dir, Format: FormatTbl, Parallel: 2, chunkRows: 100,
		Progress: func(Table, int64) {
			calls++ // NB: racy count, only used to cancel early
			if calls == 3 {
				cancel()
			}
		}}
	opts.Parallel = 1
	_, err := Generate(ctx, opts)
	if !nferr.Is(err, nferr.KindCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want canceled", err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("canceled run left %v", got)
	}
}
