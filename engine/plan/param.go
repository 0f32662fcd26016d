package plan

import "github.com/apache/arrow-go/v18/arrow"

// ParamSlot is statement parameter $N while a statement is described
// (the PostgreSQL extended protocol's Describe, a Flight SQL prepared
// statement): the binder stands an untyped NULL constant in for the
// parameter (Const.Param), which flows through the binder as an untyped
// string literal does, and the first type its context resolves it to
// (ResolveUntyped, CastConstIn, CoerceIn: the other operand of a
// comparison or arithmetic, a cast, LIMIT, LIKE, an INSERT's target
// column...) is the parameter's type. A parameter no context types
// stays nil: the caller describes it as text.
type ParamSlot struct {
	N    int
	Type arrow.DataType
}

// ParamConst is the constant that stands for parameter s while binding.
func ParamConst(s *ParamSlot) *Const {
	return &Const{Typ: TypString, Untyped: true, Param: s}
}

// resolve records t as the parameter's type (if it has none yet) and
// returns a NULL of t, the value the parameter has while described.
func (s *ParamSlot) resolve(t arrow.DataType) *Const {
	if t == nil || IsNullType(t) {
		t = TypString
	}
	if s.Type == nil {
		s.Type = t
	}
	return NullConst(t)
}
