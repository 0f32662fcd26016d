package dist

import (
	"testing"

	"github.com/nicflow/nicflow/engine/phys"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/storage"
)

// TestConfident: which estimates count as well founded (D67), and what
// that does to robustChoice: with confident sides a broadcast or gathered
// build needs only a 4x margin, with a guessed side 100x; a repartitioned
// build is never robust (its histogram finds skew).
func TestConfident(t *testing.T) {
	cols := []phys.PhysColumn{{Name: "k", Type: expr.Type{ID: expr.TypeInt64}}, {Name: "s", Type: expr.Type{ID: expr.TypeString}}}
	scan := func(rows float64, f *storage.Predicate) *phys.PhysNode {
		return &phys.PhysNode{Kind: phys.PhysScan, EstRows: rows, Columns: cols, Scan: &phys.ScanOp{Spec: storage.ScanSpec{Table: "t", Filter: f}}}
	}
	colK := expr.Expr{Kind: expr.KindColumn, Index: 0, Name: "k"}
	colS := expr.Expr{Kind: expr.KindColumn, Index: 1, Name: "s"}
	lit := expr.Expr{Kind: expr.KindLiteral, Type: &expr.Type{ID: expr.TypeString}, Value: "x"}
	call := func(fn string, c expr.Expr) expr.Expr {
		return expr.Expr{Kind: expr.KindCall, Fn: fn, Args: []expr.Expr{c, lit}}
	}
	filter := func(e expr.Expr, in *phys.PhysNode) *phys.PhysNode {
		return &phys.PhysNode{Kind: phys.PhysFilter, EstRows: in.EstRows / 10, Columns: cols, Filter: &e, Inputs: []*phys.PhysNode{in}}
	}
	join := func(typ exec.JoinType, l, r *phys.PhysNode) *phys.PhysNode {
		return &phys.PhysNode{Kind: phys.PhysHashJoin, EstRows: l.EstRows, Columns: cols, Join: &exec.HashJoinSpec{Type: typ, LeftKeys: []int{0}, RightKeys: []int{0}}, Inputs: []*phys.PhysNode{l, r}}
	}
	ranged := storage.And(storage.Cmp("k", storage.OpGe, storage.Int(1)), storage.Between("k", storage.Int(1), storage.Int(9)), storage.In("k", storage.Int(3)))
	twoCols := storage.And(storage.Cmp("a", storage.OpEq, storage.Int(3)), storage.Cmp("b", storage.OpEq, storage.Int(3)))
	for _, c := range []struct {
		name string
		n    *phys.PhysNode
		want bool
	}{
		{"bare scan", scan(1000, nil), true},
		{"ranges and IN list on one column", scan(1000, ranged), true},
		{"two columns (correlation unknown)", scan(1000, twoCols), false},
		{"prefix (LIKE 'x%')", scan(1000, storage.Prefix("s", "x")), false},
		{"OR", scan(1000, storage.Or(storage.Cmp("k", storage.OpEq, storage.Int(1)), storage.Cmp("k", storage.OpEq, storage.Int(2)))), false},
		{"filter s = 'x'", filter(call(expr.FnEq, colS), scan(1000, nil)), true},
		{"filter k = 'x' AND s = 'x'", filter(expr.Expr{Kind: expr.KindCall, Fn: expr.FnAnd, Args: []expr.Expr{call(expr.FnEq, colK), call(expr.FnEq, colS)}}, scan(1000, nil)), false},
		{"filter s LIKE 'x'", filter(call(expr.FnLike, colS), scan(1000, nil)), false},
		{"inner join", join(exec.JoinInner, scan(1000, nil), filter(call(expr.FnEq, colS), scan(10, ranged))), true},
		{"inner join over a guess", join(exec.JoinInner, scan(1000, nil), filter(call(expr.FnLike, colS), scan(10, nil))), false},
		{"semi join", join(exec.JoinSemi, scan(1000, nil), scan(10, nil)), false},
		{"aggregate", &phys.PhysNode{Kind: phys.PhysHashAgg, EstRows: 10, Columns: cols, Inputs: []*phys.PhysNode{scan(1000, nil)}}, false},
	} {
		if got := confident(c.n); got != c.want {
			t.Errorf("%s: confident %v, want %v", c.name, got, c.want)
		}
	}

	// Rows of equal width on both sides: a build is broadcast while 3
	// copies of it are at most the probe's 1M rows.
	o := DistOptions{Workers: 4, BroadcastFactor: 1, AdaptiveMargin: 100}
	probe := scan(1_000_000, ranged)
	if !robustChoice(exec.ExchangeBroadcast, scan(50_000, ranged), probe, o) {
		t.Error("a confident broadcast build with room for 4x is not robust")
	}
	if robustChoice(exec.ExchangeBroadcast, scan(100_000, ranged), probe, o) {
		t.Error("a confident broadcast build without room for 4x counts as robust")
	}
	if robustChoice(exec.ExchangeBroadcast, filter(call(expr.FnLike, colS), scan(500_000, nil)), probe, o) {
		t.Error("a guessed broadcast build without room for 100x counts as robust")
	}
	if robustChoice(exec.ExchangeHash, scan(20_000_000, ranged), probe, o) {
		t.Error("a repartitioned build counts as robust")
	}
}
