package shuffle

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

// FuzzBatchDecode feeds arbitrary payloads to the Arrow payload decoder: it
// must return a batch or a KindData/KindInternal error, never panic, and
// keep decoding valid payloads afterwards.
func FuzzBatchDecode(f *testing.F) {
	mem := memory.NewGoAllocator()
	enc, _ := NewBatchEncoder(testSchema, mem)
	for _, n := range []int{0, 1, 9, 100} {
		rec := buildBatch(mem, 0, n, -1, 1)
		p, err := enc.Encode(rec)
		rec.Release()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	dec, _ := NewBatchDecoder(testSchema, mem)
	rec := buildBatch(mem, 0, 10, -1, 1)
	good, _ := enc.Encode(rec)
	rec.Release()
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := dec.Decode(p)
		if err == nil {
			r.Release()
		} else if k := nferr.KindOf(err); k != nferr.KindData && k != nferr.KindInternal {
			t.Fatalf("error of kind %v: %v", k, err)
		}
		r, err = dec.Decode(good)
		if err != nil {
			t.Fatalf("decoder broken after %x: %v", p, err)
		}
		r.Release()
	})
}
