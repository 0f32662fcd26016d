package exec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// spillOps are the spilling operators the spill-space tests run: a
// grouping aggregate and a sort, each over 50,000 distinct keys.
var spillOps = map[string]func(Operator) (Operator, error){
	"agg": func(in Operator) (Operator, error) {
		return NewHashAgg(in, HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggCountStar}, {Func: AggMax, Arg: 1}}})
	},
	"sort": func(in Operator) (Operator, error) {
		return NewSort(in, SortSpec{Keys: []SortKey{{Col: 1}, {Col: 0, Desc: true}}})
	},
}

// runSpilling runs a spillOps operator over 50,000 rows at a 64 KiB budget
// with spill space sp.
func runSpilling(t *testing.T, sp *Spill, op string) ([][]any, error) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows [][]any
	for i := 0; i < 50000; i++ {
		rows = append(rows, []any{int64(i), strings.Repeat("x", i%40)})
	}
	rec := MakeRecord(t, mem, schema, rows)
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	agg, err := spillOps[op](src)
	if err != nil {
		t.Fatal(err)
	}
	env := NewTestEnv(mem)
	env.Budget = NewBudget(64 << 10)
	env.Spill = sp
	out, err := CollectRows(env, agg)
	if env.Budget.Used() != 0 {
		t.Errorf("budget still holds %d bytes", env.Budget.Used())
	}
	return out, err
}

// filesUnder lists the files (not directories) below root.
func filesUnder(root string) []string {
	var out []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestSpillLimit: a query that needs more disk than its spill limit fails
// with a resource error naming the limit, and leaves no file.
func TestSpillLimit(t *testing.T) {
	for op := range spillOps {
		root := t.TempDir()
		sp := NewSpill(root, "q1", 32<<10)
		_, err := runSpilling(t, sp, op)
		if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "spill limit") {
			t.Fatalf("%s: got %v, want a resource error naming the spill limit", op, err)
		}
		if f := filesUnder(root); len(f) > 0 {
			t.Fatalf("%s: files left after the failed query: %v", op, f)
		}
		sp.Close()
		// Unlimited, the same query answers.
		sp = NewSpill(root, "q2", 0)
		rows, err := runSpilling(t, sp, op)
		if err != nil || len(rows) != 50000 {
			t.Fatalf("%s: %d rows, %v", op, len(rows), err)
		}
		if sp.Written() == 0 {
			t.Fatalf("%s: nothing spilled", op)
		}
		sp.Close()
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Fatalf("%s: Close left %d entries", op, len(ents))
		}
	}
}

// TestSpillDiskFull: on a full file system (a 256 KiB tmpfs; needs root)
// the query fails with "no space left" as a resource error, no crash, and
// nothing is left on the device.
func TestSpillDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(root, 0)
	for op := range spillOps {
		sp := NewSpill(root, "q", 0)
		_, err := runSpilling(t, sp, op)
		if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("%s: got %v, want a resource error saying no space is left", op, err)
		}
		if f := filesUnder(root); len(f) > 0 {
			t.Fatalf("%s: files left: %v", op, f)
		}
		sp.Close()
	}
}

// TestSpillFileDamaged: a flipped byte or a truncation in a spill file is
// a data error naming the file, never wrong rows.
func TestSpillFileDamaged(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows [][]any
	for i := 0; i < 20000; i++ {
		rows = append(rows, []any{int64(i * 7)})
	}
	for _, damage := range []string{"flip", "truncate"} {
		root := t.TempDir()
		sp := NewSpill(root, "q", 0)
		w, err := sp.create(schema, "test")
		if err != nil {
			t.Fatal(err)
		}
		rec := MakeRecord(t, mem, schema, rows)
		if err := w.write(mem, rec.Columns(), int(rec.NumRows()), nil); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		run, err := w.finish()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(run.path)
		if damage == "flip" {
			b[len(b)/2] ^= 0x40
		} else {
			b = b[:len(b)-100]
		}
		os.WriteFile(run.path, b, 0o600)
		env := NewTestEnv(mem)
		_, err = CollectRows(env, newSpillReader(run))
		if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), run.path) {
			t.Fatalf("%s: got %v, want a data error naming the file", damage, err)
		}
		sp.Close()
	}
}

// TestCleanSpillLeftovers: directories of dead processes go, this
// process's and others' files stay.
func TestCleanSpillLeftovers(t *testing.T) {
	root := t.TempDir()
	dead := filepath.Join(root, SpillPrefix+"999999999-q1")
	mine := filepath.Join(root, SpillPrefix+strconv.Itoa(os.Getpid())+"-q2")
	other := filepath.Join(root, "not-ours")
	for _, d := range []string{dead, mine, other} {
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600)
	}
	n, err := CleanSpillLeftovers(root)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, %v; want 1", n, err)
	}
	for d, want := range map[string]bool{dead: false, mine: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", d, err == nil, want)
		}
	}
}

// FuzzSpillReader: any bytes in a spill file give rows or an error, never
// a panic or a hang.
func FuzzSpillReader(f *testing.F) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	mem := memory.NewGoAllocator()
	dir := f.TempDir()
	sp := NewSpill(dir, "seed", 0)
	w, err := sp.create(schema, "seed")
	if err != nil {
		f.Fatal(err)
	}
	rec := makeFuzzRecord(f, mem, schema)
	w.write(mem, rec.Columns(), int(rec.NumRows()), nil)
	rec.Release()
	run, err := w.finish()
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(run.path)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.arrows")
		os.WriteFile(path, b, 0o600)
		r := &spillRun{spill: NewSpill(t.TempDir(), "f", 0), path: path, schema: schema}
		env := NewTestEnv(memory.NewGoAllocator())
		_, err := CollectRows(env, newSpillReader(r))
		if err != nil && !nferr.Is(err, nferr.KindData) && !nferr.Is(err, nferr.KindIO) {
			t.Fatalf("error of kind %s: %v", nferr.KindOf(err), err)
		}
	})
}

func makeFuzzRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema) arrow.RecordBatch {
	var rows [][]any
	for i := 0; i < 3000; i++ {
		var s any = strings.Repeat("ab", i%9)
		if i%7 == 0 {
			s = nil
		}
		rows = append(rows, []any{int64(i), s})
	}
	return MakeRecord(t, mem, schema, rows)
}
