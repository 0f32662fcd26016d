package tpch

// dbgen's random numbers: Park & Miller's "minimum standard" generator
// (seed' = seed * 16807 mod 2^31-1), one independent stream per column.
//
// INVARIANT (dbgen's row boundary rule): after every row of a table, each of
// the table's streams has been advanced by exactly its "boundary" number of
// draws, whatever the row used (dbgen's row_stop skips the unused draws). So
// the state of any stream at the start of row r (1-based) is
// seed0 * 16807^((r-1)*boundary) mod M, which is how chunks of any table are
// generated independently and in parallel.

const (
	rngA = 16807      // Park-Miller multiplier
	rngM = 2147483647 // 2^31 - 1, the modulus
	// dM is dbgen's double modulus used by UnifInt.
	dM = 2147483647.0
	// maxLong is dbgen's MAX_LONG (0x7FFFFFFF), the upper bound a_rnd draws
	// its character bits with.
	maxLong = 0x7FFFFFFF
)

// Stream numbers (dbgen dss.h/shared.h) and their initial seeds and per-row
// boundaries (dbgen rnd.c's Seed table, TPC-H 2.17.3).
const (
	sdPMfg     = 0
	sdPBrnd    = 1
	sdPType    = 2
	sdPSize    = 3
	sdPCntr    = 4
	sdTextPool = 5
	sdPCmnt    = 6
	sdPsQty    = 7
	sdPsScst   = 8
	sdPsCmnt   = 9
	sdOClrk    = 11
	sdOCmnt    = 12
	sdOOdate   = 13
	sdLQty     = 14
	sdLDcnt    = 15
	sdLTax     = 16
	sdLShip    = 17
	sdLSmode   = 18
	sdLPkey    = 19
	sdLSkey    = 20
	sdLSdte    = 21
	sdLCdte    = 22
	sdLRdte    = 23
	sdLRflg    = 24
	sdLCmnt    = 25
	sdCAddr    = 26
	sdCNtrg    = 27
	sdCPhne    = 28
	sdCAbal    = 29
	sdCMseg    = 30
	sdCCmnt    = 31
	sdSAddr    = 32
	sdSNtrg    = 33
	sdSPhne    = 34
	sdSAbal    = 35
	sdSCmnt    = 36
	sdPName    = 37
	sdOPrio    = 38
	sdOCkey    = 40
	sdNCmnt    = 41
	sdRCmnt    = 42
	sdOLcnt    = 43
	sdBBBJnk   = 44
	sdBBBType  = 45
	sdBBBCmnt  = 46
	sdBBBOffs  = 47
	numStreams = 48
)

// seedInit and seedBoundary mirror dbgen's Seed[] table (value, boundary).
var seedInit = [numStreams]int64{
	1, 46831694, 1841581359, 1193163244, 727633698, 933588178, 804159733,
	1671059989, 1051288424, 1961692154, 1227283347, 1171034773, 276090261,
	1066728069, 209208115, 554590007, 721958466, 1371272478, 675466456,
	1808217256, 2095021727, 1769349045, 904914315, 373135028, 717419739,
	1095462486, 881155353, 1489529863, 1521138112, 298370230, 1140279430,
	1335826707, 706178559, 110356601, 884434366, 962338209, 1341315363,
	709314158, 591449447, 431918286, 851767375, 606179079, 1500869201,
	1434868289, 263032577, 753643799, 202794285, 715851524,
}

// Boundaries: SUPP_PER_PART = 4, O_LCNT_MAX = 7 lines per order; a comment
// takes 2 draws (offset, length); an address up to 1 + 40/5 = 9; a phone 3;
// a part name 92 (a permutation of the 92 colors).
var seedBoundary = [numStreams]int64{
	1, 1, 1, 1, 1, 1, 2,
	4, 4, 8, 1, 1, 2,
	1, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7,
	14, 9, 1, 3, 1, 1,
	2, 9, 1, 3, 1, 2,
	92, 1, 1, 1, 2, 2,
	1, 1, 1, 1, 1,
}

// mulmod returns a*b mod M for a, b in [0, M).
func mulmod(a, b int64) int64 { return a * b % rngM }

// powA returns 16807^n mod M.
func powA(n int64) int64 {
	r, m := int64(1), int64(rngA)
	for n > 0 {
		if n&1 != 0 {
			r = mulmod(r, m)
		}
		m = mulmod(m, m)
		n >>= 1
	}
	return r
}

// stream is one column's random number stream.
type stream struct {
	cur    int64 // the last value drawn (dbgen's Seed[].value)
	row    int64 // the value at the start of the current row
	rowMul int64 // 16807^boundary mod M: advances row by one row
}

// newStream returns stream sd positioned at the start of row (1-based).
func newStream(sd int, row int64) stream {
	mul := powA(seedBoundary[sd])
	start := mulmod(seedInit[sd], powA((row-1)*seedBoundary[sd]))
	return stream{cur: start, row: start, rowMul: mul}
}

// unif is dbgen's UnifInt: a value uniformly distributed in [lo, hi].
//
// NB: the double arithmetic (value / dM * range, truncated toward zero) must
// stay exactly as dbgen computes it: a reciprocal multiply would round
// differently for some seeds and change the data.
func (s *stream) unif(lo, hi int64) int64 {
	s.cur = s.cur * rngA % rngM
	return lo + int64(float64(s.cur)/dM*float64(hi-lo+1))
}

// unifMaxLong is UnifInt(0, MAX_LONG) as dbgen computes it for a_rnd.
//
// NB: dbgen computes that range in 32-bit ints, where MAX_LONG - 0 + 1
// overflows to -2^31; so the draw is non-positive and a_rnd then takes its
// bits from the two's complement value. Reproduced here on purpose.
func (s *stream) unifMaxLong() int64 {
	s.cur = s.cur * rngA % rngM
	return int64(float64(s.cur) / dM * -2147483648.0)
}

// endRow advances the stream to the start of the next row (dbgen row_stop).
func (s *stream) endRow() {
	s.row = s.row * s.rowMul % rngM
	s.cur = s.row
}
