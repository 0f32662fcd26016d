package exec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func noGrow(int64) error { return nil }

// TestFixedTableCollisions forces every key onto one hash: the table must
// still tell the keys apart by comparing them.
func TestFixedTableCollisions(t *testing.T) {
	var ft fixedTable[uint64]
	ft.init(func(uint64) uint64 { return 42 })
	keys := make([]uint64, 2000)
	hashes := make([]uint64, len(keys))
	for i := range keys {
		keys[i] = uint64(i % 700)
		hashes[i] = 42
	}
	gids := make([]uint32, len(keys))
	if err := ft.findOrInsert(keys, hashes, gids, noGrow); err != nil {
		t.Fatal(err)
	}
	for i, g := range gids {
		if int(g) != i%700 {
			t.Fatalf("key %d got group %d, want %d", keys[i], g, i%700)
		}
	}
	probe := []uint64{5, 699, 700, 12345}
	ph := []uint64{42, 42, 42, 42}
	out := make([]uint32, 4)
	ft.find(probe, ph, make([]bool, 4), out)
	if out[0] != 5 || out[1] != 699 || out[2] != noGroup || out[3] != noGroup {
		t.Fatalf("find = %v", out)
	}

	var bt bytesTable
	bt.init()
	var kb []byte
	koff := []int32{0}
	for i := 0; i < 1500; i++ {
		kb = append(kb, fmt.Sprintf("key-%d", i%500)...)
		koff = append(koff, int32(len(kb)))
	}
	bh := make([]uint64, 1500)
	bg := make([]uint32, 1500)
	if err := bt.findOrInsert(kb, koff, bh, bg, noGrow); err != nil {
		t.Fatal(err)
	}
	for i, g := range bg {
		if int(g) != i%500 {
			t.Fatalf("bytes key %d got group %d", i, g)
		}
	}
}

var keyTableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 30, Scale: 2}, Nullable: true},
	{Name: "t", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "m", Type: &arrow.Decimal64Type{Precision: 12, Scale: 2}, Nullable: true},
}, nil)

// TestKeyTableRandom checks group assignment, widening and decoding against
// a map for many combinations of key columns.
func TestKeyTableRandom(t *testing.T) {
	combos := [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {0, 1}, {2, 2}, {2, 0, 4}, {3, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {4, 4, 4}}
	for ci, cols := range combos {
		for _, nullProb := range []float64{0, 0.1} {
			t.Run(fmt.Sprintf("%v/nulls=%v", cols, nullProb), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci), uint64(nullProb*10)))
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				var infos []colInfo
				for _, c := range cols {
					ci, _ := classify(keyTableSchema.Field(c).Type)
					infos = append(infos, ci)
				}
				budget := NewBudget(0)
				acct := budget.NewAccount("test")
				kt := newKeyTable(infos, acct)
				ref := map[string]uint32{}
				var firstRows [][]any
				for batch := 0; batch < 12; batch++ {
					strLen := 2
					if batch > 6 {
						strLen = 12 // longer strings arrive later: widen
					}
					np := 0.0
					if batch > 3 {
						np = nullProb // NULLs arrive later: widen
					}
					rows := RandomRows(r, keyTableSchema, 1+r.IntN(300), GenOpts{NullProb: np, Range: 6, StrLen: strLen, Col: map[int]func(*rand.Rand) any{
						3: func(r *rand.Rand) any {
							return []float64{0, math.Copysign(0, -1), math.NaN(), 1.5, -2}[r.IntN(5)]
						},
					}})
					rec := MakeRecord(t, mem, keyTableSchema, rows)
					var kcols []arrow.Array
					for _, c := range cols {
						kcols = append(kcols, rec.Column(c))
					}
					// Every other batch runs through a selection.
					var sel []int32
					live := rows
					if batch%2 == 1 {
						live = nil
						for i := range rows {
							if r.IntN(3) > 0 {
								sel = append(sel, int32(i))
								live = append(live, rows[i])
							}
						}
						if sel == nil {
							sel = []int32{}
						}
					}
					gids := make([]uint32, len(live))
					if err := kt.findOrInsert(kcols, sel, len(rows), gids); err != nil {
						t.Fatal(err)
					}
					canon := BatchRows(&Batch{Cols: rec.Columns(), N: int(rec.NumRows()), Sel: sel})
					for j, row := range canon {
						var key []any
						for _, c := range cols {
							key = append(key, row[c])
						}
						k := rowKey(key)
						g, ok := ref[k]
						if !ok {
							g = uint32(len(ref))
							ref[k] = g
							firstRows = append(firstRows, key)
						}
						if gids[j] != g {
							t.Fatalf("batch %d row %d key %v: group %d, want %d (mode %d)", batch, j, key, gids[j], g, kt.layout.mode)
						}
					}
					// find agrees with findOrInsert.
					found := make([]uint32, len(live))
					kt.find(kcols, sel, len(rows), found, &keyScratch{})
					for j := range found {
						if found[j] != gids[j] {
							t.Fatalf("find row %d = %d, want %d", j, found[j], gids[j])
						}
					}
					rec.Release()
				}
				if kt.groups() != len(ref) {
					t.Fatalf("%d groups, want %d", kt.groups(), len(ref))
				}
				dec := kt.decodeKeys(mem, 0, kt.groups())
				got := BatchRows(&Batch{Cols: dec, N: kt.groups()})
				releaseArrays(dec)
				for g, row := range got {
					if rowKey(row) != rowKey(firstRows[g]) {
						t.Fatalf("decoded group %d = %v, want %v", g, row, firstRows[g])
					}
				}
				if acct.Used() != kt.bytes() {
					t.Fatalf("account holds %d bytes, table %d", acct.Used(), kt.bytes())
				}
				kt.release()
				if budget.Used() != 0 {
					t.Fatalf("budget holds %d after release", budget.Used())
				}
			})
		}
	}
}

func TestPlanLayout(t *testing.T) {
	info := func(dt arrow.DataType) colInfo { c, _ := classify(dt); return c }
	str, i64, i32 := info(arrow.BinaryTypes.String), info(arrow.PrimitiveTypes.Int64), info(arrow.PrimitiveTypes.Int32)
	for _, tc := range []struct {
		cols     []colInfo
		nullable []bool
		minInl   int
		mode     keyMode
		inline   int
	}{
		{[]colInfo{i64}, []bool{false}, 0, mode64, 0},
		{[]colInfo{i64}, []bool{true}, 0, mode128, 0},
		{[]colInfo{i32, i32}, []bool{false, false}, 0, mode64, 0},
		{[]colInfo{i32, i32}, []bool{true, true}, 0, mode128, 0},
		{[]colInfo{str, str}, []bool{false, false}, 0, mode64, 3}, // TPC-H Q1 flags
		{[]colInfo{str}, []bool{false}, 0, mode64, 7},
		{[]colInfo{str}, []bool{false}, 8, modeBytes, 0},
		{[]colInfo{str, i32}, []bool{false, false}, 5, mode128, 7},
		{[]colInfo{info(&arrow.Decimal128Type{Precision: 38})}, []bool{false}, 0, modeBytes, 0},
	} {
		l := planLayout(tc.cols, tc.nullable, tc.minInl)
		if l.mode != tc.mode || (l.mode != modeBytes && l.inline != tc.inline && hasBytes(tc.cols)) {
			t.Errorf("planLayout(%v, %v, %d) = mode %d inline %d, want mode %d inline %d", tc.cols, tc.nullable, tc.minInl, l.mode, l.inline, tc.mode, tc.inline)
		}
	}
}

func hasBytes(cols []colInfo) bool {
	for _, c := range cols {
		if c.class == pcBytes {
			return true
		}
	}
	return false
}

func TestHashPartitionConsistent(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(9, 9))
	rows := RandomRows(r, keyTableSchema, 4000, GenOpts{NullProb: 0.1, Range: 300})
	rec := MakeRecord(t, mem, keyTableSchema, rows)
	defer rec.Release()
	keys := []int{0, 2, 5}
	p, err := NewHashPartitioner(keyTableSchema, keys, 7)
	if err != nil {
		t.Fatal(err)
	}
	full := append([]int32(nil), p.Partition(&Batch{Cols: rec.Columns(), N: 4000})...)
	counts := make([]int, 7)
	for _, q := range full {
		counts[q]++
	}
	for q, c := range counts {
		// 4000 rows over 7 partitions: ~571 each; a sound hash stays
		// within +-25%.
		if c < 430 || c > 715 {
			t.Errorf("partition %d has %d rows: poor spread %v", q, c, counts)
		}
	}
	// The same rows through a selection and through a sliced record land in
	// the same partitions.
	sel := []int32{}
	for i := 0; i < 4000; i += 3 {
		sel = append(sel, int32(i))
	}
	viaSel := p.Partition(&Batch{Cols: rec.Columns(), N: 4000, Sel: sel})
	for j, i := range sel {
		if viaSel[j] != full[i] {
			t.Fatalf("row %d: partition %d via selection, %d dense", i, viaSel[j], full[i])
		}
	}
	sl := rec.NewSlice(100, 200)
	defer sl.Release()
	viaSlice := p.Partition(&Batch{Cols: sl.Columns(), N: 100})
	for j := range viaSlice {
		if viaSlice[j] != full[100+j] {
			t.Fatalf("row %d: partition %d via slice, %d dense", 100+j, viaSlice[j], full[100+j])
		}
	}
	split := p.Split(&Batch{Cols: rec.Columns(), N: 4000, Sel: sel})
	n := 0
	for q, s := range split {
		for k, i := range s {
			if full[i] != int32(q) || (k > 0 && s[k-1] >= i) {
				t.Fatalf("split: row %d in partition %d (want %d), ascending %v", i, q, full[i], k == 0 || s[k-1] < i)
			}
		}
		n += len(s)
	}
	if n != len(sel) {
		t.Fatalf("split holds %d rows, want %d", n, len(sel))
	}
	for q, sb := range p.SplitBatches(&Batch{Cols: rec.Columns(), N: 4000, Sel: sel}) {
		if sb == nil {
			continue
		}
		for _, got := range p.Partition(sb) {
			if int(got) != q {
				t.Fatalf("SplitBatches: a row of partition %d in batch %d", got, q)
			}
		}
	}
	// int32 and int64 holding the same numbers hash alike.
	s32 := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil)
	s64 := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	r32 := MakeRecord(t, mem, s32, [][]any{{1}, {-5}, {70000}})
	r64 := MakeRecord(t, mem, s64, [][]any{{1}, {-5}, {70000}})
	defer r32.Release()
	defer r64.Release()
	h32, _ := HashRows(&Batch{Cols: r32.Columns(), N: 3}, s32, []int{0})
	h64, _ := HashRows(&Batch{Cols: r64.Columns(), N: 3}, s64, []int{0})
	for i := range h32 {
		if h32[i] != h64[i] {
			t.Fatalf("int32 and int64 %d hash differently", i)
		}
	}
}

// TestFixedTableFilter checks find through the Bloom filter a join builds:
// every present key is found (also keys inserted after the filter was
// built and keys of a table too big for filterMaxBits to be selective),
// every absent key is not, and the filter actually rejects most absent
// keys.
func TestFixedTableFilter(t *testing.T) {
	for _, n := range []int{1, 200, 5000, 300000} {
		var ft fixedTable[uint64]
		ft.init(hash64)
		keys := make([]uint64, n)
		hashes := make([]uint64, n)
		for i := range keys {
			keys[i] = uint64(i) * 7919
			hashes[i] = hash64(keys[i])
		}
		gids := make([]uint32, n)
		if err := ft.findOrInsert(keys[:n/2+1], hashes[:n/2+1], gids, noGrow); err != nil {
			t.Fatal(err)
		}
		ft.buildFilter()
		// Inserts after the build keep the filter right.
		if err := ft.findOrInsert(keys, hashes, gids, noGrow); err != nil {
			t.Fatal(err)
		}
		probe := make([]uint64, 2*n)
		ph := make([]uint64, 2*n)
		for i := range probe {
			probe[i] = uint64(i/2) * 7919
			if i%2 == 1 {
				probe[i]++ // absent
			}
			ph[i] = hash64(probe[i])
		}
		out := make([]uint32, len(probe))
		ft.find(probe, ph, make([]bool, len(probe)), out)
		for i, g := range out {
			if i%2 == 0 && g != uint32(i/2) {
				t.Fatalf("n=%d: key %d found as %d, want group %d", n, probe[i], g, i/2)
			}
			if i%2 == 1 && g != noGroup {
				t.Fatalf("n=%d: absent key %d found as group %d", n, probe[i], g)
			}
		}
		pass := 0
		for _, h := range oddOf(ph) {
			if f := h & ft.fmask; ft.filter[f>>6]&(1<<(f&63)) != 0 {
				pass++
			}
		}
		if pass > n/5+5 {
			t.Fatalf("n=%d: the filter let %d of %d absent keys through", n, pass, n)
		}
	}
}

func oddOf(s []uint64) []uint64 {
	var out []uint64
	for i := 1; i < len(s); i += 2 {
		out = append(out, s[i])
	}
	return out
}
