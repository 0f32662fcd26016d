package storage

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/nicflow/nicflow/internal/civil"
)

// Scan benchmarks. They read lineitem from NICFLOW_BENCH_DIR (a database
// made by `nicflow tpch gen --sf 1 --dir DIR`) when set, else from a
// synthetic lineitem of 1M rows made here (the columns the Q6 and Q14 scans
// touch, with TPC-H's value ranges).
//
//	go test ./storage -run '^$' -bench Scan -benchtime 5x
//	NICFLOW_BENCH_DIR=data/sf1 go test ./storage -run TestScanFigures -v

var (
	benchOnce sync.Once
	benchDB   *DB
	benchErr  error
	benchTmp  string
)

func benchData(tb testing.TB) *DB {
	tb.Helper()
	benchOnce.Do(func() {
		if dir := os.Getenv("NICFLOW_BENCH_DIR"); dir != "" {
			benchDB, benchErr = OpenExisting(dir, Options{})
			return
		}
		benchTmp, benchErr = os.MkdirTemp("", "nicflow-bench-")
		if benchErr != nil {
			return
		}
		benchDB, benchErr = Open(benchTmp, Options{})
		if benchErr == nil {
			benchErr = makeLineitem(benchDB, 1_000_000)
		}
	})
	if benchErr != nil {
		tb.Fatal(benchErr)
	}
	return benchDB
}

// makeLineitem writes a lineitem-shaped table: l_partkey, l_quantity,
// l_extendedprice, l_discount, l_shipdate with dbgen's ranges.
func makeLineitem(db *DB, rows int) error {
	dec := &arrow.Decimal64Type{Precision: 15, Scale: 2}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "l_partkey", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l_quantity", Type: dec},
		{Name: "l_extendedprice", Type: dec},
		{Name: "l_discount", Type: dec},
		{Name: "l_shipdate", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	if err := db.CreateTable("lineitem", sch, CreateOptions{}); err != nil {
		return err
	}
	app, err := db.NewAppender("lineitem", AppendOptions{})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(1))
	start := int32(civil.DaysFromCivil(1992, 1, 2))
	span := int32(civil.DaysFromCivil(1998, 12, 1)) - start
	for off := 0; off < rows; off += 65536 {
		n := min(65536, rows-off)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
		for i := 0; i < n; i++ {
			pk := int64(1 + rng.Intn(200000))
			q := int64(1 + rng.Intn(50))
			b.Field(0).(*array.Int64Builder).Append(pk)
			b.Field(1).(*array.Decimal64Builder).Append(decimal64Num(q * 100))
			b.Field(2).(*array.Decimal64Builder).Append(decimal64Num(q * (90000 + pk%20001*10 + pk/10%1000)))
			b.Field(3).(*array.Decimal64Builder).Append(decimal64Num(int64(rng.Intn(11))))
			b.Field(4).(*array.Date32Builder).Append(arrow.Date32(start + rng.Int31n(span)))
		}
		rec := b.NewRecordBatch()
		b.Release()
		err := app.Append(rec)
		rec.Release()
		if err != nil {
			app.Abort()
			return err
		}
	}
	_, err = app.Commit()
	return err
}

func q6Spec() ScanSpec {
	return ScanSpec{
		Table:   "lineitem",
		Columns: []string{"l_extendedprice", "l_discount"},
		Filter: And(
			Cmp("l_shipdate", OpGe, DateOf(1994, 1, 1)),
			Cmp("l_shipdate", OpLt, DateOf(1995, 1, 1)),
			Between("l_discount", Decimal(5, 2), Decimal(7, 2)),
			Cmp("l_quantity", OpLt, Int(24))),
	}
}

func q14Spec() ScanSpec {
	return ScanSpec{
		Table:   "lineitem",
		Columns: []string{"l_partkey", "l_extendedprice", "l_discount"},
		Filter: And(
			Cmp("l_shipdate", OpGe, DateOf(1995, 9, 1)),
			Cmp("l_shipdate", OpLt, DateOf(1995, 10, 1))),
	}
}

func fullSpec() ScanSpec {
	return ScanSpec{Table: "lineitem", Columns: []string{"l_shipdate", "l_quantity", "l_extendedprice", "l_discount"}}
}

// q6Sum drains a scan of q6Spec and returns sum(l_extendedprice *
// l_discount) (scale 4), so benchmarks do what Q6 does with the rows.
func drainSum(tb testing.TB, it RecordIterator) (rows int64, sum int64, bytes int64) {
	defer it.Close()
	for {
		rec, err := it.Next(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if rec == nil {
			return
		}
		rows += rec.NumRows()
		bytes += int64(recordBytes(rec))
		if rec.NumCols() >= 2 {
			p := fixedValues[int64](rec.Column(int(rec.NumCols()) - 2))
			d := fixedValues[int64](rec.Column(int(rec.NumCols()) - 1))
			for i := range p {
				sum += p[i] * d[i]
			}
		}
		rec.Release()
	}
}

// scanBytes is the compressed size of the column chunks a full scan of
// spec's columns (projection and filter) reads.
func scanBytes(db *DB, spec ScanSpec) int64 {
	t, _ := db.Table(spec.Table)
	cols := map[int]bool{}
	for _, c := range append(append([]string{}, spec.Columns...), spec.Filter.Columns()...) {
		cols[t.ColumnIndex(c)] = true
	}
	var n int64
	for _, f := range t.Files {
		md, err := db.footer(f)
		if err != nil {
			return 0
		}
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for c := range cols {
				if cc, err := md.RowGroup(rg).ColumnChunk(f.ColumnIndex[c]); err == nil {
					n += cc.TotalCompressedSize()
				}
			}
		}
	}
	return n
}

func BenchmarkScan(b *testing.B) {
	db := benchData(b)
	t, _ := db.Table("lineitem")
	for _, sh := range []struct {
		name string
		spec ScanSpec
	}{{"q6", q6Spec()}, {"q14", q14Spec()}, {"full4cols", fullSpec()}} {
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/par=%d", sh.name, par), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(scanBytes(db, sh.spec))
				for i := 0; i < b.N; i++ {
					sc, err := db.NewScanner(sh.spec, ScanOptions{Parallelism: par})
					if err != nil {
						b.Fatal(err)
					}
					drainSum(b, sc)
				}
				b.ReportMetric(float64(t.Rows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// TestScanFigures prints scan figures (local and through one and two
// storage nodes over loopback Flight, with and without pushdown). It runs
// only with NICFLOW_SCAN_FIGURES=1 (it takes a while at SF1).
func TestScanFigures(t *testing.T) {
	if os.Getenv("NICFLOW_SCAN_FIGURES") == "" {
		t.Skip("set NICFLOW_SCAN_FIGURES=1 (and NICFLOW_BENCH_DIR=an SF1 database) to print scan figures")
	}
	db := benchData(t)
	tb, _ := db.Table("lineitem")
	rows := tb.Rows()
	const reps = 5
	// Wall time is the best of reps runs; CPU time (user+sys of the whole
	// process, storage nodes included) is the mean, which is what a loaded
	// machine cannot distort.
	var cpu float64
	timeIt := func(run func() (int64, int64, int64)) (time.Duration, int64, int64) {
		best := time.Duration(1 << 62)
		var r, by int64
		c0 := cpuTime()
		for i := 0; i < reps; i++ {
			st := time.Now()
			r, _, by = run()
			if d := time.Since(st); d < best {
				best = d
			}
		}
		cpu = ms(cpuTime()-c0) / reps
		return best, r, by
	}
	fmt.Printf("lineitem: %d rows, %d files, %d row groups\n", rows, len(tb.Files), tb.RowGroupCount())
	fmt.Printf("%-32s %8s %8s %9s %7s %9s %11s\n", "scan", "wall ms", "cpu ms", "Mrows/s", "MB/s", "rows out", "bytes sent")
	for _, sh := range []struct {
		name string
		spec ScanSpec
	}{{"q6", q6Spec()}, {"q14", q14Spec()}, {"full 4 cols", fullSpec()}} {
		in := scanBytes(db, sh.spec)
		for _, par := range []int{1, 2} {
			d, r, _ := timeIt(func() (int64, int64, int64) {
				sc, err := db.NewScanner(sh.spec, ScanOptions{Parallelism: par})
				if err != nil {
					t.Fatal(err)
				}
				return drainSum(t, sc)
			})
			fmt.Printf("%-32s %8.1f %8.1f %9.1f %7.0f %9d %11s\n", fmt.Sprintf("local %s par=%d", sh.name, par), ms(d), cpu, float64(rows)/d.Seconds()/1e6, float64(in)/d.Seconds()/1e6, r, "-")
		}
	}
	// Remote: 1 and 2 nodes; with pushdown (the spec) and without (all
	// rows of the needed columns shipped, as a node without filtering would).
	for _, nn := range []int{1, 2} {
		coordDir := t.TempDir()
		coord, err := Open(coordDir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Copy the table's catalog entry: register the same files.
		var nodes []Node
		for i := 0; i < nn; i++ {
			id := fmt.Sprintf("c%d-n%d", nn, i+1) // fresh ids: each config has fresh nodes
			n := startNode(t, id, 0)
			nodes = append(nodes, Node{ID: id, Addr: n.srv.Addr()})
		}
		if err := db.Place(context.Background(), "lineitem", nodes, 1, ClientOptions{}); err != nil {
			t.Fatal(err)
		}
		coord.Close()
		rs := NewRemoteScanner(db, nodes, ClientOptions{})
		for _, sh := range []struct {
			name string
			spec ScanSpec
		}{{"q6", q6Spec()}, {"q14", q14Spec()}, {"full 4 cols", fullSpec()}} {
			for _, push := range []bool{true, false} {
				spec := sh.spec
				label := "pushdown"
				if !push {
					spec.Columns = append(append([]string{}, spec.Filter.Columns()...), spec.Columns...)
					spec.Filter = nil
					label = "no pushdown"
				}
				if sh.name == "full 4 cols" && !push {
					continue
				}
				in := scanBytes(db, spec)
				d, r, by := timeIt(func() (int64, int64, int64) {
					it, err := rs.OpenScan(context.Background(), spec, ScanOptions{})
					if err != nil {
						t.Fatal(err)
					}
					return drainSum(t, it)
				})
				fmt.Printf("%-32s %8.1f %8.1f %9.1f %7.0f %9d %11d\n", fmt.Sprintf("%d node(s) %s %s", nn, sh.name, label), ms(d), cpu, float64(rows)/d.Seconds()/1e6, float64(in)/d.Seconds()/1e6, r, by)
			}
		}
		rs.Close()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPqarrowVsLowLevel reads the 4 Q6 columns of lineitem with
// pqarrow (which yields decimal128 for the decimal columns; converting
// them to decimal64 would cost more on top) and with the scanner's
// low-level decoding into decimal64, both single-threaded, no filter.
func BenchmarkPqarrowVsLowLevel(b *testing.B) {
	db := benchData(b)
	t, _ := db.Table("lineitem")
	spec := fullSpec()
	var idx []int
	for _, c := range spec.Columns {
		idx = append(idx, t.Files[0].ColumnIndex[t.ColumnIndex(c)])
	}
	b.Run("pqarrow", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(scanBytes(db, spec))
		for i := 0; i < b.N; i++ {
			var rows int64
			for _, f := range t.Files {
				pf, err := file.OpenParquetFile(db.Path(f), false)
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				rr, err := fr.GetRecordReader(context.Background(), idx, nil)
				if err != nil {
					b.Fatal(err)
				}
				for rr.Next() {
					rows += rr.RecordBatch().NumRows()
				}
				rr.Release()
				pf.Close()
			}
			if rows != t.Rows() {
				b.Fatalf("pqarrow read %d rows", rows)
			}
		}
	})
	b.Run("lowlevel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(scanBytes(db, spec))
		for i := 0; i < b.N; i++ {
			sc, err := db.NewScanner(spec, ScanOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if rows, _, _ := drainSum(b, sc); rows != t.Rows() {
				b.Fatalf("scanner read %d rows", rows)
			}
		}
	})
}
