package plan

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/nicflow/nicflow/exec/expr"
)

// EvalCall evaluates a call over constant arguments. It returns nil (and
// no error) for functions it does not evaluate at plan time.
func EvalCall(c *Call) (*Const, error) {
	args := make([]*Const, len(c.Args))
	anyNull := false
	for i, a := range c.Args {
		k, ok := a.(*Const)
		if !ok {
			return nil, nil
		}
		args[i] = k
		anyNull = anyNull || k.IsNull()
	}
	switch c.Fn {
	case FnAnd, FnOr:
		res := c.Fn == FnAnd // the neutral value
		null := false
		for _, a := range args {
			if a.IsNull() {
				null = true
				continue
			}
			if a.Val.(bool) != res {
				return BoolConst(!res), nil
			}
		}
		if null {
			return NullConst(TypBool), nil
		}
		return BoolConst(res), nil
	case FnNot:
		if anyNull {
			return NullConst(TypBool), nil
		}
		return BoolConst(!args[0].Val.(bool)), nil
	case FnIsNull:
		return BoolConst(args[0].IsNull()), nil
	case FnNotNull:
		return BoolConst(!args[0].IsNull()), nil
	case FnDistinct, FnNotDist:
		a, b := args[0], args[1]
		var same bool
		switch {
		case a.IsNull() || b.IsNull():
			same = a.IsNull() && b.IsNull()
		default:
			cmp, ok := CompareConst(a, b)
			if !ok {
				return nil, nil
			}
			same = cmp == 0
		}
		return BoolConst(same == (c.Fn == FnNotDist)), nil
	case FnCoalesce:
		for _, a := range args {
			if !a.IsNull() {
				return CastConst(a, c.Typ)
			}
		}
		return NullConst(c.Typ), nil
	case FnIn:
		if args[0].IsNull() {
			return NullConst(TypBool), nil
		}
		null := false
		for _, v := range args[1:] {
			if v.IsNull() {
				null = true
				continue
			}
			if cmp, ok := CompareConst(args[0], v); !ok {
				return nil, nil
			} else if cmp == 0 {
				return BoolConst(true), nil
			}
		}
		if null {
			return NullConst(TypBool), nil
		}
		return BoolConst(false), nil
	case "nullif":
		// NULLIF(a, b) is a unless a = b: NULL only when a is.
		a, b := args[0], args[1]
		if a.IsNull() || b.IsNull() {
			return CastConst(a, c.Typ)
		}
		cmp, ok := CompareConst(a, b)
		if !ok {
			return nil, nil
		}
		if cmp == 0 {
			return NullConst(c.Typ), nil
		}
		return CastConst(a, c.Typ)
	case "greatest", "least":
		// Not strict (NULLs are skipped): exec folds them.
		return nil, nil
	case expr.FnArray, expr.FnArrayToString, expr.FnStringToArray, expr.FnArrayPosition, expr.FnArrayAny, expr.FnArrayAll, expr.FnIntSeries, expr.FnArrayCat:
		// Not strict (ARRAY[NULL] is {NULL}), and arrays are not plan
		// constants: exec folds them.
		return nil, nil
	}
	if IsArray(c.Typ) {
		return nil, nil
	}
	if anyNull {
		return NullConst(c.Typ), nil
	}
	if c.Zone != "" {
		if v, done, err := evalZoned(c, args); done {
			return v, err
		}
	}
	switch c.Fn {
	case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe:
		cmp, ok := CompareConst(args[0], args[1])
		if !ok {
			return nil, nil
		}
		var r bool
		switch c.Fn {
		case FnEq:
			r = cmp == 0
		case FnNe:
			r = cmp != 0
		case FnLt:
			r = cmp < 0
		case FnLe:
			r = cmp <= 0
		case FnGt:
			r = cmp > 0
		case FnGe:
			r = cmp >= 0
		}
		return BoolConst(r), nil
	case FnNeg:
		return evalNeg(args[0])
	case FnAdd, FnSub, FnMul, FnDiv, FnMod:
		return EvalArith(c.Fn, args[0], args[1], c.Typ)
	case FnConcat:
		if x, ok := args[0].Val.(Bytea); ok {
			y, ok := args[1].Val.(Bytea)
			if !ok {
				return nil, nil
			}
			return &Const{Typ: TypBinary, Val: x + y}, nil
		}
		x, ok1 := args[0].Val.(string)
		y, ok2 := args[1].Val.(string)
		if !ok1 || !ok2 {
			return nil, nil
		}
		return &Const{Typ: TypString, Val: x + y}, nil
	case expr.FnGcd, expr.FnLcm:
		// Over INTEGER or BIGINT (the binder makes both one type); a
		// result out of range is left to the kernel, which fails.
		if anyNull {
			return NullConst(c.Typ), nil
		}
		for _, a := range args {
			if _, ok := a.Val.(int32); !ok && a.Typ.ID() != arrow.INT64 {
				return nil, nil
			}
		}
		r, ovf := expr.GcdLcm(ConstInt(args[0]), ConstInt(args[1]), c.Fn == expr.FnLcm)
		switch {
		case ovf:
			return nil, nil
		case c.Typ.ID() == arrow.INT64:
			return &Const{Typ: TypInt64, Val: r}, nil
		case c.Typ.ID() == arrow.INT32 && r <= math.MaxInt32:
			return &Const{Typ: TypInt32, Val: int32(r)}, nil
		}
		return nil, nil
	case "upper":
		return &Const{Typ: TypString, Val: strings.ToUpper(args[0].Val.(string))}, nil
	case FnLower:
		return &Const{Typ: TypString, Val: strings.ToLower(args[0].Val.(string))}, nil
	case "length":
		if b, ok := args[0].Val.(Bytea); ok {
			return &Const{Typ: TypInt32, Val: int32(len(b))}, nil
		}
		return &Const{Typ: TypInt32, Val: int32(utf8.RuneCountInString(args[0].Val.(string)))}, nil
	case FnExtract:
		switch v := args[1].Val.(type) {
		case arrow.Date32:
			return extractConst(args[0].Val.(string), v)
		case arrow.Timestamp:
			field := args[0].Val.(string)
			if field == "epoch" {
				return &Const{Typ: TypFloat64, Val: expr.ExtractEpoch(int64(v))}, nil
			}
			x, ok := expr.ExtractTimestamp(field, int64(v))
			if !ok {
				return nil, nil
			}
			return &Const{Typ: TypInt64, Val: x}, nil
		case arrow.Time64:
			field := args[0].Val.(string)
			if field == "epoch" {
				return &Const{Typ: TypFloat64, Val: expr.ExtractEpoch(int64(v))}, nil
			}
			x, ok := expr.ExtractTime(field, int64(v))
			if !ok {
				return nil, nil
			}
			return &Const{Typ: TypInt64, Val: x}, nil
		case arrow.MonthDayNanoInterval:
			field := args[0].Val.(string)
			if field == "epoch" {
				return &Const{Typ: TypFloat64, Val: expr.IntervalEpoch(v)}, nil
			}
			x, ok := expr.ExtractInterval(field, v)
			if !ok {
				return nil, nil
			}
			return &Const{Typ: TypInt64, Val: x}, nil
		}
		return nil, nil
	case expr.FnDateTrunc:
		if v, ok := args[1].Val.(arrow.Time64); ok {
			r, ok := expr.TruncTime(args[0].Val.(string), int64(v))
			if !ok {
				return nil, nil
			}
			return &Const{Typ: c.Typ, Val: arrow.Time64(r)}, nil
		}
		v, ok := args[1].Val.(arrow.Timestamp)
		if !ok {
			return nil, nil
		}
		r, ok := expr.TruncTimestamp(args[0].Val.(string), int64(v))
		if !ok || r < expr.MinTimestamp {
			return nil, nil
		}
		return &Const{Typ: c.Typ, Val: arrow.Timestamp(r)}, nil
	case FnLike:
		if len(args) != 2 {
			return nil, nil
		}
		return BoolConst(likeMatch(args[0].Val.(string), args[1].Val.(string))), nil
	}
	return nil, nil
}

// CompareConst compares two non-NULL constants of comparable types.
func CompareConst(a, b *Const) (int, bool) {
	switch av := a.Val.(type) {
	case string:
		bv, ok := b.Val.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(av, bv), true
	case Bytea:
		bv, ok := b.Val.(Bytea)
		if !ok {
			return 0, false
		}
		return strings.Compare(string(av), string(bv)), true
	case bool:
		bv, ok := b.Val.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case av == bv:
			return 0, true
		case !av:
			return -1, true
		}
		return 1, true
	case arrow.Date32:
		bv, ok := b.Val.(arrow.Date32)
		if !ok {
			return 0, false
		}
		return cmpOrdered(av, bv), true
	case arrow.Timestamp:
		bv, ok := b.Val.(arrow.Timestamp)
		if !ok {
			return 0, false
		}
		return cmpOrdered(av, bv), true
	case arrow.Time64:
		bv, ok := b.Val.(arrow.Time64)
		if !ok {
			return 0, false
		}
		return cmpOrdered(av, bv), true
	case arrow.MonthDayNanoInterval:
		bv, ok := b.Val.(arrow.MonthDayNanoInterval)
		if !ok {
			return 0, false
		}
		return expr.IntervalSpan(av).Cmp(expr.IntervalSpan(bv)), true
	}
	if !IsNumeric(a.Typ) || !IsNumeric(b.Typ) {
		return 0, false
	}
	if IsFloat(a.Typ) || IsFloat(b.Typ) {
		x, y := ConstFloat(a), ConstFloat(b)
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	ua, sa, _ := unscaled(a)
	ub, sb, _ := unscaled(b)
	s := max(sa, sb)
	return rescale(ua, sa, s).Cmp(rescale(ub, sb, s)), true
}

func evalNeg(a *Const) (*Const, error) {
	switch v := a.Val.(type) {
	case int32:
		if v == math.MinInt32 {
			return nil, fmt.Errorf("integer out of range")
		}
		return &Const{Typ: a.Typ, Val: -v}, nil
	case float64:
		return &Const{Typ: a.Typ, Val: -v}, nil
	case arrow.MonthDayNanoInterval:
		return &Const{Typ: a.Typ, Val: arrow.MonthDayNanoInterval{Months: -v.Months, Days: -v.Days, Nanoseconds: -v.Nanoseconds}}, nil
	}
	if IsInteger(a.Typ) {
		v := a.Val.(int64)
		if v == math.MinInt64 {
			return nil, fmt.Errorf("bigint out of range")
		}
		return &Const{Typ: a.Typ, Val: -v}, nil
	}
	u, _, ok := unscaled(a)
	if !ok {
		return nil, nil
	}
	return bigToConst(new(big.Int).Neg(u), a.Typ)
}

func cmpOrdered[T int32 | int64 | arrow.Date32 | arrow.Timestamp | arrow.Time64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func EvalArith(fn string, a, b *Const, t arrow.DataType) (*Const, error) {
	if IsTime(a.Typ) || IsTime(b.Typ) {
		return evalTimeArith(fn, a, b)
	}
	if IsTimestamp(a.Typ) || IsTimestamp(b.Typ) || IsTimestamp(t) {
		return evalTimestampArith(fn, a, b, t)
	}
	if IsDate(t) {
		return evalDateArith(fn, a, b)
	}
	if IsInterval(t) && (fn == FnMul || fn == FnDiv) {
		iv, n := a, b
		if IsInterval(b.Typ) {
			iv, n = b, a
		}
		f := ConstFloat(n)
		if fn == FnDiv {
			if f == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			f = 1 / f
		}
		r, ok := expr.ScaleInterval(iv.Val.(arrow.MonthDayNanoInterval), f)
		if !ok {
			return nil, fmt.Errorf("interval out of range")
		}
		return &Const{Typ: t, Val: r}, nil
	}
	if IsInterval(t) {
		x, y := a.Val.(arrow.MonthDayNanoInterval), b.Val.(arrow.MonthDayNanoInterval)
		if fn == FnSub {
			y = arrow.MonthDayNanoInterval{Months: -y.Months, Days: -y.Days, Nanoseconds: -y.Nanoseconds}
		}
		return &Const{Typ: t, Val: arrow.MonthDayNanoInterval{Months: x.Months + y.Months, Days: x.Days + y.Days, Nanoseconds: x.Nanoseconds + y.Nanoseconds}}, nil
	}
	if da, ok := a.Val.(arrow.Date32); ok {
		// date - date: days
		db := b.Val.(arrow.Date32)
		return &Const{Typ: TypInt32, Val: int32(da - db)}, nil
	}
	if IsFloat(t) {
		x, y := ConstFloat(a), ConstFloat(b)
		var r float64
		switch fn {
		case FnAdd:
			r = x + y
		case FnSub:
			r = x - y
		case FnMul:
			r = x * y
		case FnDiv:
			if y == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			r = x / y
		case FnMod:
			if y == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			r = math.Mod(x, y)
		}
		return &Const{Typ: t, Val: r}, nil
	}
	ua, sa, ok1 := unscaled(a)
	ub, sb, ok2 := unscaled(b)
	if !ok1 || !ok2 {
		return nil, nil
	}
	_, st, _ := DecimalPS(t)
	if IsInteger(t) {
		st = 0
	}
	var r *big.Int
	switch fn {
	case FnAdd:
		r = new(big.Int).Add(rescale(ua, sa, st), rescale(ub, sb, st))
	case FnSub:
		r = new(big.Int).Sub(rescale(ua, sa, st), rescale(ub, sb, st))
	case FnMul:
		r = rescale(new(big.Int).Mul(ua, ub), sa+sb, st)
	case FnDiv, FnMod:
		if ub.Sign() == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		if fn == FnMod {
			s := max(sa, sb)
			r = new(big.Int).Rem(rescale(ua, sa, s), rescale(ub, sb, s))
			r = rescale(r, s, st)
			break
		}
		if IsInteger(t) {
			r = new(big.Int).Quo(ua, ub) // truncates, as PostgreSQL
			break
		}
		// a/b at scale st: (ua * 10^(st+sb-sa)) / ub, rounded.
		num := new(big.Int).Set(ua)
		if k := st + sb - sa; k >= 0 {
			num.Mul(num, new(big.Int).Exp(bigTen, big.NewInt(int64(k)), nil))
			r = divRound(num, ub)
		} else {
			den := new(big.Int).Mul(ub, new(big.Int).Exp(bigTen, big.NewInt(int64(-k)), nil))
			r = divRound(num, den)
		}
	}
	if IsInteger(t) {
		if !r.IsInt64() || (t.ID() == arrow.INT32 && (r.Int64() < math.MinInt32 || r.Int64() > math.MaxInt32)) {
			return nil, fmt.Errorf("%s out of range", TypeString(t))
		}
		if t.ID() == arrow.INT32 {
			return &Const{Typ: t, Val: int32(r.Int64())}, nil
		}
		return &Const{Typ: t, Val: r.Int64()}, nil
	}
	return bigToConst(r, t)
}

// evalDateArith computes date +/- days or interval.
func evalDateArith(fn string, a, b *Const) (*Const, error) {
	d, other := a, b
	if _, ok := a.Val.(arrow.Date32); !ok {
		d, other = b, a
	}
	day := d.Val.(arrow.Date32)
	sign := int64(1)
	if fn == FnSub {
		sign = -1
	}
	var out int64
	switch v := other.Val.(type) {
	case arrow.MonthDayNanoInterval:
		t := time.Unix(int64(day)*86400, 0).UTC()
		y, m, dd := t.Date()
		months := int(m) - 1 + int(sign)*int(v.Months)
		y += months / 12
		months %= 12
		if months < 0 {
			months += 12
			y--
		}
		// PostgreSQL clamps the day to the target month's length.
		last := time.Date(y, time.Month(months+2), 0, 0, 0, 0, 0, time.UTC).Day()
		dd = min(dd, last)
		t = time.Date(y, time.Month(months+1), dd, 0, 0, 0, 0, time.UTC)
		out = t.Unix()/86400 + sign*int64(v.Days)
	default:
		out = int64(day) + sign*ConstInt(other)
	}
	if out < math.MinInt32 || out > math.MaxInt32 {
		return nil, fmt.Errorf("date out of range")
	}
	return &Const{Typ: TypDate, Val: arrow.Date32(out)}, nil
}

// evalTimestampArith computes timestamp +/- interval and timestamp -
// timestamp (a date operand is its midnight).
func evalTimestampArith(fn string, a, b *Const, t arrow.DataType) (*Const, error) {
	us := func(c *Const) (int64, bool) {
		switch v := c.Val.(type) {
		case arrow.Timestamp:
			return int64(v), true
		case arrow.Date32:
			return int64(v) * expr.UsPerDay, true
		}
		return 0, false
	}
	x, xok := us(a)
	y, yok := us(b)
	switch {
	case xok && yok && fn == FnSub:
		return &Const{Typ: TypInterval, Val: expr.TimestampDiff(x, y)}, nil
	case xok && !yok:
		sign := int64(1)
		if fn == FnSub {
			sign = -1
		}
		r, ok := expr.TimestampAddInterval(x, b.Val.(arrow.MonthDayNanoInterval), sign)
		if !ok {
			return nil, fmt.Errorf("timestamp out of range")
		}
		return &Const{Typ: t, Val: arrow.Timestamp(r)}, nil
	case yok && fn == FnAdd:
		return evalTimestampArith(fn, b, a, t)
	}
	return nil, nil
}

// evalTimeArith computes time +/- interval, interval + time, time - time
// and date + time (expr.TimeArithType).
func evalTimeArith(fn string, a, b *Const) (*Const, error) {
	switch x := a.Val.(type) {
	case arrow.Time64:
		switch y := b.Val.(type) {
		case arrow.Time64:
			return &Const{Typ: TypInterval, Val: expr.TimeDiff(int64(x), int64(y))}, nil
		case arrow.MonthDayNanoInterval:
			sign := int64(1)
			if fn == FnSub {
				sign = -1
			}
			return &Const{Typ: TypTime, Val: arrow.Time64(expr.TimeAddInterval(int64(x), y, sign))}, nil
		case arrow.Date32:
			return evalTimeArith(fn, b, a)
		}
	case arrow.MonthDayNanoInterval:
		if y, ok := b.Val.(arrow.Time64); ok && fn == FnAdd {
			return &Const{Typ: TypTime, Val: arrow.Time64(expr.TimeAddInterval(int64(y), x, 1))}, nil
		}
	case arrow.Date32:
		if y, ok := b.Val.(arrow.Time64); ok && fn == FnAdd {
			us, ok := expr.DateAddTime(int32(x), int64(y))
			if !ok {
				return nil, fmt.Errorf("timestamp out of range")
			}
			return &Const{Typ: TypTimestamp, Val: arrow.Timestamp(us)}, nil
		}
	}
	return nil, nil
}

func extractConst(field string, d arrow.Date32) (*Const, error) {
	v, ok := expr.ExtractValue(field, int64(d))
	if !ok {
		return nil, nil
	}
	return &Const{Typ: TypInt64, Val: v}, nil
}

// likeMatch matches s against a LIKE pattern (% any run, _ one character,
// backslash escapes the next character).
func likeMatch(s, pat string) bool {
	sr, pr := []rune(s), []rune(pat)
	var rec func(i, j int) bool
	// NB: memoized on (i, j) so '%%%%...' patterns stay polynomial.
	memo := map[[2]int]bool{}
	rec = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case j == len(pr):
			r = i == len(sr)
		case pr[j] == '%':
			r = rec(i, j+1) || (i < len(sr) && rec(i+1, j))
		case pr[j] == '\\' && j+1 < len(pr):
			r = i < len(sr) && sr[i] == pr[j+1] && rec(i+1, j+2)
		case i < len(sr) && (pr[j] == '_' || pr[j] == sr[i]):
			r = rec(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return rec(0, 0)
}

// evalZoned evaluates the calls on TIMESTAMPTZ values that depend on the
// session time zone c.Zone (when it is not UTC): done is false for the
// others. A call it does not fold (a date beside a TIMESTAMPTZ, AT TIME
// ZONE) is left to exec, which computes it in the same zone.
func evalZoned(c *Call, args []*Const) (_ *Const, done bool, _ error) {
	tz := false
	for _, a := range args {
		tz = tz || IsTimestamp(a.Typ) && expr.HasZone(a.Typ)
	}
	if !tz && !(IsTimestamp(c.Typ) && expr.HasZone(c.Typ)) {
		return nil, false, nil
	}
	loc, err := expr.LoadZone(c.Zone)
	if err != nil || loc == nil {
		return nil, err != nil, err
	}
	switch c.Fn {
	case FnEq, FnNe, FnLt, FnLe, FnGt, FnGe, FnDistinct, FnNotDist, FnIn, FnCoalesce, "nullif":
		for _, a := range args[1:] {
			if !arrow.TypeEqual(a.Typ, args[0].Typ) {
				return nil, true, nil
			}
		}
		return nil, false, nil
	case FnExtract:
		v, ok := args[1].Val.(arrow.Timestamp)
		if !ok {
			return nil, true, nil
		}
		field := args[0].Val.(string)
		switch field {
		case "epoch", "epoch_ms", "epoch_us":
			return nil, false, nil
		case "timezone", "timezone_hour", "timezone_minute":
			return &Const{Typ: TypInt64, Val: expr.ExtractZoneField(field, expr.ZoneOffset(int64(v), loc))}, true, nil
		}
		x, ok := expr.ExtractTimestamp(field, expr.TimestampToLocal(int64(v), loc))
		if !ok {
			return nil, true, nil
		}
		return &Const{Typ: TypInt64, Val: x}, true, nil
	case expr.FnDateTrunc:
		v, ok := args[1].Val.(arrow.Timestamp)
		if !ok {
			return nil, true, nil
		}
		if _, ok := expr.TruncTimestamp(args[0].Val.(string), 0); !ok {
			return nil, true, nil
		}
		r := expr.TruncTimestampTZ(args[0].Val.(string), int64(v), loc)
		if r < expr.MinTimestamp {
			return nil, true, nil
		}
		return &Const{Typ: c.Typ, Val: arrow.Timestamp(r)}, true, nil
	case FnAdd, FnSub:
		if len(args) != 2 {
			return nil, true, nil
		}
		a, b := args[0], args[1]
		if c.Fn == FnAdd && IsInterval(a.Typ) {
			a, b = b, a
		}
		x, ok1 := a.Val.(arrow.Timestamp)
		iv, ok2 := b.Val.(arrow.MonthDayNanoInterval)
		if !ok1 || !ok2 {
			if y, ok := b.Val.(arrow.Timestamp); ok1 && ok && c.Fn == FnSub && arrow.TypeEqual(a.Typ, b.Typ) {
				return &Const{Typ: TypInterval, Val: expr.TimestampDiff(int64(x), int64(y))}, true, nil
			}
			return nil, true, nil
		}
		sign := int64(1)
		if c.Fn == FnSub {
			sign = -1
		}
		r, ok := expr.TimestampTZAddIntervalIn(int64(x), int64(iv.Months), int64(iv.Days), iv.Nanoseconds, sign, loc)
		if !ok {
			return nil, true, fmt.Errorf("timestamp out of range")
		}
		return &Const{Typ: c.Typ, Val: arrow.Timestamp(r)}, true, nil
	}
	return nil, true, nil // left to exec
}
