package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// FuzzParquetReader feeds mutated Parquet files to the footer reader and
// the scanner: every outcome must be rows or a KindData error, never a
// panic or another kind of error.
func FuzzParquetReader(f *testing.F) {
	dir := f.TempDir()
	db, err := Open(dir, Options{Write: WriteOptions{RowGroupRows: 40, Compression: "none"}})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	sch := testSchema()
	mustCreate(f, db, "seed", sch)
	appendRows(f, db, "seed", sch, randomRows(randSource(5), 0, 100, 0.2))
	seed, err := os.ReadFile(db.Path(mustTable(f, db, "seed").Files[0]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(listSeed(f, db))
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte{})
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, fmt.Sprintf("fuzz-%d.parquet", n.Add(1)))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		md, size, err := readFooter(p)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("footer: %v (kind %v)", err, nferr.KindOf(err))
			}
			return
		}
		s, err := schemaOfFooter(p, md)
		if err != nil {
			return
		}
		cols, err := SchemaColumns(s)
		if err != nil {
			return
		}
		fm, err := fileFromFooter(p, md, cols)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("stats: %v (kind %v)", err, nferr.KindOf(err))
			}
			return
		}
		fm.Path, fm.Size, fm.Checksum = p, size, fmt.Sprint(n.Load())
		tb := &Table{Schema: "main", Name: "fz", Columns: cols, Files: []*File{fm}}
		sc, err := db.newScanner(tb, ScanSpec{Table: "fz"}.AllColumns(tb), ScanOptions{})
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		defer sc.Close()
		for {
			rec, err := sc.Next(context.Background())
			if err != nil {
				if !nferr.Is(err, nferr.KindData) {
					t.Fatalf("scan: %v (kind %v)", err, nferr.KindOf(err))
				}
				return
			}
			if rec == nil {
				return
			}
			rec.Release()
		}
	})
}

// FuzzScanSpec decodes tickets from untrusted bytes and plans scans with
// them: errors are fine, panics are not.
func FuzzScanSpec(f *testing.F) {
	db, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	mustCreate(f, db, "t", testSchema())
	appendRows(f, db, "t", testSchema(), randomRows(randSource(1), 0, 50, 0.2))
	good, _ := MarshalScanSpec(ScanSpec{Table: "t", Columns: []string{"id", "s"},
		Filter: And(Between("price", Decimal(5, 2), Decimal(7, 2)), Or(Prefix("s", "PROMO"), IsNull("i32")), In("d", Date(9000), Date(9001)))})
	f.Add(good)
	f.Add([]byte(ticketMagic + `{"table":"t","columns":[],"filter":{"op":"and","args":[null]}}`))
	f.Add([]byte(ticketMagic + `{"table":"t","columns":["id"],"files":[{"path":"x","rowgroups":[-1]}]}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := UnmarshalScanSpec(b)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("decode: %v (kind %v)", err, nferr.KindOf(err))
			}
			return
		}
		spec.BatchSize = min(spec.BatchSize, 1000)
		sc, err := db.NewScanner(spec, ScanOptions{Alloc: memory.NewGoAllocator()})
		if err != nil {
			return
		}
		defer sc.Close()
		for i := 0; i < 100; i++ {
			rec, err := sc.Next(context.Background())
			if err != nil || rec == nil {
				return
			}
			rec.Release()
		}
	})
}

// FuzzTextLine parses csv, tbl and text input: a bad line must give a KindData
// error naming the line, never a panic.
func FuzzTextLine(f *testing.F) {
	db, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	mustCreate(f, db, "t", testSchema())
	f.Add("1|2|3.50|1.5|abc|1995-01-01|t|12.345|\n", "tbl")
	f.Add("1,2,3.50,1.5,\"a,\"\"b\",1995-01-01,false,-1\n", "csv")
	f.Add("1,,,,,1995-01-01,,\n\"", "csv")
	f.Add("1\t2\t3.50\t1.5\ta\\tb\\\\c\\x41\\101\t1995-01-01\tt\t\\N\n\\.\n", "text")
	in := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body, format string) {
		if format != "csv" && format != "tbl" && format != "text" {
			return
		}
		p := filepath.Join(in, fmt.Sprintf("f%d.%s", n.Add(1), format))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		_, err := db.Copy(context.Background(), "t", []string{p}, CopyOptions{Replace: true, Format: format})
		if err != nil && !nferr.Is(err, nferr.KindData) {
			t.Fatalf("copy %q: %v (kind %v)", body, err, nferr.KindOf(err))
		}
		if err != nil && !strings.HasPrefix(err.Error(), p+":") {
			t.Fatalf("copy error does not name the file and line: %v", err)
		}
	})
}

// FuzzReadCSV: any bytes read as a CSV file table (types inferred, header
// and delimiter detected) give a table or a KindData error, never a panic,
// and the table scans whole.
func FuzzReadCSV(f *testing.F) {
	db, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{"a,b\n1,x\n2,y\n", "1|2020-01-01|t\n2|2020-01-02 10:00|f\n", "x;y\n\"q\"\"\";1.5\n", "a\n\n", "\"\n", "id\tv\n1\t\n"} {
		f.Add(s)
	}
	in := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(in, fmt.Sprintf("f%d.csv", n.Add(1)))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		name, err := CSVTableName(p, nil, CSVOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := db.Table(name)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("read_csv %q: %v (kind %v)", body, err, nferr.KindOf(err))
			}
			return
		}
		cols := make([]string, len(tb.Columns))
		for i, c := range tb.Columns {
			cols[i] = c.Name
		}
		sc, err := db.NewScanner(ScanSpec{Table: name, Columns: cols}, ScanOptions{})
		if err != nil {
			t.Fatalf("scan of read_csv %q: %v", body, err)
		}
		defer sc.Close()
		var rows int64
		for {
			rec, err := sc.Next(context.Background())
			if err != nil {
				t.Fatalf("scan of read_csv %q: %v", body, err)
			}
			if rec == nil {
				break
			}
			rows += rec.NumRows()
			rec.Release()
		}
		if rows != tb.Rows() {
			t.Fatalf("read_csv %q: scanned %d rows, the table has %d", body, rows, tb.Rows())
		}
	})
}

// FuzzKeyFilterPart: key filter parts come from the network (a worker's
// part, a coordinator's merged filter): decoding never panics, and what
// decodes is a filter that can be applied and merged.
func FuzzKeyFilterPart(f *testing.F) {
	good, _ := KeyFilterPart{Ints: true, Lo: -5, Hi: 99, Keys: 3, Words: make([]uint64, 8)}.MarshalBinary()
	empty, _ := KeyFilterPart{Empty: true}.MarshalBinary()
	f.Add(good)
	f.Add(empty)
	f.Add([]byte{1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := UnmarshalKeyFilterPart(b)
		if err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("decoded an unusable part: %v", err)
		}
		k := NewKeyFilter("fuzz")
		k.PublishPart(MergeKeyFilterParts([]KeyFilterPart{p, p}))
		if s := k.active(); s != nil && !s.empty && s.ints {
			s.mayHoldInt(p.Lo)
		}
	})
}

// listSeed is a data file with array columns (NULL, empty and filled
// lists, NULL elements) in row groups of 40, for the list decoder.
func listSeed(f *testing.F, db *DB) []byte {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "s", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	mustCreate(f, db, "seedlist", sch)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for r := 0; r < 100; r++ {
		b.Field(0).(*array.Int64Builder).Append(int64(r))
		for c := 1; c <= 2; c++ {
			lb := b.Field(c).(*array.ListBuilder)
			if r%7 == 3 {
				lb.AppendNull()
				continue
			}
			lb.Append(true)
			for k := 0; k < r%4; k++ {
				switch vb := lb.ValueBuilder().(type) {
				case *array.Int32Builder:
					if k == 1 {
						vb.AppendNull()
					} else {
						vb.Append(int32(r + k))
					}
				case *array.StringBuilder:
					vb.Append(fmt.Sprint("v", r, k))
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	app, err := db.NewAppender("seedlist", AppendOptions{})
	if err != nil {
		f.Fatal(err)
	}
	if err := app.Append(rec); err != nil {
		f.Fatal(err)
	}
	if _, err := app.Commit(); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(db.Path(mustTable(f, db, "seedlist").Files[0]))
	if err != nil {
		f.Fatal(err)
	}
	return seed
}
