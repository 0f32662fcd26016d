package exec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/internal/nferr"
)

var sortTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},                     // 0
	{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},                     // 1
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},                       // 2
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},                   // 3
	{Name: "d", Type: &arrow.Decimal64Type{Precision: 12, Scale: 2}, Nullable: true},  // 4
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},                  // 5
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},                  // 6
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 1}, Nullable: true}, // 7
	{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true},                       // 8: short keys
}, nil)

func sortRows(seed uint64, n int) [][]any {
	r := rand.New(rand.NewPCG(seed, 3))
	return RandomRows(r, sortTestSchema, n, GenOpts{NullProb: 0.05, Range: 30, Col: map[int]func(*rand.Rand) any{
		1: func(r *rand.Rand) any { return r.Int64() >> r.IntN(64) }, // wide range: partial prefix
		3: func(r *rand.Rand) any {
			return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -2.25, 1e300}[r.IntN(8)]
		},
		8: func(r *rand.Rand) any { return fmt.Sprintf("v%d", r.IntN(12)) },
	}})
}

// refSortCmp compares rows by keys with SQL semantics.
func refSortCmp(a, b []any, keys []SortKey) int {
	for _, k := range keys {
		x, y := a[k.Col], b[k.Col]
		nf := k.nullsFirst()
		switch {
		case x == nil && y == nil:
			continue
		case x == nil:
			if nf {
				return -1
			}
			return 1
		case y == nil:
			if nf {
				return 1
			}
			return -1
		}
		c := CompareValues(x, y)
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func refSort(rows [][]any, keys []SortKey) [][]any {
	out := append([][]any(nil), rows...)
	sort.SliceStable(out, func(i, j int) bool { return refSortCmp(out[i], out[j], keys) < 0 })
	return out
}

var sortKeySets = [][]SortKey{
	{{Col: 0}},
	{{Col: 0, Desc: true, Nulls: NullsLast}, {Col: 5}},
	{{Col: 2}},
	{{Col: 8, Desc: true}, {Col: 0, Nulls: NullsFirst}},
	{{Col: 3, Desc: true}, {Col: 1}},
	{{Col: 1}, {Col: 3}},
	{{Col: 6}, {Col: 7, Desc: true}, {Col: 2}},
	{{Col: 4, Nulls: NullsFirst}, {Col: 6, Desc: true}},
	{{Col: 5}, {Col: 0}, {Col: 6}, {Col: 8}},
}

func keysName(keys []SortKey) string {
	var parts []string
	for _, k := range keys {
		s := fmt.Sprint(k.Col)
		if k.Desc {
			s += "d"
		}
		if k.Nulls != "" {
			s += string(k.Nulls[:1])
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func TestSortHarness(t *testing.T) {
	rows := sortRows(1, 500)
	for _, keys := range sortKeySets {
		spec := SortSpec{Keys: keys}
		name := "sort/" + keysName(keys)
		t.Run(name, func(t *testing.T) {
			RunOpTest(t, OpTest{
				Name:    name,
				Inputs:  []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
				Ordered: true,
				Build:   func(in []Operator) (Operator, error) { return NewSort(in[0], spec) },
				Ref:     func(in [][][]any) ([][]any, error) { return refSort(in[0], keys), nil },
			})
		})
	}
}

// TestSortSpills forces external sorts: at 24 KiB the runs are a few
// hundred rows and the merge fan-in is 2 (several merge passes); at 160 KiB
// the runs are merged in one pass. Ordered: the output must equal a stable
// sort of the input, so ties keep input order across runs.
func TestSortSpills(t *testing.T) {
	rows := sortRows(5, 4000)
	for i, keys := range sortKeySets {
		for _, budget := range []int64{24 << 10, 160 << 10} {
			if i%2 == 1 && budget > 24<<10 {
				continue
			}
			// NB: batches of 7 make thousands of tiny spill batches (slow
			// under the checked allocator): one key set takes them.
			sizes := []int{1024}
			if i == 0 {
				sizes = []int{7, 1024}
			}
			spec := SortSpec{Keys: keys}
			name := fmt.Sprintf("sort/%s/budget=%dKiB", keysName(keys), budget>>10)
			t.Run(name, func(t *testing.T) {
				var spilled int
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
					Ordered:    true,
					BatchSizes: sizes,
					Budget:     budget,
					Spill:      true,
					SpillRuns:  &spilled,
					Build:      func(in []Operator) (Operator, error) { return NewSort(in[0], spec) },
					Ref:        func(in [][][]any) ([][]any, error) { return refSort(in[0], keys), nil },
				})
				if spilled == 0 {
					t.Fatalf("no run spilled at a budget of %d bytes", budget)
				}
			})
		}
	}
}

// TestSortMergeFanIn pins the merge fan-in: bounded by a quarter of the
// budget, never below 2 nor above sortMaxFanIn.
func TestSortMergeFanIn(t *testing.T) {
	for _, tc := range []struct {
		limit, batch int64
		want         int
	}{
		{0, 1 << 20, sortMaxFanIn},
		{24 << 10, 1 << 10, 2},
		{32 << 20, 100 << 10, 32 << 20 / 4 / (200<<10 + sortRunReaderBytes)},
		{1 << 30, 100 << 10, sortMaxFanIn},
	} {
		if got := sortMergeFanIn(tc.limit, tc.batch); got != tc.want {
			t.Errorf("sortMergeFanIn(%d, %d) = %d, want %d", tc.limit, tc.batch, got, tc.want)
		}
	}
}

func TestTopNHarness(t *testing.T) {
	rows := sortRows(2, 400)
	for i, keys := range sortKeySets {
		for _, lo := range [][2]int64{{10, 0}, {25, 7}, {0, 5}, {1000, 0}, {3, 398}} {
			spec := TopNSpec{Keys: keys, Limit: lo[0], Offset: lo[1]}
			if i%3 != 0 && lo[0] == 1000 {
				continue
			}
			name := fmt.Sprintf("topn/%s/limit=%d/offset=%d", keysName(keys), lo[0], lo[1])
			t.Run(name, func(t *testing.T) {
				RunOpTest(t, OpTest{
					Name:       name,
					Inputs:     []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
					Ordered:    true,
					BatchSizes: []int{1, 7, 1024},
					Build:      func(in []Operator) (Operator, error) { return NewTopN(in[0], spec) },
					Ref: func(in [][][]any) ([][]any, error) {
						s := refSort(in[0], keys)
						if int(spec.Offset) >= len(s) {
							return nil, nil
						}
						s = s[spec.Offset:]
						return s[:min(len(s), int(spec.Limit))], nil
					},
				})
			})
		}
	}
}

func TestDistinctHarness(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	rows := RandomRows(r, sortTestSchema, 600, GenOpts{NullProb: 0.05, Distinct: 4})
	for _, cols := range [][]int{nil, {0}, {2, 5}, {3}, {6, 7, 8}} {
		spec := DistinctSpec{Cols: cols}
		name := fmt.Sprintf("distinct/%v", cols)
		t.Run(name, func(t *testing.T) {
			RunOpTest(t, OpTest{
				Name:    name,
				Inputs:  []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
				Ordered: true,
				Build:   func(in []Operator) (Operator, error) { return NewDistinct(in[0], spec) },
				Ref:     func(in [][][]any) ([][]any, error) { return refDistinct(in[0], cols), nil },
			})
		})
	}
}

// TestDistinctSpills forces DISTINCT to spill: rows of keys not in the
// table go to partitions, made distinct one level down. Not Ordered: a
// spilled key comes out after the in-memory ones.
func TestDistinctSpills(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	rows := RandomRows(r, sortTestSchema, 5000, GenOpts{NullProb: 0.05, Distinct: 2500})
	for _, cols := range [][]int{nil, {2}, {1, 8}} {
		spec := DistinctSpec{Cols: cols}
		name := fmt.Sprintf("distinct/%v", cols)
		t.Run(name, func(t *testing.T) {
			var spilled int
			RunOpTest(t, OpTest{
				Name:       name,
				Inputs:     []HarnessInput{{Schema: sortTestSchema, Rows: rows}},
				BatchSizes: []int{7, 1024},
				Budget:     48 << 10,
				Spill:      true,
				SpillRuns:  &spilled,
				Build:      func(in []Operator) (Operator, error) { return NewDistinct(in[0], spec) },
				Ref:        func(in [][][]any) ([][]any, error) { return refDistinct(in[0], cols), nil },
			})
			if spilled == 0 {
				t.Fatal("no run spilled")
			}
		})
	}
}

// refDistinct keeps the first row of each key of cols (nil: all columns).
func refDistinct(rows [][]any, cols []int) [][]any {
	if cols == nil {
		for i := 0; i < sortTestSchema.NumFields(); i++ {
			cols = append(cols, i)
		}
	}
	seen := map[string]bool{}
	var out [][]any
	for _, row := range rows {
		var key []any
		for _, c := range cols {
			key = append(key, row[c])
		}
		if k := rowKey(key); !seen[k] {
			seen[k] = true
			out = append(out, row)
		}
	}
	return out
}

// TestSortPrefixExact checks the radix path is taken when keys fit, and
// the comparator path otherwise.
func TestSortPrefixExact(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := sortRows(9, 300)
	rec := MakeRecord(t, mem, sortTestSchema, rows)
	defer rec.Release()
	var infos []colInfo
	for i := 0; i < sortTestSchema.NumFields(); i++ {
		c, _ := classify(sortTestSchema.Field(i).Type)
		infos = append(infos, c)
	}
	st := newRowStore(infos)
	st.appendBatch(&Batch{Cols: rec.Columns(), N: int(rec.NumRows())})
	for _, tc := range []struct {
		keys  []SortKey
		exact bool
	}{
		{[]SortKey{{Col: 0}}, true},
		{[]SortKey{{Col: 0}, {Col: 5, Desc: true}, {Col: 6}}, true},
		{[]SortKey{{Col: 8}}, true},
		{[]SortKey{{Col: 1}, {Col: 3}}, false},
		{[]SortKey{{Col: 2}}, false},
		{[]SortKey{{Col: 7}}, false},
	} {
		keys, err := checkSortKeys(sortTestSchema, tc.keys, "test")
		if err != nil {
			t.Fatal(err)
		}
		ents := make([]sortEntry, st.n)
		if got := buildPrefixes(st, keys, ents, make([]uint64, st.n)) == len(keys); got != tc.exact {
			t.Errorf("keys %v: exact = %v, want %v", tc.keys, got, tc.exact)
		}
	}
}

func TestSortMemoryLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := sortRows(3, 5000)
	rec := MakeRecord(t, mem, sortTestSchema, rows)
	for _, mk := range []func(Operator) (Operator, error){
		func(in Operator) (Operator, error) { return NewSort(in, SortSpec{Keys: []SortKey{{Col: 0}}}) },
		func(in Operator) (Operator, error) {
			return NewTopN(in, TopNSpec{Keys: []SortKey{{Col: 0}}, Limit: 4000})
		},
		func(in Operator) (Operator, error) { return NewDistinct(in, DistinctSpec{}) },
	} {
		src, _ := NewBatchSource(sortTestSchema, rec)
		op, err := mk(src)
		if err != nil {
			t.Fatal(err)
		}
		env := NewTestEnv(mem)
		env.Budget = NewBudget(32 << 10)
		_, err = CollectRows(env, op)
		if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "memory limit exceeded in") {
			t.Fatalf("got %v, want a KindResource memory error", err)
		}
		t.Log(err)
		if env.Budget.Used() != 0 {
			t.Fatalf("budget holds %d after Close", env.Budget.Used())
		}
	}
	rec.Release()
}

// TestIntervalKeys: intervals group and join (equality) but do not sort.
func TestIntervalKeys(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "iv", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(71, 1))
	rows := RandomRows(r, schema, 300, GenOpts{NullProb: 0.05, Range: 6})
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggCountStar}, {Func: AggSum, Arg: 1}}}
	RunOpTest(t, OpTest{
		Name:       "agg-by-interval",
		Inputs:     []HarnessInput{{Schema: schema, Rows: rows}},
		BatchSizes: []int{7, 1024},
		Build:      func(in []Operator) (Operator, error) { return NewHashAgg(in[0], spec) },
		Ref:        func(in [][][]any) ([][]any, error) { return refHashAgg(schema, in[0], spec) },
	})
	src, _ := NewBatchSource(schema)
	if _, err := NewSort(src, SortSpec{Keys: []SortKey{{Col: 0}}}); !nferr.Is(err, nferr.KindQuery) {
		t.Fatalf("sort by interval: got %v, want a query error", err)
	}
}
