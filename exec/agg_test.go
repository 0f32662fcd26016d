package exec

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

// aggTestSchema covers the types aggregates meet.
var aggTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},                       // 0
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},                     // 1
	{Name: "l", Type: arrow.PrimitiveTypes.Int64, Nullable: true},                     // 2
	{Name: "d", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},  // 3
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},                   // 4
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},                  // 5
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},                  // 6
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 3}, Nullable: true}, // 7
}, nil)

// rowKey is a map key for a tuple of row values.
func rowKey(vals []any) string {
	var sb strings.Builder
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			sb.WriteString("N|")
		case Dec:
			fmt.Fprintf(&sb, "D%s|", x.Rescale(10))
		case float64:
			if x == 0 {
				x = 0 // -0 groups with 0
			}
			if math.IsNaN(x) {
				sb.WriteString("NaN|")
			} else {
				fmt.Fprintf(&sb, "F%v|", x)
			}
		default:
			fmt.Fprintf(&sb, "%T%v|", v, v)
		}
	}
	return sb.String()
}

// refAggState is one aggregate's reference state.
type refAggState struct {
	cnt  int64
	sum  any // int64, float64 or Dec
	ext  any // min/max
	seen map[string]bool
}

// refHashAgg computes a single-phase aggregate row by row.
func refHashAgg(schema *arrow.Schema, rows [][]any, spec HashAggSpec) ([][]any, error) {
	type group struct {
		key []any
		st  []*refAggState
	}
	var order []*group
	groups := map[string]*group{}
	get := func(key []any) *group {
		k := rowKey(key)
		g := groups[k]
		if g == nil {
			g = &group{key: key}
			for range spec.Aggs {
				g.st = append(g.st, &refAggState{seen: map[string]bool{}})
			}
			groups[k] = g
			order = append(order, g)
		}
		return g
	}
	if len(spec.GroupCols) == 0 {
		get(nil)
	}
	for _, r := range rows {
		var key []any
		for _, c := range spec.GroupCols {
			key = append(key, r[c])
		}
		g := get(key)
		for i, a := range spec.Aggs {
			st := g.st[i]
			if a.Filter != nil && r[*a.Filter] != true {
				continue
			}
			if a.Func == AggCountStar {
				st.cnt++
				continue
			}
			v := r[a.Arg]
			if v == nil {
				continue
			}
			if a.Distinct {
				k := rowKey([]any{v})
				if st.seen[k] {
					continue
				}
				st.seen[k] = true
			}
			st.cnt++
			switch a.Func {
			case AggSum, AggAvg:
				switch x := v.(type) {
				case int32:
					if st.sum == nil {
						st.sum = int64(0)
					}
					s := st.sum.(int64)
					if (x > 0 && s > math.MaxInt64-int64(x)) || (x < 0 && s < math.MinInt64-int64(x)) {
						return nil, nferr.Queryf("bigint out of range in sum")
					}
					st.sum = s + int64(x)
				case int64:
					if st.sum == nil {
						st.sum = int64(0)
					}
					s := st.sum.(int64)
					if (x > 0 && s > math.MaxInt64-x) || (x < 0 && s < math.MinInt64-x) {
						return nil, nferr.Queryf("bigint out of range in sum")
					}
					st.sum = s + x
				case float64:
					if st.sum == nil {
						st.sum = 0.0
					}
					st.sum = st.sum.(float64) + x
				case Dec:
					if st.sum == nil {
						st.sum = DecU(0, x.S)
					}
					st.sum = st.sum.(Dec).Add(x)
				}
			case AggMin:
				if st.ext == nil || CompareValues(v, st.ext) < 0 {
					st.ext = v
				}
			case AggMax:
				if st.ext == nil || CompareValues(v, st.ext) > 0 {
					st.ext = v
				}
			}
		}
	}
	var out [][]any
	for _, g := range order {
		row := append([]any(nil), g.key...)
		for i, a := range spec.Aggs {
			st := g.st[i]
			switch a.Func {
			case AggCountStar, AggCount:
				row = append(row, st.cnt)
			case AggSum:
				if d, ok := st.sum.(Dec); ok && d.U.CmpAbs(pow10Big(38)) >= 0 {
					return nil, nferr.Queryf("numeric overflow in sum")
				}
				row = append(row, st.sum)
			case AggAvg:
				switch s := st.sum.(type) {
				case nil:
					row = append(row, nil)
				case int64:
					row = append(row, float64(s)/float64(st.cnt))
				case float64:
					row = append(row, s/float64(st.cnt))
				case Dec:
					row = append(row, refAvgDec(s, st.cnt))
				}
			default:
				row = append(row, st.ext)
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// refAvgDec is sum/cnt at avg's scale, rounded half away from zero.
func refAvgDec(sum Dec, cnt int64) Dec {
	s := expr.AvgScale(sum.S)
	u := new(big.Int).Mul(sum.U, pow10Big(s-sum.S))
	c := big.NewInt(cnt)
	q, r := new(big.Int).QuoRem(u, c, new(big.Int))
	r.Abs(r).Mul(r, big.NewInt(2))
	if r.Cmp(c) >= 0 {
		if u.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return Dec{U: q, S: s}
}

func allAggs() []AggSpec {
	return []AggSpec{
		{Func: AggCountStar},
		{Func: AggCount, Arg: 2},
		{Func: AggSum, Arg: 1},
		{Func: AggSum, Arg: 2},
		{Func: AggSum, Arg: 3},
		{Func: AggSum, Arg: 4},
		{Func: AggSum, Arg: 7},
		{Func: AggAvg, Arg: 1},
		{Func: AggAvg, Arg: 3},
		{Func: AggAvg, Arg: 4},
		{Func: AggAvg, Arg: 7},
		{Func: AggMin, Arg: 0},
		{Func: AggMax, Arg: 0},
		{Func: AggMin, Arg: 3},
		{Func: AggMax, Arg: 4},
		{Func: AggMin, Arg: 5},
		{Func: AggMax, Arg: 5},
		{Func: AggMin, Arg: 6},
		{Func: AggMax, Arg: 6},
		{Func: AggMax, Arg: 7},
		{Func: AggMin, Arg: 1},
		{Func: AggMax, Arg: 2},
	}
}

func aggRows(seed uint64, n int, distinct int) [][]any {
	r := rand.New(rand.NewPCG(seed, 1))
	return RandomRows(r, aggTestSchema, n, GenOpts{NullProb: 0.05, Col: map[int]func(*rand.Rand) any{
		0: func(r *rand.Rand) any {
			// Mostly short keys, some long ones: the key table starts packed
			// and has to widen.
			if r.IntN(20) == 0 {
				return fmt.Sprintf("a-long-key-%d", r.IntN(distinct))
			}
			return fmt.Sprintf("k%d", r.IntN(distinct))
		},
		1: func(r *rand.Rand) any { return int32(r.IntN(distinct)) },
	}})
}

func TestHashAggHarness(t *testing.T) {
	rows := aggRows(1, 700, 9)
	for _, tc := range []struct {
		name   string
		groups []int
		aggs   []AggSpec
	}{
		{"global", nil, allAggs()},
		{"by-string", []int{0}, allAggs()},
		{"by-int", []int{1}, allAggs()},
		{"by-string-int", []int{0, 1}, allAggs()},
		{"by-date-bool", []int{5, 6}, allAggs()[:8]},
		{"by-decimal-float", []int{3, 4}, allAggs()[:6]},
		{"by-dec128", []int{7}, allAggs()[:4]},
		{"by-all", []int{0, 1, 2, 3, 4, 5, 6, 7}, []AggSpec{{Func: AggCountStar}}},
		{"distinct", []int{1}, []AggSpec{{Func: AggCount, Arg: 0, Distinct: true}, {Func: AggSum, Arg: 3, Distinct: true}, {Func: AggCountStar}, {Func: AggAvg, Arg: 2, Distinct: true}}},
		{"distinct-global", nil, []AggSpec{{Func: AggCount, Arg: 0, Distinct: true}, {Func: AggCount, Arg: 4, Distinct: true}}},
		{"filter", []int{1}, []AggSpec{{Func: AggCountStar, Filter: col(6)}, {Func: AggSum, Arg: 2, Filter: col(6)}, {Func: AggSum, Arg: 2}, {Func: AggMin, Arg: 0, Filter: col(6)}}},
		{"filter-distinct", []int{0}, []AggSpec{{Func: AggCount, Arg: 1, Distinct: true, Filter: col(6)}, {Func: AggCount, Arg: 1, Distinct: true}}},
	} {
		spec := HashAggSpec{GroupCols: tc.groups, Aggs: tc.aggs}
		t.Run(tc.name, func(t *testing.T) {
			RunOpTest(t, OpTest{
				Name:   tc.name,
				Inputs: []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
				Build: func(in []Operator) (Operator, error) {
					return NewHashAgg(in[0], spec)
				},
				Ref: func(in [][][]any) ([][]any, error) { return refHashAgg(aggTestSchema, in[0], spec) },
			})
		})
		hasDistinct := false
		for _, a := range tc.aggs {
			hasDistinct = hasDistinct || a.Distinct
		}
		if hasDistinct {
			continue
		}
		t.Run(tc.name+"/split", func(t *testing.T) {
			p, f, err := SplitAgg(spec)
			if err != nil {
				t.Fatal(err)
			}
			RunOpTest(t, OpTest{
				Name:       tc.name + "/split",
				Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: rows}},
				BatchSizes: []int{7, 1024},
				Build:      buildSplitAgg(p, f),
				Ref:        func(in [][][]any) ([][]any, error) { return refHashAgg(aggTestSchema, in[0], spec) },
			})
		})
	}
}

func TestHashAggEmptyInput(t *testing.T) {
	spec := HashAggSpec{Aggs: []AggSpec{{Func: AggCountStar}, {Func: AggSum, Arg: 3}, {Func: AggMin, Arg: 0}, {Func: AggAvg, Arg: 2}}}
	RunOpTest(t, OpTest{
		Name:     "empty-global",
		Inputs:   []HarnessInput{{Schema: aggTestSchema}},
		NoCancel: true,
		Build:    func(in []Operator) (Operator, error) { return NewHashAgg(in[0], spec) },
		Ref: func(in [][][]any) ([][]any, error) {
			return [][]any{{int64(0), nil, nil, nil}}, nil
		},
	})
	grouped := HashAggSpec{GroupCols: []int{0}, Aggs: spec.Aggs}
	RunOpTest(t, OpTest{
		Name:   "empty-grouped",
		Inputs: []HarnessInput{{Schema: aggTestSchema}},
		Build:  func(in []Operator) (Operator, error) { return NewHashAgg(in[0], grouped) },
		Ref:    func(in [][][]any) ([][]any, error) { return nil, nil },
	})
	// Split global aggregate over no rows: one row, count 0, sum NULL.
	p, f, _ := SplitAgg(spec)
	RunOpTest(t, OpTest{
		Name:     "empty-global-split",
		Inputs:   []HarnessInput{{Schema: aggTestSchema}},
		NoCancel: true,
		Build:    buildSplitAgg(p, f),
		Ref:      func(in [][][]any) ([][]any, error) { return [][]any{{int64(0), nil, nil, nil}}, nil },
	})
}

func TestHashAggOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "g", Type: arrow.PrimitiveTypes.Int32},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
		{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 0}},
	}, nil)
	huge := int64(math.MaxInt64 - 5)
	rows := [][]any{{1, huge, 1}, {1, int64(10), 2}, {2, int64(1), 3}}
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggSum, Arg: 1}}}
	RunOpTest(t, OpTest{
		Name:            "int-overflow",
		Inputs:          []HarnessInput{{Schema: schema, Rows: rows}},
		NoNullInjection: true,
		Build:           func(in []Operator) (Operator, error) { return NewHashAgg(in[0], spec) },
		Ref: func(in [][][]any) ([][]any, error) {
			return nil, nferr.Queryf("bigint out of range in sum")
		},
	})
	nines := Dec{U: new(big.Int).Sub(pow10Big(38), big.NewInt(1)), S: 0}
	drows := [][]any{{1, int64(0), nines}, {1, int64(0), nines}}
	dspec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggSum, Arg: 2}}}
	RunOpTest(t, OpTest{
		Name:            "dec-overflow",
		Inputs:          []HarnessInput{{Schema: schema, Rows: drows}},
		NoNullInjection: true,
		Build:           func(in []Operator) (Operator, error) { return NewHashAgg(in[0], dspec) },
		Ref: func(in [][][]any) ([][]any, error) {
			return nil, nferr.Queryf("numeric overflow in sum")
		},
	})
}

func TestHashAggMemoryLimit(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var rows [][]any
	for i := 0; i < 50000; i++ {
		rows = append(rows, []any{int64(i)})
	}
	rec := MakeRecord(t, mem, schema, rows)
	src, _ := NewBatchSource(schema, rec)
	rec.Release()
	agg, err := NewHashAgg(src, HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{{Func: AggCountStar}}})
	if err != nil {
		t.Fatal(err)
	}
	env := NewTestEnv(mem)
	env.Budget = NewBudget(64 << 10)
	_, err = CollectRows(env, agg)
	if !nferr.Is(err, nferr.KindResource) || !strings.Contains(err.Error(), "memory limit exceeded in hash aggregate") {
		t.Fatalf("got %v, want a KindResource error naming the hash aggregate", err)
	}
	if env.Budget.Used() != 0 {
		t.Fatalf("budget still holds %d bytes", env.Budget.Used())
	}
}

func TestHashAggSpecErrors(t *testing.T) {
	src, _ := NewBatchSource(aggTestSchema)
	for _, spec := range []HashAggSpec{
		{GroupCols: []int{42}},
		{Aggs: []AggSpec{{Func: AggSum, Arg: 0}}},   // sum of strings
		{Aggs: []AggSpec{{Func: AggAvg, Arg: 6}}},   // avg of bools
		{Aggs: []AggSpec{{Func: "median", Arg: 1}}}, // unknown
		{Aggs: []AggSpec{{Func: AggSum, Arg: -1}}},  // bad column
		{Phase: AggPartial, Aggs: []AggSpec{{Func: AggCount, Arg: 1, Distinct: true}}},
		{Aggs: []AggSpec{{Func: AggCount, Arg: 1, Filter: col(1)}}}, // filter not boolean
		{Aggs: []AggSpec{{Func: AggCount, Arg: 1, Filter: col(8)}}}, // filter out of range
	} {
		if _, err := NewHashAgg(src, spec); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("spec %+v: got %v, want a KindQuery error", spec, err)
		}
	}
}

func TestInt128(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	toBig := func(a i128) *big.Int {
		b := new(big.Int).SetInt64(a.hi)
		b.Lsh(b, 64)
		return b.Add(b, new(big.Int).SetUint64(a.lo))
	}
	lim := new(big.Int).Lsh(big.NewInt(1), 127)
	if got := toBig(maxDecimal38); got.Cmp(new(big.Int).Sub(pow10Big(38), big.NewInt(1))) != 0 {
		t.Fatalf("maxDecimal38 = %s", got)
	}
	for i := 0; i < 20000; i++ {
		a := i128{lo: r.Uint64(), hi: int64(r.Uint64()) >> r.IntN(64)}
		b := i128{lo: r.Uint64(), hi: int64(r.Uint64()) >> r.IntN(64)}
		s, of := a.add(b)
		want := new(big.Int).Add(toBig(a), toBig(b))
		wantOf := want.Cmp(lim) >= 0 || want.Cmp(new(big.Int).Neg(lim)) < 0
		if of != wantOf || (!of && toBig(s).Cmp(want) != 0) {
			t.Fatalf("%s + %s = %s (of %v), want %s (of %v)", toBig(a), toBig(b), toBig(s), of, want, wantOf)
		}
		k := r.IntN(20)
		m, of := a.mulPow10(k)
		want = new(big.Int).Mul(toBig(a), pow10Big(int32(k)))
		wantOf = want.CmpAbs(lim) >= 0
		if of != wantOf || (!of && toBig(m).Cmp(want) != 0) {
			t.Fatalf("%s * 10^%d = %s (of %v), want %s", toBig(a), k, toBig(m), of, want)
		}
		d := r.Uint64() >> r.IntN(64)
		if d == 0 {
			d = 1
		}
		if a.hi == math.MinInt64 && a.lo == 0 {
			continue
		}
		q := a.divRound(d)
		wq := refAvgDec(Dec{U: toBig(a), S: 34}, int64(d>>1)|1)
		_ = wq
		// Reference: round half away from zero.
		num := toBig(a)
		bq, br := new(big.Int).QuoRem(num, new(big.Int).SetUint64(d), new(big.Int))
		br.Abs(br).Mul(br, big.NewInt(2))
		if br.Cmp(new(big.Int).SetUint64(d)) >= 0 {
			if num.Sign() < 0 {
				bq.Sub(bq, big.NewInt(1))
			} else {
				bq.Add(bq, big.NewInt(1))
			}
		}
		if toBig(q).Cmp(bq) != 0 {
			t.Fatalf("%s / %d = %s, want %s", num, d, toBig(q), bq)
		}
	}
}

// TestHashAggSpills: at budgets of tens of KiB the aggregate spills (and
// spills again, recursively, at the smallest), in every phase, with skew
// (one key holding most rows), and answers as the reference does; no
// leaks, no spill file left.
func TestHashAggSpills(t *testing.T) {
	rows := aggRows(3, 6000, 2500)
	r := rand.New(rand.NewPCG(9, 9))
	skewed := aggRows(4, 5000, 1500)
	for _, row := range skewed {
		if r.IntN(10) < 8 {
			row[0], row[1] = "hot", int32(7)
		}
	}
	for _, tc := range []struct {
		name   string
		rows   [][]any
		budget int64
		groups []int
		aggs   []AggSpec
	}{
		{"by-string", rows, 48 << 10, []int{0}, allAggs()},
		{"by-int-tiny", rows, 20 << 10, []int{1}, allAggs()[:8]},
		{"by-string-int", rows, 64 << 10, []int{0, 1}, allAggs()},
		{"skew", skewed, 32 << 10, []int{0, 1}, allAggs()},
		{"distinct", rows, 64 << 10, []int{1}, []AggSpec{{Func: AggCount, Arg: 0, Distinct: true}, {Func: AggCountStar}}},
	} {
		spec := HashAggSpec{GroupCols: tc.groups, Aggs: tc.aggs}
		t.Run(tc.name, func(t *testing.T) {
			var spilled int
			RunOpTest(t, OpTest{
				Name:       tc.name,
				Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: tc.rows}},
				BatchSizes: []int{7, 1024},
				Budget:     tc.budget,
				Spill:      true,
				SpillRuns:  &spilled,
				Build:      func(in []Operator) (Operator, error) { return NewHashAgg(in[0], spec) },
				Ref:        func(in [][][]any) ([][]any, error) { return refHashAgg(aggTestSchema, in[0], spec) },
			})
			if spilled == 0 {
				t.Fatalf("no run spilled at a budget of %d bytes", tc.budget)
			}
			t.Logf("%d runs spilled", spilled)
		})
		if tc.name == "distinct" {
			continue
		}
		t.Run(tc.name+"/split", func(t *testing.T) {
			p, f, _ := SplitAgg(spec)
			var spilled int
			RunOpTest(t, OpTest{
				Name:       tc.name + "/split",
				Inputs:     []HarnessInput{{Schema: aggTestSchema, Rows: tc.rows}},
				BatchSizes: []int{1024},
				Budget:     tc.budget * 2,
				Spill:      true,
				SpillRuns:  &spilled,
				Build:      buildSplitAgg(p, f),
				Ref:        func(in [][][]any) ([][]any, error) { return refHashAgg(aggTestSchema, in[0], spec) },
			})
			if spilled == 0 {
				t.Fatalf("no run spilled")
			}
		})
	}
}

// buildSplitAgg builds a partial aggregate feeding a final one (SplitAgg's
// two phases) over the first input.
func buildSplitAgg(partial, final HashAggSpec) func([]Operator) (Operator, error) {
	return func(in []Operator) (Operator, error) {
		pa, err := NewHashAgg(in[0], partial)
		if err != nil {
			return nil, err
		}
		return NewHashAgg(pa, final)
	}
}

// col is a pointer to column i (AggSpec.Filter).
func col(i int) *int { return &i }

// TestHashAggArrayAggFilter: array_agg keeps NULL values but not the rows
// its FILTER drops (FALSE or NULL); DISTINCT keeps one NULL; a group whose
// rows are all dropped gives NULL; split into partial and final phases the
// same.
func TestHashAggArrayAggFilter(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "g", Type: arrow.PrimitiveTypes.Int32},
		{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	rows := [][]any{
		{int32(1), int32(10), true}, {int32(1), nil, true}, {int32(1), int32(20), false}, {int32(3), int32(5), false},
		{int32(1), int32(10), true}, {int32(1), nil, nil}, {int32(2), int32(30), false}, {int32(2), nil, true}, {int32(1), nil, true},
	}
	spec := HashAggSpec{GroupCols: []int{0}, Aggs: []AggSpec{
		{Func: AggArrayAgg, Arg: 1, Filter: col(2)},
		{Func: AggArrayAgg, Arg: 1, Distinct: true, Filter: col(2)},
		{Func: AggArrayAgg, Arg: 1},
		{Func: AggCount, Arg: 1, Filter: col(2)},
	}}
	want := "[[1 [10 <nil> 10 <nil>] [10 <nil>] [10 <nil> 20 10 <nil> <nil>] 2] [3 <nil> <nil> [5] 0] [2 [<nil>] [<nil>] [30 <nil>] 0]]"
	wantSplit := "[[1 [10 <nil> 10 <nil>] [10 <nil> 20 10 <nil> <nil>] 2] [3 <nil> [5] 0] [2 [<nil>] [30 <nil>] 0]]"
	run := func(name string, build func(in Operator) (Operator, error), want string) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		r1, r2 := MakeRecord(t, mem, schema, rows[:4]), MakeRecord(t, mem, schema, rows[4:])
		src, err := NewBatchSourceWithSel(schema, []arrow.RecordBatch{r1, r2}, [][]int32{nil, {0, 1, 2, 3, 4}})
		r1.Release()
		r2.Release()
		if err != nil {
			t.Fatal(err)
		}
		op, err := build(src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := CollectRows(NewTestEnv(mem), op)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(out); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	run("single", func(in Operator) (Operator, error) { return NewHashAgg(in, spec) }, want)
	noDistinct := HashAggSpec{GroupCols: spec.GroupCols, Aggs: []AggSpec{spec.Aggs[0], spec.Aggs[2], spec.Aggs[3]}}
	p, f, err := SplitAgg(noDistinct)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Aggs {
		if a.Filter != nil {
			t.Fatalf("final phase keeps the filter: %+v", a)
		}
	}
	run("split", func(in Operator) (Operator, error) {
		pa, err := NewHashAgg(in, p)
		if err != nil {
			return nil, err
		}
		return NewHashAgg(pa, f)
	}, wantSplit)
}
