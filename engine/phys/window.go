package phys

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/nicflow/nicflow/engine/plan"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/internal/nferr"
)

var frameBounds = map[plan.FrameBoundKind]exec.BoundKind{
	plan.BoundUnboundedPreceding: exec.UnboundedPreceding, plan.BoundPreceding: exec.Preceding, plan.BoundCurrentRow: exec.CurrentRow,
	plan.BoundFollowing: exec.Following, plan.BoundUnboundedFollowing: exec.UnboundedFollowing,
}

func (pl *physPlanner) window(n *plan.WindowNode, need plan.ColSet) (*pnode, error) {
	inCols := plan.ColSetOf(n.Input.Columns())
	inNeed := plan.ColSet{}
	for id := range need {
		if inCols.Has(id) {
			inNeed.Add(id)
		}
	}
	for _, e := range plan.NodeExprs(n) {
		inNeed.AddAll(plan.ColsOf(e))
	}
	in, err := pl.plan(n.Input, inNeed)
	if err != nil {
		return nil, err
	}
	if in, err = pl.keepOnly(in, inNeed); err != nil {
		return nil, err
	}
	// Functions with the same PARTITION BY and ORDER BY share an operator.
	type group struct {
		key   string
		funcs []int
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, f := range n.Funcs {
		var b strings.Builder
		for _, p := range f.PartitionBy {
			b.WriteString(plan.ExprKey(p) + ";")
		}
		b.WriteString("|")
		for _, k := range f.OrderBy {
			fmt.Fprintf(&b, "%s %v %v;", plan.ExprKey(k.Expr), k.Desc, k.NullsFirst)
		}
		g := byKey[b.String()]
		if g == nil {
			g = &group{key: b.String()}
			byKey[g.key] = g
			groups = append(groups, g)
		}
		g.funcs = append(g.funcs, i)
	}
	// Parallel when every function partitions by the same key.
	samePart := len(n.Funcs[0].PartitionBy) > 0
	for _, f := range n.Funcs[1:] {
		samePart = samePart && len(f.PartitionBy) == len(n.Funcs[0].PartitionBy)
		for j := 0; samePart && j < len(f.PartitionBy); j++ {
			samePart = plan.ExprEqual(f.PartitionBy[j], n.Funcs[0].PartitionBy[j])
		}
	}
	if in.n.Streams > 1 {
		if samePart {
			var pos []int
			if in, pos, err = pl.ensure(in, n.Funcs[0].PartitionBy); err != nil {
				return nil, err
			}
			if in, err = pl.repartition(in, pos); err != nil {
				return nil, err
			}
		} else {
			in = pl.gather(in)
		}
	}
	est := pl.est.Rows(n)
	for _, g := range groups {
		f0 := n.Funcs[g.funcs[0]]
		var exprs []plan.Expr
		exprs = append(exprs, f0.PartitionBy...)
		for _, k := range f0.OrderBy {
			exprs = append(exprs, k.Expr)
		}
		for _, fi := range g.funcs {
			exprs = append(exprs, n.Funcs[fi].Args...)
		}
		var pos []int
		if in, pos, err = pl.ensure(in, exprs); err != nil {
			return nil, err
		}
		spec := &exec.WindowSpec{PartitionBy: pos[:len(f0.PartitionBy)]}
		k := len(f0.PartitionBy)
		for _, sk := range f0.OrderBy {
			key := exec.SortKey{Col: pos[k], Desc: sk.Desc, Nulls: exec.NullsLast}
			if sk.NullsFirst {
				key.Nulls = exec.NullsFirst
			}
			spec.OrderBy = append(spec.OrderBy, key)
			k++
		}
		layout := append([]plan.ColumnID(nil), in.layout...)
		for _, fi := range g.funcs {
			f := n.Funcs[fi]
			ws := exec.WindowFuncSpec{Func: exec.WindowFunc(f.Fn), Name: n.FuncCols[fi].Name, N: f.N, IgnoreNulls: f.IgnoreNulls}
			if len(f.Args) > 0 {
				ws.Arg = pos[k]
				k += len(f.Args)
			}
			if f.Frame != nil {
				var key arrow.DataType
				if len(f.OrderBy) == 1 {
					key = f.OrderBy[0].Expr.Type()
				}
				fr, err := windowFrame(f.Frame, key)
				if err != nil {
					return nil, err
				}
				ws.Frame = fr
			}
			spec.Funcs = append(spec.Funcs, ws)
			layout = append(layout, n.FuncCols[fi].ID)
		}
		if in, err = pl.node(&PhysNode{Kind: PhysWindow, Streams: in.n.Streams, Window: spec}, layout, est, in); err != nil {
			return nil, err
		}
	}
	if in, err = pl.dropSynth(in); err != nil {
		return nil, err
	}
	// Window results take the binder's types.
	var cols []plan.Column
	for _, id := range in.layout {
		for i, c := range n.FuncCols {
			if c.ID == id {
				cols = append(cols, n.FuncCols[i])
			}
		}
		for _, c := range n.Input.Columns() {
			if c.ID == id {
				cols = append(cols, c)
			}
		}
	}
	if len(cols) == len(in.layout) {
		return pl.castTo(in, cols)
	}
	return in, nil
}

func windowFrame(f *plan.WindowFrame, key arrow.DataType) (*exec.WindowFrame, error) {
	var mode exec.FrameMode
	switch f.Mode {
	case "rows":
		mode = exec.FrameRows
	case "range":
		mode = exec.FrameRange
	case "groups":
		mode = exec.FrameGroups
	default:
		return nil, nferr.Queryf("%s window frames are not supported (use ROWS, RANGE or GROUPS)", strings.ToUpper(f.Mode))
	}
	bound := func(k plan.FrameBoundKind, off plan.Expr) (exec.FrameBound, error) {
		b := exec.FrameBound{Kind: frameBounds[k]}
		if off == nil {
			return b, nil
		}
		c, ok := off.(*plan.Const)
		if !ok || c.IsNull() {
			return b, nferr.Queryf("window frame offset %s must be a constant", off)
		}
		if mode == exec.FrameRows || mode == exec.FrameGroups {
			if !plan.IsInteger(c.Typ) {
				return b, nferr.Queryf("window frame offset %s must be an integer constant", off)
			}
			b.Offset = plan.ConstInt(c)
			return b, nil
		}
		return rangeOffset(b, c, key)
	}
	s, err := bound(f.Start, f.StartOffset)
	if err != nil {
		return nil, err
	}
	e, err := bound(f.End, f.EndOffset)
	if err != nil {
		return nil, err
	}
	return &exec.WindowFrame{Mode: mode, Start: s, End: e, Exclude: exec.FrameExclusion(f.Exclude)}, nil
}

// rangeOffset puts a RANGE offset c in the units of the ORDER BY key: the
// key's own for numbers (unscaled for decimals), days for dates,
// microseconds for timestamps.
func rangeOffset(b exec.FrameBound, c *plan.Const, key arrow.DataType) (exec.FrameBound, error) {
	if key == nil {
		return b, nferr.Queryf("RANGE with an offset needs one ORDER BY key")
	}
	if iv, ok := c.Val.(arrow.MonthDayNanoInterval); ok {
		if iv.Months != 0 && !plan.IsDate(key) && key.ID() != arrow.TIMESTAMP {
			return b, nferr.Queryf("RANGE offsets in months need a date or timestamp ORDER BY key")
		}
		b.Months = iv.Months
		us := int64(iv.Days)*expr.UsPerDay + iv.Nanoseconds/1000
		if plan.IsDate(key) {
			us /= expr.UsPerDay
		}
		b.Offset = us
		return b, nil
	}
	switch {
	case plan.IsFloat(key):
		b.OffsetF = plan.ConstFloat(c)
	case plan.IsDecimal(key):
		_, s, _ := plan.DecimalPS(key)
		v, err := plan.CastConst(c, plan.DecimalType(38, s))
		if err != nil {
			return b, err
		}
		u, ok := v.Val.(decimal128.Num)
		if !ok || !u.BigInt().IsInt64() {
			return b, nferr.Queryf("RANGE offset %s is too large", plan.FormatConst(c))
		}
		b.Offset = u.BigInt().Int64()
	default: // integers, and days of a date
		if !plan.IsInteger(c.Typ) {
			f := plan.ConstFloat(c)
			if f != math.Trunc(f) {
				return b, nferr.Queryf("RANGE offset %s of an integer key must be an integer", plan.FormatConst(c))
			}
			b.Offset = int64(f)
			break
		}
		b.Offset = plan.ConstInt(c)
		if plan.IsTimestamp(key) {
			return b, nferr.Queryf("RANGE offset of a timestamp key must be an interval")
		}
	}
	return b, nil
}
