package tpch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/internal/tpchq"
)

// NumQueries is the number of TPC-H queries.
const NumQueries = tpchq.NumQueries

// Params holds a query's substitution parameters, keyed by the names of
// TPC-H clause 2.4 ("DATE", "REGION", "NATION1", "SIZE3", "FRACTION"...),
// each value written as it goes into the SQL text (without quotes).
type Params map[string]string

// subst turns a validation text into a template: each old string (with
// its validation value) becomes new (with {NAME} placeholders); n is how
// many times old occurs.
type subst struct {
	old, new string
	n        int
}

// Validation-text substitutions per query (clause 2.4 parameter names).
var templSubst = [NumQueries + 1][]subst{
	1:  {{"'90' day", "'{DELTA}' day", 1}},
	2:  {{"p_size = 15", "p_size = {SIZE}", 1}, {"'%BRASS'", "'%{TYPE}'", 1}, {"'EUROPE'", "'{REGION}'", 2}},
	3:  {{"'BUILDING'", "'{SEGMENT}'", 1}, {"'1995-03-15'", "'{DATE}'", 2}},
	4:  {{"'1993-07-01'", "'{DATE}'", 2}},
	5:  {{"'ASIA'", "'{REGION}'", 1}, {"'1994-01-01'", "'{DATE}'", 2}},
	6:  {{"'1994-01-01'", "'{DATE}'", 2}, {".06 - 0.01 and .06 + 0.01", "{DISCOUNT} - 0.01 and {DISCOUNT} + 0.01", 1}, {"l_quantity < 24", "l_quantity < {QUANTITY}", 1}},
	7:  {{"'FRANCE'", "'{NATION1}'", 2}, {"'GERMANY'", "'{NATION2}'", 2}},
	8:  {{"'BRAZIL'", "'{NATION}'", 1}, {"'AMERICA'", "'{REGION}'", 1}, {"'ECONOMY ANODIZED STEEL'", "'{TYPE}'", 1}},
	9:  {{"'%green%'", "'%{COLOR}%'", 1}},
	10: {{"'1993-10-01'", "'{DATE}'", 2}},
	11: {{"'GERMANY'", "'{NATION}'", 2}, {"0.0001000000", "{FRACTION}", 1}},
	12: {{"('MAIL', 'SHIP')", "('{SHIPMODE1}', '{SHIPMODE2}')", 1}, {"'1994-01-01'", "'{DATE}'", 2}},
	13: {{"'%special%requests%'", "'%{WORD1}%{WORD2}%'", 1}},
	14: {{"'1995-09-01'", "'{DATE}'", 2}},
	15: {{"'1996-01-01'", "'{DATE}'", 2}},
	16: {{"'Brand#45'", "'{BRAND}'", 1}, {"'MEDIUM POLISHED%'", "'{TYPE}%'", 1},
		{"(49, 14, 23, 45, 19, 3, 36, 9)", "({SIZE1}, {SIZE2}, {SIZE3}, {SIZE4}, {SIZE5}, {SIZE6}, {SIZE7}, {SIZE8})", 1}},
	17: {{"'Brand#23'", "'{BRAND}'", 1}, {"'MED BOX'", "'{CONTAINER}'", 1}},
	18: {{"sum(l_quantity) > 300", "sum(l_quantity) > {QUANTITY}", 1}},
	19: {{"'Brand#12'", "'{BRAND1}'", 1}, {"'Brand#23'", "'{BRAND2}'", 1}, {"'Brand#34'", "'{BRAND3}'", 1},
		{"l_quantity >= 1 and l_quantity <= 1 + 10", "l_quantity >= {QUANTITY1} and l_quantity <= {QUANTITY1} + 10", 1},
		{"l_quantity >= 10 and l_quantity <= 10 + 10", "l_quantity >= {QUANTITY2} and l_quantity <= {QUANTITY2} + 10", 1},
		{"l_quantity >= 20 and l_quantity <= 20 + 10", "l_quantity >= {QUANTITY3} and l_quantity <= {QUANTITY3} + 10", 1}},
	20: {{"'forest%'", "'{COLOR}%'", 1}, {"'1994-01-01'", "'{DATE}'", 2}, {"'CANADA'", "'{NATION}'", 1}},
	21: {{"'SAUDI ARABIA'", "'{NATION}'", 1}},
	22: {{"('13', '31', '23', '29', '30', '18', '17')", "('{I1}', '{I2}', '{I3}', '{I4}', '{I5}', '{I6}', '{I7}')", 2}},
}

// validation holds the validation parameters of clause 2.4 (SF 1; Q11's
// FRACTION is computed from the SF by DefaultParams).
var validation = [NumQueries + 1]Params{
	1:  {"DELTA": "90"},
	2:  {"SIZE": "15", "TYPE": "BRASS", "REGION": "EUROPE"},
	3:  {"SEGMENT": "BUILDING", "DATE": "1995-03-15"},
	4:  {"DATE": "1993-07-01"},
	5:  {"REGION": "ASIA", "DATE": "1994-01-01"},
	6:  {"DATE": "1994-01-01", "DISCOUNT": ".06", "QUANTITY": "24"},
	7:  {"NATION1": "FRANCE", "NATION2": "GERMANY"},
	8:  {"NATION": "BRAZIL", "REGION": "AMERICA", "TYPE": "ECONOMY ANODIZED STEEL"},
	9:  {"COLOR": "green"},
	10: {"DATE": "1993-10-01"},
	11: {"NATION": "GERMANY"},
	12: {"SHIPMODE1": "MAIL", "SHIPMODE2": "SHIP", "DATE": "1994-01-01"},
	13: {"WORD1": "special", "WORD2": "requests"},
	14: {"DATE": "1995-09-01"},
	15: {"DATE": "1996-01-01"},
	16: {"BRAND": "Brand#45", "TYPE": "MEDIUM POLISHED", "SIZE1": "49", "SIZE2": "14", "SIZE3": "23", "SIZE4": "45", "SIZE5": "19", "SIZE6": "3", "SIZE7": "36", "SIZE8": "9"},
	17: {"BRAND": "Brand#23", "CONTAINER": "MED BOX"},
	18: {"QUANTITY": "300"},
	19: {"QUANTITY1": "1", "QUANTITY2": "10", "QUANTITY3": "20", "BRAND1": "Brand#12", "BRAND2": "Brand#23", "BRAND3": "Brand#34"},
	20: {"COLOR": "forest", "DATE": "1994-01-01", "NATION": "CANADA"},
	21: {"NATION": "SAUDI ARABIA"},
	22: {"I1": "13", "I2": "31", "I3": "23", "I4": "29", "I5": "30", "I6": "18", "I7": "17"},
}

var (
	validationTexts [NumQueries + 1]string
	templates       [NumQueries + 1]string
	templateErr     error
)

func init() {
	for q := 1; q <= NumQueries; q++ {
		text, err := tpchq.Text(q)
		if err != nil {
			templateErr = err
			return
		}
		validationTexts[q] = text
		for _, s := range templSubst[q] {
			if c := strings.Count(text, s.old); c != s.n {
				templateErr = fmt.Errorf("tpch: query %d: %q occurs %d times, want %d", q, s.old, c, s.n)
				return
			}
			text = strings.ReplaceAll(text, s.old, s.new)
		}
		templates[q] = text
	}
}

func checkQuery(q int) error {
	if templateErr != nil {
		return nferr.Internalf("%v", templateErr)
	}
	if q < 1 || q > NumQueries {
		return nferr.Queryf("no TPC-H query %d (want 1..22)", q)
	}
	return nil
}

// ValidationText returns query q's text exactly as stored: the
// validation parameters for SF 1 (Q11 FRACTION 0.0001).
func ValidationText(q int) (string, error) {
	if err := checkQuery(q); err != nil {
		return "", err
	}
	return validationTexts[q], nil
}

// ParamNames lists query q's parameter names, sorted.
func ParamNames(q int) []string {
	if q < 1 || q > NumQueries {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range templSubst[q] {
		for rest := s.new; ; {
			i := strings.IndexByte(rest, '{')
			if i < 0 {
				break
			}
			j := strings.IndexByte(rest[i:], '}')
			seen[rest[i+1:i+j]] = true
			rest = rest[i+j:]
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Query returns the text of query q with parameters p substituted. Every
// parameter of the query must be given (ParamNames); extra ones are an
// error too, to catch typos.
func Query(q int, p Params) (string, error) {
	if err := checkQuery(q); err != nil {
		return "", err
	}
	names := ParamNames(q)
	for k := range p {
		if !slices.Contains(names, k) {
			return "", nferr.Queryf("query %d has no parameter %s (it has %s)", q, k, strings.Join(names, ", "))
		}
	}
	text := templates[q]
	for _, n := range names {
		v, ok := p[n]
		if !ok {
			return "", nferr.Queryf("query %d: parameter %s is missing", q, n)
		}
		if strings.ContainsAny(v, "'\\;") {
			return "", nferr.Queryf("query %d: parameter %s=%q contains a quote, backslash or semicolon", q, n, v)
		}
		text = strings.ReplaceAll(text, "{"+n+"}", v)
	}
	return text, nil
}

// fraction formats Q11's FRACTION, 0.0001/SF, as qgen does (10 decimals).
func fraction(sf float64) string {
	return strconv.FormatFloat(0.0001/sf, 'f', 10, 64)
}

// DefaultParams returns the validation parameters of clause 2.4 for query
// q at scale factor sf: the SF 1 validation set with Q11's FRACTION set to
// 0.0001/SF as the spec requires.
//
// NB: the stored SF 0.01 and 0.1 answers were computed with FRACTION 0.0001
// (the SF 1 text); use AnswerParams to run queries whose results are
// checked with CheckAnswer.
func DefaultParams(q int, sf float64) Params {
	if q < 1 || q > NumQueries {
		return nil
	}
	p := Params{}
	for k, v := range validation[q] {
		p[k] = v
	}
	if q == 11 {
		p["FRACTION"] = fraction(sf)
	}
	return p
}

// AnswerParams returns the parameters the stored answer of query q at sf
// was computed with: DefaultParams for SF 1 (official answers), and the SF 1
// validation texts, Q11 FRACTION 0.0001 included, for SF 0.01 and 0.1.
// ok is false when there is no stored answer for sf.
func AnswerParams(q int, sf float64) (Params, bool) {
	if !HasAnswers(sf) || q < 1 || q > NumQueries {
		return nil, false
	}
	return DefaultParams(q, 1), true
}

// Choice lists of clause 2.4 and dbgen's dists.dss.
var (
	typeSyllable1      = []string{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}
	typeSyllable2      = []string{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"}
	typeSyllable3      = []string{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"}
	containerSyllable1 = []string{"SM", "LG", "MED", "JUMBO", "WRAP"}
	containerSyllable2 = []string{"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"}
)

// RandomParams draws valid substitution parameters for query q by the rules
// of clause 2.4 (like qgen, though not with qgen's random stream) from
// seed, for scale factor sf. Equal seeds give equal parameters.
func RandomParams(q int, sf float64, seed uint64) Params {
	if q < 1 || q > NumQueries {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, uint64(q)))
	in := func(lo, hi int) int { return lo + r.IntN(hi-lo+1) }
	one := func(xs []string) string { return xs[r.IntN(len(xs))] }
	nation := func() string { return dists.nations.members[r.IntN(len(dists.nations.members))] }
	region := func() string { return dists.regions.members[r.IntN(len(dists.regions.members))] }
	brand := func() string { return fmt.Sprintf("Brand#%d%d", in(1, 5), in(1, 5)) }
	color := func() string { return dists.colors.members[r.IntN(len(dists.colors.members))] }
	jan1 := func() string { return fmt.Sprintf("%d-01-01", in(1993, 1997)) }
	// monthIn returns the first day of a month drawn from [first, last],
	// months counted from January 1993 (0).
	monthIn := func(first, last int) string {
		m := in(first, last)
		return fmt.Sprintf("%d-%02d-01", 1993+m/12, m%12+1)
	}
	distinct := func(n, lo, hi int) []string {
		vals := r.Perm(hi - lo + 1)[:n]
		out := make([]string, n)
		for i, v := range vals {
			out[i] = strconv.Itoa(lo + v)
		}
		return out
	}
	switch q {
	case 1:
		return Params{"DELTA": strconv.Itoa(in(60, 120))}
	case 2:
		return Params{"SIZE": strconv.Itoa(in(1, 50)), "TYPE": one(typeSyllable3), "REGION": region()}
	case 3:
		return Params{"SEGMENT": one(dists.segments.members), "DATE": fmt.Sprintf("1995-03-%02d", in(1, 31))}
	case 4:
		return Params{"DATE": monthIn(0, 4*12+9)} // Jan 1993 .. Oct 1997
	case 5:
		return Params{"REGION": region(), "DATE": jan1()}
	case 6:
		return Params{"DATE": jan1(), "DISCOUNT": fmt.Sprintf(".%02d", in(2, 9)), "QUANTITY": strconv.Itoa(in(24, 25))}
	case 7:
		n1 := r.IntN(25)
		n2 := (n1 + 1 + r.IntN(24)) % 25
		return Params{"NATION1": dists.nations.members[n1], "NATION2": dists.nations.members[n2]}
	case 8:
		n := r.IntN(len(dists.nations.members))
		return Params{"NATION": dists.nations.members[n], "REGION": dists.regions.members[dists.nations.cum[n]],
			"TYPE": one(typeSyllable1) + " " + one(typeSyllable2) + " " + one(typeSyllable3)}
	case 9:
		return Params{"COLOR": color()}
	case 10:
		return Params{"DATE": monthIn(1, 24)} // Feb 1993 .. Jan 1995
	case 11:
		return Params{"NATION": nation(), "FRACTION": fraction(sf)}
	case 12:
		m := distinct(2, 0, len(dists.modes.members)-1)
		i1, _ := strconv.Atoi(m[0])
		i2, _ := strconv.Atoi(m[1])
		return Params{"SHIPMODE1": dists.modes.members[i1], "SHIPMODE2": dists.modes.members[i2], "DATE": jan1()}
	case 13:
		return Params{"WORD1": one(dists.q13a.members), "WORD2": one(dists.q13b.members)}
	case 14:
		return Params{"DATE": monthIn(0, 59)} // Jan 1993 .. Dec 1997
	case 15:
		return Params{"DATE": monthIn(0, 4*12+9)} // Jan 1993 .. Oct 1997
	case 16:
		p := Params{"BRAND": brand(), "TYPE": one(typeSyllable1) + " " + one(typeSyllable2)}
		for i, s := range distinct(8, 1, 50) {
			p["SIZE"+strconv.Itoa(i+1)] = s
		}
		return p
	case 17:
		return Params{"BRAND": brand(), "CONTAINER": one(containerSyllable1) + " " + one(containerSyllable2)}
	case 18:
		return Params{"QUANTITY": strconv.Itoa(in(312, 315))}
	case 19:
		return Params{"QUANTITY1": strconv.Itoa(in(1, 10)), "QUANTITY2": strconv.Itoa(in(10, 20)), "QUANTITY3": strconv.Itoa(in(20, 30)),
			"BRAND1": brand(), "BRAND2": brand(), "BRAND3": brand()}
	case 20:
		return Params{"COLOR": color(), "DATE": jan1(), "NATION": nation()}
	case 21:
		return Params{"NATION": nation()}
	case 22:
		p := Params{}
		for i, s := range distinct(7, 10, 34) {
			p["I"+strconv.Itoa(i+1)] = s
		}
		return p
	}
	return nil
}
