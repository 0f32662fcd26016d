package tpch

import (
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
)

// Constants of the TPC-H data (spec clause 4.2.3; dbgen dss.h, shared.h).
const (
	// epoch1992 is 1992-01-01 (dbgen STARTDATE) in days since 1970-01-01.
	epoch1992 = 8035
	// totDates is the number of days from 1992-01-01 to 1998-12-31 (TOTDATE).
	totDates = 2557
	// currentDate is 1995-06-17 (dbgen CURRENTDATE 95168) as a day offset
	// from 1992-01-01: lines shipped after it are open ('O'), lines received
	// after it are not returned ('N').
	currentDate = 1263
	// maxOrderDate is the last order date offset: TOTDATE - (L_SDTE_MAX +
	// L_RDTE_MAX) - 1, so every ship and receipt date stays in range.
	maxOrderDate = totDates - (121 + 30) - 1
	suppPerPart  = 4
	// custMortality: customers whose key is a multiple of 3 place no orders.
	custMortality = 3
	// bbbCmntLen is len("Customer ") + len("Complaints"): the supplier
	// comment rule of clause 4.2.3 needs that much room.
	bbbCmntLen = 19
)

// dateStrs[k] is "YYYY-MM-DD" of 1992-01-01 + k days.
var dateStrs = func() [totDates][10]byte {
	var out [totDates][10]byte
	d := time.Date(1992, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range out {
		copy(out[k][:], d.AddDate(0, 0, k).Format("2006-01-02"))
	}
	return out
}()

// alphaNum is dbgen's a_rnd alphabet (64 characters, note the space).
const alphaNum = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ,"

// commentRange returns dbgen's TEXT(avg) bounds: (int)(avg*0.4) and
// (int)(avg*1.6), computed in float64 as dbgen does.
func commentRange(avg int) (int64, int64) {
	lo, hi := 0.4, 1.6 // V_STR_LOW, V_STR_HGH
	return int64(float64(avg) * lo), int64(float64(avg) * hi)
}

// Average comment and address lengths (dbgen shared.h).
var (
	pCmntMin, pCmntMax   = commentRange(14)
	psCmntMin, psCmntMax = commentRange(124)
	sCmntMin, sCmntMax   = commentRange(63)
	cCmntMin, cCmntMax   = commentRange(73)
	oCmntMin, oCmntMax   = commentRange(49)
	lCmntMin, lCmntMax   = commentRange(27)
	nCmntMin, nCmntMax   = commentRange(72)
	addrMin, addrMax     = commentRange(25)
)

// staticStrs holds each distribution's members as []byte so batches can
// reference them without copying.
type staticStrs [][]byte

func membersOf(d *dist) staticStrs {
	out := make(staticStrs, len(d.members))
	for i, m := range d.members {
		out[i] = []byte(m)
	}
	return out
}

var (
	strTypes        = membersOf(dists.types)
	strContainers   = membersOf(dists.containers)
	strSegments     = membersOf(dists.segments)
	strPriorities   = membersOf(dists.priorities)
	strInstructions = membersOf(dists.instructions)
	strModes        = membersOf(dists.modes)
	strRflags       = membersOf(dists.rflags)
	strNations      = membersOf(dists.nations)
	strRegions      = membersOf(dists.regions)
	strColors       = membersOf(dists.colors)
	strN            = []byte("N")
	strF            = []byte("F")
	strO            = []byte("O")
	strP            = []byte("P")
)

// text is dbgen's dbg_text: a random substring of the text pool.
func text(s *stream, pool []byte, lo, hi int64) parquet.ByteArray {
	off := s.unif(0, textPoolSize-hi)
	n := s.unif(lo, hi)
	return pool[off : off+n : off+n]
}

// pick is dbgen's pick_str: a member index drawn by weight.
func pick(s *stream, d *dist) int {
	return d.pickIndex(s.unif(1, d.total))
}

// appendAlnum is dbgen's a_rnd: lo..hi characters from alphaNum, five per
// draw.
func appendAlnum(dst []byte, s *stream, lo, hi int64) []byte {
	n := s.unif(lo, hi)
	var bits int64
	for i := int64(0); i < n; i++ {
		if i%5 == 0 {
			bits = s.unifMaxLong()
		}
		dst = append(dst, alphaNum[bits&63])
		bits >>= 6
	}
	return dst
}

// appendPhone is dbgen's gen_phone: CC-AAA-EEE-NNNN with CC = 10 + nation
// (modulo NATIONS_MAX = 90, the country codes two digits allow).
func appendPhone(dst []byte, s *stream, nation int64) []byte {
	a := s.unif(100, 999)
	e := s.unif(100, 999)
	n := s.unif(1000, 9999)
	dst = appendPad(dst, 10+nation%90, 2)
	dst = append(dst, '-')
	dst = appendPad(dst, a, 3)
	dst = append(dst, '-')
	dst = appendPad(dst, e, 3)
	dst = append(dst, '-')
	return appendPad(dst, n, 4)
}

// appendPad appends v (>= 0) in decimal, zero-padded to width digits.
func appendPad(dst []byte, v int64, width int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for v >= 10 {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	tmp[i] = byte('0' + v)
	for len(tmp)-i < width {
		i--
		tmp[i] = '0'
	}
	return append(dst, tmp[i:]...)
}

// retailPrice is dbgen's rpb_routine (clause 4.2.3), in cents.
func retailPrice(partkey int64) int64 {
	return 90000 + (partkey/10)%20001 + (partkey%1000)*100
}

// partSuppKey is the suppkey of the i-th (0..3) supplier of a part
// (clause 4.2.3; dbgen PART_SUPP_BRIDGE).
func partSuppKey(partkey, i, suppliers int64) int64 {
	return (partkey+i*(suppliers/suppPerPart+(partkey-1)/suppliers))%suppliers + 1
}

// orderKey is dbgen's mk_sparse: only the first 8 of every 32 keys are used.
func orderKey(index int64) int64 {
	return (index>>3)<<5 | index&7
}

// ---- part and partsupp ----

type partGen struct {
	sc                                     Scale
	pool                                   []byte
	name, mfg, brnd, typ, size, cntr, cmnt stream
	psQty, psCost, psCmnt                  stream
	perm                                   [92]int
	buf                                    []byte
}

func newPartGen(sc Scale, pool []byte, row int64) *partGen {
	if len(dists.colors.members) != len(partGen{}.perm) {
		panic("tpch: colors distribution must have 92 members")
	}
	return &partGen{
		sc: sc, pool: pool,
		name: newStream(sdPName, row), mfg: newStream(sdPMfg, row), brnd: newStream(sdPBrnd, row),
		typ: newStream(sdPType, row), size: newStream(sdPSize, row), cntr: newStream(sdPCntr, row),
		cmnt: newStream(sdPCmnt, row), psQty: newStream(sdPsQty, row), psCost: newStream(sdPsScst, row),
		psCmnt: newStream(sdPsCmnt, row),
	}
}

// row generates part i into pb and its four partsupp rows into psb; either
// may be nil when that table is not wanted.
func (g *partGen) row(i int64, pb, psb *batch) {
	if pb != nil {
		// p_name: five distinct colors, from a permutation (dbgen agg_str).
		for k := range g.perm {
			g.perm[k] = k
		}
		for k := range g.perm {
			j := g.name.unif(int64(k), int64(len(g.perm)-1))
			g.perm[k], g.perm[j] = g.perm[j], g.perm[k]
		}
		g.buf = g.buf[:0]
		for k := 0; k < 5; k++ {
			if k > 0 {
				g.buf = append(g.buf, ' ')
			}
			g.buf = append(g.buf, strColors[g.perm[k]]...)
		}
		c := pb.cols
		c[pPartkey].i64 = append(c[pPartkey].i64, i)
		c[pName].str = append(c[pName].str, pb.appendArena(g.buf))
		m := g.mfg.unif(1, 5)
		b := g.brnd.unif(1, 5)
		g.buf = strconv.AppendInt(append(g.buf[:0], "Manufacturer#"...), m, 10)
		c[pMfgr].str = append(c[pMfgr].str, pb.appendArena(g.buf))
		g.buf = appendPad(append(g.buf[:0], "Brand#"...), m*10+b, 2)
		c[pBrand].str = append(c[pBrand].str, pb.appendArena(g.buf))
		c[pType].str = append(c[pType].str, strTypes[pick(&g.typ, dists.types)])
		c[pSize].i32 = append(c[pSize].i32, int32(g.size.unif(1, 50)))
		c[pContainer].str = append(c[pContainer].str, strContainers[pick(&g.cntr, dists.containers)])
		c[pRetailprice].i64 = append(c[pRetailprice].i64, retailPrice(i))
		c[pComment].str = append(c[pComment].str, text(&g.cmnt, g.pool, pCmntMin, pCmntMax))
		pb.n++
		g.name.endRow()
		g.mfg.endRow()
		g.brnd.endRow()
		g.typ.endRow()
		g.size.endRow()
		g.cntr.endRow()
		g.cmnt.endRow()
	}
	if psb != nil {
		c := psb.cols
		for s := int64(0); s < suppPerPart; s++ {
			c[psPartkey].i64 = append(c[psPartkey].i64, i)
			c[psSuppkey].i64 = append(c[psSuppkey].i64, partSuppKey(i, s, g.sc.Suppliers))
			c[psAvailqty].i32 = append(c[psAvailqty].i32, int32(g.psQty.unif(1, 9999)))
			c[psSupplycost].i64 = append(c[psSupplycost].i64, g.psCost.unif(100, 100000))
			c[psComment].str = append(c[psComment].str, text(&g.psCmnt, g.pool, psCmntMin, psCmntMax))
		}
		psb.n += suppPerPart
		g.psQty.endRow()
		g.psCost.endRow()
		g.psCmnt.endRow()
	}
}

// ---- supplier and customer ----

// partyGen writes the columns that open both supplier and customer rows,
// which dbgen's mk_supp and mk_cust draw alike from streams of their own:
// key, name, address, nation key, phone and account balance. They stand at
// the same indexes in both tables (sSuppkey..sAcctbal, cCustkey..cAcctbal).
type partyGen struct {
	addr, ntrg, phne, abal stream
	buf                    []byte
}

func newPartyGen(sdAddr, sdNtrg, sdPhne, sdAbal int, row int64) partyGen {
	return partyGen{addr: newStream(sdAddr, row), ntrg: newStream(sdNtrg, row),
		phne: newStream(sdPhne, row), abal: newStream(sdAbal, row)}
}

// row appends the party columns of row i; its name is namePrefix followed
// by the key padded to 9 digits ("Supplier#000000001").
func (g *partyGen) row(i int64, b *batch, namePrefix string) {
	c := b.cols
	c[sSuppkey].i64 = append(c[sSuppkey].i64, i)
	g.buf = appendPad(append(g.buf[:0], namePrefix...), i, 9)
	c[sName].str = append(c[sName].str, b.appendArena(g.buf))
	g.buf = appendAlnum(g.buf[:0], &g.addr, addrMin, addrMax)
	c[sAddress].str = append(c[sAddress].str, b.appendArena(g.buf))
	nation := g.ntrg.unif(0, int64(len(dists.nations.members)-1))
	c[sNationkey].i64 = append(c[sNationkey].i64, nation)
	g.buf = appendPhone(g.buf[:0], &g.phne, nation)
	c[sPhone].str = append(c[sPhone].str, b.appendArena(g.buf))
	c[sAcctbal].i64 = append(c[sAcctbal].i64, g.abal.unif(-99999, 999999))
}

func (g *partyGen) endRow() {
	g.addr.endRow()
	g.ntrg.endRow()
	g.phne.endRow()
	g.abal.endRow()
}

type suppGen struct {
	party                              partyGen
	pool                               []byte
	cmnt                               stream
	bbbCmnt, bbbType, bbbJunk, bbbOffs stream
	buf                                []byte
}

func newSuppGen(pool []byte, row int64) *suppGen {
	return &suppGen{
		party: newPartyGen(sdSAddr, sdSNtrg, sdSPhne, sdSAbal, row),
		pool:  pool, cmnt: newStream(sdSCmnt, row), bbbCmnt: newStream(sdBBBCmnt, row),
		bbbType: newStream(sdBBBType, row), bbbJunk: newStream(sdBBBJnk, row), bbbOffs: newStream(sdBBBOffs, row),
	}
}

func (g *suppGen) row(i int64, b *batch) {
	c := b.cols
	g.party.row(i, b, "Supplier#")
	cmnt := text(&g.cmnt, g.pool, sCmntMin, sCmntMax)
	// Clause 4.2.3: about 5 per 10,000 suppliers get "Customer ...
	// Complaints" and as many "Customer ... Recommends" written over their
	// comment. All four draws happen for every row (dbgen keeps them outside
	// the if so the streams stay in step).
	clen := int64(len(cmnt))
	badPress := g.bbbCmnt.unif(1, 10000)
	typ := g.bbbType.unif(0, 100)
	noise := g.bbbJunk.unif(0, clen-bbbCmntLen)
	offset := g.bbbOffs.unif(0, clen-(bbbCmntLen+noise))
	// S_CMNT_BBB: 10 in 10,000 suppliers; BBB_DEADBEATS: half complain.
	if badPress <= 10 {
		g.buf = append(g.buf[:0], cmnt...)
		copy(g.buf[offset:], "Customer ")
		word := "Complaints"
		if typ >= 50 {
			word = "Recommends"
		}
		copy(g.buf[int64(len("Customer "))+offset+noise:], word)
		cmnt = b.appendArena(g.buf)
	}
	c[sComment].str = append(c[sComment].str, cmnt)
	b.n++
	g.party.endRow()
	g.cmnt.endRow()
	g.bbbCmnt.endRow()
	g.bbbType.endRow()
	g.bbbJunk.endRow()
	g.bbbOffs.endRow()
}

// ---- customer ----

type custGen struct {
	party      partyGen
	pool       []byte
	mseg, cmnt stream
}

func newCustGen(pool []byte, row int64) *custGen {
	return &custGen{
		party: newPartyGen(sdCAddr, sdCNtrg, sdCPhne, sdCAbal, row),
		pool:  pool, mseg: newStream(sdCMseg, row), cmnt: newStream(sdCCmnt, row),
	}
}

func (g *custGen) row(i int64, b *batch) {
	c := b.cols
	g.party.row(i, b, "Customer#")
	c[cMktsegment].str = append(c[cMktsegment].str, strSegments[pick(&g.mseg, dists.segments)])
	c[cComment].str = append(c[cComment].str, text(&g.cmnt, g.pool, cCmntMin, cCmntMax))
	b.n++
	g.party.endRow()
	g.mseg.endRow()
	g.cmnt.endRow()
}

// ---- orders and lineitem ----

type orderGen struct {
	sc                                      Scale
	pool                                    []byte
	ckey, odate, prio, clrk, cmnt, lcnt     stream
	qty, dcnt, tax, ship, smode, pkey, skey stream
	sdte, cdte, rdte, rflg, lcmnt           stream
	buf                                     []byte
}

func newOrderGen(sc Scale, pool []byte, row int64) *orderGen {
	return &orderGen{
		sc: sc, pool: pool,
		ckey: newStream(sdOCkey, row), odate: newStream(sdOOdate, row), prio: newStream(sdOPrio, row),
		clrk: newStream(sdOClrk, row), cmnt: newStream(sdOCmnt, row), lcnt: newStream(sdOLcnt, row),
		qty: newStream(sdLQty, row), dcnt: newStream(sdLDcnt, row), tax: newStream(sdLTax, row),
		ship: newStream(sdLShip, row), smode: newStream(sdLSmode, row), pkey: newStream(sdLPkey, row),
		skey: newStream(sdLSkey, row), sdte: newStream(sdLSdte, row), cdte: newStream(sdLCdte, row),
		rdte: newStream(sdLRdte, row), rflg: newStream(sdLRflg, row), lcmnt: newStream(sdLCmnt, row),
	}
}

// row generates order i into ob and its lines into lb; either may be nil
// (the order's total price and status need its lines all the same).
func (g *orderGen) row(i int64, ob, lb *batch) {
	okey := orderKey(i)
	custkey := g.ckey.unif(1, g.sc.Customers)
	// Clause 4.2.3: custkeys that are multiples of 3 get no orders; dbgen
	// steps to a neighbour, alternating direction.
	delta := int64(1)
	for custkey%custMortality == 0 {
		custkey += delta
		if custkey > g.sc.Customers {
			custkey = g.sc.Customers
		}
		delta = -delta
	}
	odate := g.odate.unif(0, maxOrderDate)
	prio := pick(&g.prio, dists.priorities)
	clerk := g.clrk.unif(1, g.sc.Clerks)
	var cmnt parquet.ByteArray
	if ob != nil {
		cmnt = text(&g.cmnt, g.pool, oCmntMin, oCmntMax)
	}
	lines := g.lcnt.unif(1, 7)
	var total int64
	shipped := int64(0)
	for l := int64(1); l <= lines; l++ {
		partkey := g.pkey.unif(1, g.sc.Parts)
		suppkey := partSuppKey(partkey, g.skey.unif(0, 3), g.sc.Suppliers)
		qty := g.qty.unif(1, 50)
		disc := g.dcnt.unif(0, 10)
		tax := g.tax.unif(0, 8)
		instr := pick(&g.ship, dists.instructions)
		mode := pick(&g.smode, dists.modes)
		eprice := retailPrice(partkey) * qty
		// NB: dbgen's exact integer expression, truncations included.
		total += eprice * (100 - disc) / 100 * (100 + tax) / 100
		sdate := odate + g.sdte.unif(1, 121)
		cdate := odate + g.cdte.unif(30, 90)
		rdate := sdate + g.rdte.unif(1, 30)
		rflag := strN
		if rdate <= currentDate {
			rflag = strRflags[pick(&g.rflg, dists.rflags)]
		}
		status := strO
		if sdate <= currentDate {
			status = strF
			shipped++
		}
		if lb != nil {
			c := lb.cols
			c[lOrderkey].i64 = append(c[lOrderkey].i64, okey)
			c[lPartkey].i64 = append(c[lPartkey].i64, partkey)
			c[lSuppkey].i64 = append(c[lSuppkey].i64, suppkey)
			c[lLinenumber].i32 = append(c[lLinenumber].i32, int32(l))
			c[lQuantity].i64 = append(c[lQuantity].i64, qty*100)
			c[lExtendedprice].i64 = append(c[lExtendedprice].i64, eprice)
			c[lDiscount].i64 = append(c[lDiscount].i64, disc)
			c[lTax].i64 = append(c[lTax].i64, tax)
			c[lReturnflag].str = append(c[lReturnflag].str, rflag)
			c[lLinestatus].str = append(c[lLinestatus].str, status)
			c[lShipdate].i32 = append(c[lShipdate].i32, int32(epoch1992+sdate))
			c[lCommitdate].i32 = append(c[lCommitdate].i32, int32(epoch1992+cdate))
			c[lReceiptdate].i32 = append(c[lReceiptdate].i32, int32(epoch1992+rdate))
			c[lShipinstruct].str = append(c[lShipinstruct].str, strInstructions[instr])
			c[lShipmode].str = append(c[lShipmode].str, strModes[mode])
			c[lComment].str = append(c[lComment].str, text(&g.lcmnt, g.pool, lCmntMin, lCmntMax))
			lb.n++
		}
	}
	if ob != nil {
		status := strO
		switch shipped {
		case lines:
			status = strF
		case 0:
		default:
			status = strP
		}
		c := ob.cols
		c[oOrderkey].i64 = append(c[oOrderkey].i64, okey)
		c[oCustkey].i64 = append(c[oCustkey].i64, custkey)
		c[oOrderstatus].str = append(c[oOrderstatus].str, status)
		c[oTotalprice].i64 = append(c[oTotalprice].i64, total)
		c[oOrderdate].i32 = append(c[oOrderdate].i32, int32(epoch1992+odate))
		c[oOrderpriority].str = append(c[oOrderpriority].str, strPriorities[prio])
		g.buf = appendPad(append(g.buf[:0], "Clerk#"...), clerk, 9)
		c[oClerk].str = append(c[oClerk].str, ob.appendArena(g.buf))
		c[oShippriority].i32 = append(c[oShippriority].i32, 0)
		c[oComment].str = append(c[oComment].str, cmnt)
		ob.n++
	}
	g.ckey.endRow()
	g.odate.endRow()
	g.prio.endRow()
	g.clrk.endRow()
	g.cmnt.endRow()
	g.lcnt.endRow()
	g.qty.endRow()
	g.dcnt.endRow()
	g.tax.endRow()
	g.ship.endRow()
	g.smode.endRow()
	g.pkey.endRow()
	g.skey.endRow()
	g.sdte.endRow()
	g.cdte.endRow()
	g.rdte.endRow()
	g.rflg.endRow()
	g.lcmnt.endRow()
}

// ---- nation and region ----

type codeGen struct {
	pool []byte
	cmnt stream
}

func (g *codeGen) nation(i int64, b *batch) {
	c := b.cols
	c[nNationkey].i64 = append(c[nNationkey].i64, i-1)
	c[nName].str = append(c[nName].str, strNations[i-1])
	c[nRegionkey].i64 = append(c[nRegionkey].i64, dists.nations.cum[i-1])
	c[nComment].str = append(c[nComment].str, text(&g.cmnt, g.pool, nCmntMin, nCmntMax))
	b.n++
	g.cmnt.endRow()
}

func (g *codeGen) region(i int64, b *batch) {
	c := b.cols
	c[rRegionkey].i64 = append(c[rRegionkey].i64, i-1)
	c[rName].str = append(c[rName].str, strRegions[i-1])
	c[rComment].str = append(c[rComment].str, text(&g.cmnt, g.pool, nCmntMin, nCmntMax))
	b.n++
	g.cmnt.endRow()
}
