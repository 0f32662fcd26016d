package exec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/nicflow/nicflow/storage"
)

// keyFilterProbe stands for a scan applying a join key filter: it drops
// the rows of its input whose column col the filter rejects.
type keyFilterProbe struct {
	in      Operator
	col     int
	f       *storage.KeyFilter
	out     Batch
	sel     []int32
	dropped *int
}

func (p *keyFilterProbe) Schema() *arrow.Schema { return p.in.Schema() }
func (p *keyFilterProbe) Open(env *Env) error   { return p.in.Open(env) }
func (p *keyFilterProbe) Close() error          { return p.in.Close() }
func (p *keyFilterProbe) Next() (*Batch, error) {
	for {
		b, err := p.in.Next()
		if err != nil || b == nil {
			return b, err
		}
		if cap(p.sel) < b.N {
			p.sel = make([]int32, b.N)
		}
		kept, ok := p.f.FilterArray(b.Cols[p.col], b.Sel, p.sel[:b.N])
		if !ok {
			return b, nil // not published yet
		}
		*p.dropped += b.Len() - len(kept)
		if len(kept) == 0 {
			continue
		}
		p.sel = kept
		p.out = Batch{Cols: b.Cols, N: b.N, Sel: p.sel}
		return &p.out, nil
	}
}

// Every join whose probe drops unmatched rows gives the same answer when
// a filter its build published drops probe rows first: integer and
// string keys, NULL keys on both sides, residuals, shared builds, and
// builds that spill (which disable the filter).
func TestJoinKeyFilters(t *testing.T) {
	l, r := joinInputs(11, 1200, 150, 900)
	for _, typ := range []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinSemi, JoinAnti, JoinMark} {
		for _, build := range []JoinSide{SideRight, SideLeft} {
			for _, keyCol := range []int{0, 1} {
				for _, mode := range []string{"own", "shared", "spill"} {
					spec := HashJoinSpec{Type: typ, LeftKeys: []int{keyCol}, RightKeys: []int{keyCol}, Build: build}
					if mode == "own" && typ == JoinInner {
						e := testResidual
						spec.Residual = &e
					}
					if !spec.ProbeDropsUnmatched() {
						continue
					}
					name := fmt.Sprintf("%s/build=%s/key=%d/%s", typ, build, keyCol, mode)
					t.Run(name, func(t *testing.T) {
						dropped := 0
						var filters []*storage.KeyFilter
						ot := OpTest{
							Name:            name,
							Inputs:          []HarnessInput{{Schema: joinLeftSchema, Rows: l}, {Schema: joinRightSchema, Rows: r}},
							BatchSizes:      []int{7, 1024},
							NoNullInjection: spec.Residual != nil,
							Build: func(in []Operator) (Operator, error) {
								f := storage.NewKeyFilter("k")
								filters = append(filters, f)
								p := 0
								if build == SideLeft {
									p = 1
								}
								in[p] = &keyFilterProbe{in: in[p], col: keyCol, f: f, dropped: &dropped}
								var j Operator
								if mode == "shared" {
									probe, b := in[0], in[1]
									if build == SideLeft {
										probe, b = in[1], in[0]
									}
									ops, err := NewParallelHashJoin([]Operator{probe}, []Operator{b}, spec)
									if err != nil {
										return nil, err
									}
									SetKeyFilters(ops, []JoinKeyFilter{{Key: 0, Filter: f}})
									return ops[0], nil
								}
								h, err := NewHashJoin(in[0], in[1], spec)
								if err != nil {
									return nil, err
								}
								SetKeyFilters([]Operator{h}, []JoinKeyFilter{{Key: 0, Filter: f}})
								j = h
								return j, nil
							},
							Ref: func(in [][][]any) ([][]any, error) { return refHashJoin(in[0], in[1], spec), nil },
						}
						if mode == "spill" {
							ot.Budget, ot.Spill = 40<<10, true
						}
						RunOpTest(t, ot)
						published := 0
						for _, f := range filters {
							if f.Stats().Ready {
								published++
							}
						}
						switch {
						case mode != "spill" && (published == 0 || dropped == 0):
							t.Errorf("%d of %d filters published, %d probe rows dropped", published, len(filters), dropped)
						case mode == "spill" && published == len(filters):
							t.Errorf("every build published its filter although the budget forces spilling")
						}
					})
				}
			}
		}
	}
}

func TestProbeDropsUnmatched(t *testing.T) {
	want := map[string]bool{
		"inner/right": true, "inner/left": true, "semi/right": true, "semi/left": true,
		"anti/right": false, "anti/left": true, "mark/right": false, "mark/left": true,
		"left/right": false, "left/left": true, "right/right": true, "right/left": false,
		"full/right": false, "full/left": false,
	}
	for k, w := range want {
		var typ, side string
		fmt.Sscanf(k, "%s", &typ)
		for i := range k {
			if k[i] == '/' {
				typ, side = k[:i], k[i+1:]
			}
		}
		spec := HashJoinSpec{Type: JoinType(typ), Build: JoinSide(side)}
		if got := spec.ProbeDropsUnmatched(); got != w {
			t.Errorf("%s: ProbeDropsUnmatched %v, want %v", k, got, w)
		}
	}
	if (HashJoinSpec{Type: JoinAnti, Build: SideLeft, NullAware: true}).ProbeDropsUnmatched() {
		t.Error("a null-aware join drops unmatched probe rows")
	}
}
