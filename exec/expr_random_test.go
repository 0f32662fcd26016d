package exec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Random expression trees checked against the reference interpreter, run
// through the operator harness (every batch size, layout, NULL injection).

var randSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "j", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "m", Type: &arrow.Decimal64Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 25, Scale: 4}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: false},
}, nil)

type exprGen struct {
	r *rand.Rand
}

func (g *exprGen) pick(n int) int { return g.r.IntN(n) }

func (g *exprGen) col(i int) expr.Expr { return expr.Col(i, randSchema.Field(i).Name) }

// Integers stay small so that trees of depth 3 never overflow int32.
func (g *exprGen) intExpr(d int) expr.Expr {
	if d <= 0 {
		switch g.pick(4) {
		case 0:
			return g.col(0)
		case 1:
			return g.col(1)
		case 2:
			return g.col(8)
		}
		return expr.LitInt32(int32(g.r.IntN(21) - 10))
	}
	switch g.pick(10) {
	case 0:
		return expr.Add(g.intExpr(d-1), g.intExpr(d-1))
	case 1:
		return expr.Sub(g.intExpr(d-1), g.intExpr(d-1))
	case 2:
		return expr.Mul(g.intExpr(0), g.intExpr(0))
	case 3:
		x := g.intExpr(0)
		return expr.Case([]expr.Expr{expr.Ne(x, expr.LitInt32(0))}, []expr.Expr{expr.Div(g.intExpr(d-1), x)}, nil)
	case 4:
		return expr.Mod(g.intExpr(d-1), expr.LitInt32(int32(g.r.IntN(9)+1)))
	case 5:
		return expr.Neg(g.intExpr(d - 1))
	case 6:
		return expr.Abs(g.intExpr(d - 1))
	case 7:
		return expr.Coalesce(g.intExpr(d-1), g.intExpr(d-1))
	case 8:
		return expr.Length(g.strExpr(d - 1))
	}
	return expr.Extract(expr.ExtractFields[g.pick(len(expr.ExtractFields))], g.dateExpr(d-1))
}

func (g *exprGen) decExpr(d int) expr.Expr {
	if d <= 0 {
		switch g.pick(3) {
		case 0:
			return g.col(3)
		case 1:
			return g.col(4)
		}
		return expr.LitDecimal(int64(g.r.IntN(2001)-1000), 5, 2)
	}
	switch g.pick(9) {
	case 0:
		return expr.Add(g.decExpr(d-1), g.numExpr(d-1))
	case 1:
		return expr.Sub(g.numExpr(d-1), g.decExpr(d-1))
	case 2:
		return expr.Mul(g.decExpr(d-1), g.decExpr(0))
	case 3:
		x := g.decExpr(0)
		return expr.Case([]expr.Expr{expr.Ne(x, expr.LitInt32(0))}, []expr.Expr{expr.Div(g.decExpr(d-1), x)}, nil)
	case 4:
		return expr.Round(g.decExpr(d-1), int32(g.r.IntN(5)-1))
	case 5:
		return expr.Neg(g.decExpr(d - 1))
	case 6:
		return expr.Case([]expr.Expr{g.boolExpr(d - 1)}, []expr.Expr{g.decExpr(d - 1)}, ptr(g.numExpr(d-1)))
	case 7:
		x := g.decExpr(0)
		return expr.Case([]expr.Expr{expr.Ne(x, expr.LitInt32(0))}, []expr.Expr{expr.Mod(g.decExpr(d-1), x)}, nil)
	}
	return expr.Abs(g.decExpr(d - 1))
}

func ptr(e expr.Expr) *expr.Expr { return &e }

func (g *exprGen) floatExpr(d int) expr.Expr {
	if d <= 0 {
		if g.pick(2) == 0 {
			return g.col(2)
		}
		return expr.LitFloat64(float64(g.r.IntN(41)-20) / 4)
	}
	switch g.pick(5) {
	case 0:
		return expr.Add(g.floatExpr(d-1), g.numExpr(d-1))
	case 1:
		return expr.Mul(g.numExpr(d-1), g.floatExpr(d-1))
	case 2:
		return expr.Cast(g.decExpr(d-1), expr.Float64Type)
	case 3:
		x := g.floatExpr(0)
		return expr.Case([]expr.Expr{expr.Ne(x, expr.LitFloat64(0))}, []expr.Expr{expr.Div(g.numExpr(d-1), x)}, nil)
	}
	return expr.Sub(g.floatExpr(d-1), g.floatExpr(d-1))
}

func (g *exprGen) numExpr(d int) expr.Expr {
	switch g.pick(3) {
	case 0:
		return g.intExpr(d)
	case 1:
		return g.decExpr(d)
	}
	return g.floatExpr(d)
}

var likePatterns = []string{"%", "a%", "%b", "%a%", "a%b", "_", "__%", "%_x%", "a_c", "%é%", "日%", "%z%Z%", "", "%\\%%", "a%%b"}

func (g *exprGen) strExpr(d int) expr.Expr {
	if d <= 0 {
		if g.pick(3) > 0 {
			return g.col(6)
		}
		return expr.LitString([]string{"", "abc", "aé日", "  x  "}[g.pick(4)])
	}
	switch g.pick(8) {
	case 0:
		return expr.Upper(g.strExpr(d - 1))
	case 1:
		return expr.Lower(g.strExpr(d - 1))
	case 2:
		return expr.Trim(g.strExpr(d - 1))
	case 3:
		l := g.intExpr(0)
		return expr.Substring(g.strExpr(d-1), expr.LitInt32(int32(g.r.IntN(6)-1)), ptr(expr.Abs(expr.Mod(l, expr.LitInt32(5)))))
	case 4:
		return expr.Concat(g.strExpr(d-1), g.strExpr(d-1))
	case 5:
		return expr.Case([]expr.Expr{g.boolExpr(d - 1)}, []expr.Expr{g.strExpr(d - 1)}, ptr(g.strExpr(d-1)))
	case 6:
		return expr.RTrim(g.strExpr(d - 1))
	}
	return expr.Substring(g.strExpr(d-1), expr.LitInt32(int32(g.r.IntN(4))), nil)
}

func (g *exprGen) dateExpr(d int) expr.Expr {
	if d <= 0 {
		if g.pick(3) > 0 {
			return g.col(7)
		}
		return expr.LitDate(int32(10957 + g.r.IntN(400)))
	}
	switch g.pick(4) {
	case 0:
		return expr.Add(g.dateExpr(d-1), expr.LitInterval(int32(g.r.IntN(30)-15), int32(g.r.IntN(10)), 0))
	case 1:
		return expr.Sub(g.dateExpr(d-1), expr.LitInterval(int32(g.r.IntN(30)), 0, 0))
	case 2:
		return expr.Add(g.dateExpr(d-1), g.intExpr(0))
	}
	return expr.Coalesce(g.dateExpr(d-1), g.dateExpr(d-1))
}

func (g *exprGen) boolExpr(d int) expr.Expr {
	if d <= 0 {
		switch g.pick(4) {
		case 0:
			return g.col(5)
		case 1:
			return expr.LitBool(g.pick(2) == 0)
		case 2:
			return expr.LitNull(expr.NullType)
		}
		return expr.IsNull(g.col(g.pick(9)))
	}
	cmps := []func(a, b expr.Expr) expr.Expr{expr.Eq, expr.Ne, expr.Lt, expr.Le, expr.Gt, expr.Ge, expr.IsDistinctFrom, expr.IsNotDistinctFrom}
	cmp := cmps[g.pick(len(cmps))]
	switch g.pick(13) {
	case 0:
		return cmp(g.numExpr(d-1), g.numExpr(d-1))
	case 1:
		return cmp(g.intExpr(d-1), expr.LitInt32(int32(g.r.IntN(21)-10)))
	case 2:
		return cmp(g.strExpr(d-1), g.strExpr(d-1))
	case 3:
		return cmp(g.dateExpr(d-1), g.dateExpr(d-1))
	case 4:
		return expr.And(g.boolExpr(d-1), g.boolExpr(d-1), g.boolExpr(d-1))
	case 5:
		return expr.Or(g.boolExpr(d-1), g.boolExpr(d-1))
	case 6:
		return expr.Not(g.boolExpr(d - 1))
	case 7:
		return expr.Like(g.strExpr(d-1), likePatterns[g.pick(len(likePatterns))])
	case 8:
		return expr.NotLike(g.strExpr(d-1), likePatterns[g.pick(len(likePatterns))])
	case 9:
		list := []expr.Expr{}
		for k := g.pick(20) + 1; k > 0; k-- {
			list = append(list, expr.LitInt32(int32(g.r.IntN(41)-20)))
		}
		if g.pick(4) == 0 {
			list = append(list, expr.LitNull(expr.NullType))
		}
		if g.pick(2) == 0 {
			return expr.NotIn(g.intExpr(d-1), list...)
		}
		return expr.In(g.intExpr(d-1), list...)
	case 10:
		return expr.In(g.strExpr(d-1), expr.LitString("abc"), expr.LitString(""), g.strExpr(0))
	case 11:
		return cmp(g.col(3), expr.LitDecimal(int64(g.r.IntN(600)-300), 5, 2))
	}
	return expr.Between(g.decExpr(d-1), g.numExpr(0), g.numExpr(0))
}

func randomInput(r *rand.Rand, n int) [][]any {
	return RandomRows(r, randSchema, n, GenOpts{NullProb: 0.1, Range: 300, StrLen: 5})
}

func exprIters(def int) int {
	if s := os.Getenv("NICFLOW_EXPR_ITERS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	if testing.Short() {
		return def / 4
	}
	return def
}

func TestExprRandomProject(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	ref := newRef(randSchema)
	iters := exprIters(80)
	for it := 0; it < iters; it++ {
		g := &exprGen{r: r}
		var e expr.Expr
		switch it % 6 {
		case 0:
			e = g.intExpr(3)
		case 1:
			e = g.decExpr(3)
		case 2:
			e = g.floatExpr(2)
		case 3:
			e = g.strExpr(2)
		case 4:
			e = g.dateExpr(2)
		default:
			e = g.boolExpr(3)
		}
		rows := randomInput(r, 40+r.IntN(200))
		name := fmt.Sprintf("project/%d/%s", it, e)
		RunOpTest(t, OpTest{
			Name:       name,
			Inputs:     []HarnessInput{{Schema: randSchema, Rows: rows}},
			BatchSizes: []int{1, 7, 1024},
			Build: func(in []Operator) (Operator, error) {
				return NewProject(in[0], []expr.Expr{e, expr.Col(8, "k")}, nil)
			},
			Ref: func(in [][][]any) ([][]any, error) {
				var out [][]any
				for _, row := range in[0] {
					v, err := ref.eval(e, row)
					if err != nil {
						return nil, err
					}
					out = append(out, []any{v, row[8]})
				}
				return out, nil
			},
			Ordered: true,
		})
	}
}

func TestExprRandomFilter(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	ref := newRef(randSchema)
	iters := exprIters(80)
	for it := 0; it < iters; it++ {
		g := &exprGen{r: r}
		e := g.boolExpr(3)
		rows := randomInput(r, 40+r.IntN(200))
		RunOpTest(t, OpTest{
			Name:       fmt.Sprintf("filter/%d/%s", it, e),
			Inputs:     []HarnessInput{{Schema: randSchema, Rows: rows}},
			BatchSizes: []int{1, 7, 1024},
			Build:      func(in []Operator) (Operator, error) { return NewFilter(in[0], e) },
			Ref: func(in [][][]any) ([][]any, error) {
				var out [][]any
				for _, row := range in[0] {
					v, err := ref.eval(e, row)
					if err != nil {
						return nil, err
					}
					if v == true {
						out = append(out, row)
					}
				}
				return out, nil
			},
			Ordered: true,
		})
	}
}

// TestExprJSONRoundTrip: every random tree survives the wire form and
// prints the same.
func TestExprJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for it := 0; it < 200; it++ {
		g := &exprGen{r: r}
		es := []expr.Expr{g.boolExpr(3), g.decExpr(3), g.strExpr(2), g.dateExpr(2)}
		b, err := expr.MarshalExprs(es)
		if err != nil {
			t.Fatal(err)
		}
		back, err := expr.UnmarshalExprs(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range es {
			if es[i].String() != back[i].String() {
				t.Fatalf("round trip changed %s into %s", es[i], back[i])
			}
			if _, err := expr.CompileExpr(back[i], randSchema); err != nil {
				t.Fatalf("%s: %v", back[i], err)
			}
		}
	}
	if _, err := expr.UnmarshalExprs([]byte("{not json")); !nferr.Is(err, nferr.KindData) {
		t.Fatalf("bad JSON: got %v, want KindData", err)
	}
}
