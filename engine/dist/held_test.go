package dist

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

func heldRecord(t *testing.T, alloc memory.Allocator, n int) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(alloc)
	defer b.Release()
	for i := range n {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(n))
}

// TestHeldStore: a part is taken once; the limit refuses more with a
// resource error; parts nobody takes are dropped after HeldTTL; Drop
// removes a query's parts; nothing leaks.
func TestHeldStore(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	h := NewHeldStore(1 << 20)
	put := func(key string, task int) {
		rec := heldRecord(t, alloc, 100)
		if err := h.reserve(800); err != nil {
			t.Fatal(err)
		}
		h.put(heldKey{key, task, 0}, &heldStream{recs: []arrow.RecordBatch{rec}, bytes: 800})
	}
	put("q1.w1/5", 0)
	if s := h.take(heldKey{"q1.w1/5", 0, 0}); s == nil || len(s.recs) != 1 {
		t.Fatalf("took %v", s)
	} else {
		s.release(h)
	}
	if h.take(heldKey{"q1.w1/5", 0, 0}) != nil {
		t.Fatal("a part was taken twice")
	}
	if err := h.reserve(2 << 20); !nferr.Is(err, nferr.KindResource) {
		t.Fatalf("over the limit: %v, want a resource error", err)
	}
	put("q2.w1/5", 0)
	put("q2.w1/5", 1)
	put("q3.w1/7", 0)
	h.Drop("q2.")
	if h.Parts() != 1 {
		t.Fatalf("%d parts after dropping q2's, want 1", h.Parts())
	}
	old := HeldTTL
	HeldTTL = time.Millisecond
	defer func() { HeldTTL = old }()
	time.Sleep(5 * time.Millisecond)
	put("q4.w1/1", 0) // sweeps q3's, older than HeldTTL
	if h.take(heldKey{"q3.w1/7", 0, 0}) != nil {
		t.Fatal("a part older than HeldTTL was kept")
	}
	h.Drop("q4.")
	if h.Used() != 0 || h.Parts() != 0 {
		t.Fatalf("%d bytes, %d parts left", h.Used(), h.Parts())
	}
}

// TestHeldSpillFiles: a held part's spill file is removed when the part is
// dropped; a damaged one read back is a data error naming the file.
func TestHeldSpillFiles(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer alloc.AssertSize(t, 0)
	dir := t.TempDir()
	h := NewHeldStore(1 << 20)
	part := func(key string) (*heldStream, string) {
		rec := heldRecord(t, alloc, 5000)
		defer rec.Release()
		w, err := h.spill(dir).CreateFile(rec.Schema(), "held")
		if err != nil {
			t.Fatal(err)
		}
		s := &heldStream{w: w}
		if err := w.Write(alloc, &exec.Batch{Cols: rec.Columns(), N: int(rec.NumRows())}); err != nil {
			t.Fatal(err)
		}
		if err := s.finish(); err != nil {
			t.Fatal(err)
		}
		path := s.file.Path()
		h.put(heldKey{key, 0, 0}, s)
		return s, path
	}
	_, path := part("q1.w1/2")
	if h.OnDisk() == 0 || h.Spilled() == 0 {
		t.Fatalf("on disk %d, spilled %d", h.OnDisk(), h.Spilled())
	}
	h.Drop("q1.")
	if _, err := os.Stat(path); !os.IsNotExist(err) || h.OnDisk() != 0 {
		t.Fatalf("dropped part's file %s: %v, %d bytes on disk", path, err, h.OnDisk())
	}
	_, path = part("q2.w1/2")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0xff
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	hs := h.take(heldKey{"q2.w1/2", 0, 0})
	op, err := heldReader(h, hs, hs.file.Reader().Schema())
	if err != nil {
		t.Fatal(err)
	}
	env := &exec.Env{Ctx: context.Background(), Alloc: alloc, BatchSize: 1024}
	if err := op.Open(env); err != nil {
		t.Fatal(err)
	}
	for err == nil {
		var b *exec.Batch
		b, err = op.Next()
		if b == nil && err == nil {
			break
		}
	}
	op.Close()
	if !nferr.Is(err, nferr.KindData) || !strings.Contains(err.Error(), path) {
		t.Fatalf("damaged held file: %v, want a data error naming %s", err, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || h.OnDisk() != 0 {
		t.Fatalf("read part's file %s: %v, %d bytes on disk", path, err, h.OnDisk())
	}
}
