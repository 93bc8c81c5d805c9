package gen

// The rows of each table (clause 4.2.3), made a chunk at a time.

// The tables whose columns name streams; the text pool has one too.
const (
	tablePool = iota + 1
	tableRegion
	tableNation
	tableSupplier
	tablePart // and PARTSUPP
	tableCustomer
	tableOrders // and LINEITEM
)

// chunkRows is the number of rows of a chunk: of suppliers, parts (each
// with its four PARTSUPP rows), customers or orders (each with its
// LINEITEM rows). It is part of what the output is: another value gives
// other data.
const chunkRows = 1000

// A chunk is what one chunk of a table group writes: a buffer and a row
// count for each of its tables.
type chunk struct {
	bufs [2][]byte
	rows [2]int64
}

func (c *chunk) reset() {
	for i := range c.bufs {
		c.bufs[i] = c.bufs[i][:0]
		c.rows[i] = 0
	}
}

func (g *generator) region(c *chunk) {
	var cmt stream
	cmt.seed(tableRegion, 0, 0)
	b := c.bufs[0]
	for k, name := range regions {
		b = appendInt(b, int64(k))
		b = append(b, '|')
		b = append(b, name...)
		b = append(b, '|')
		b = appendText(b, &cmt, 31, 115)
		b = append(b, '\n')
	}
	c.bufs[0], c.rows[0] = b, int64(len(regions))
}

func (g *generator) nation(c *chunk) {
	var cmt stream
	cmt.seed(tableNation, 0, 0)
	b := c.bufs[0]
	for k, n := range nations {
		b = appendInt(b, int64(k))
		b = append(b, '|')
		b = append(b, n.name...)
		b = append(b, '|')
		b = appendInt(b, int64(n.region))
		b = append(b, '|')
		b = appendText(b, &cmt, 31, 114)
		b = append(b, '\n')
	}
	c.bufs[0], c.rows[0] = b, int64(len(nations))
}

// Columns of SUPPLIER with a stream of their own.
const (
	sAddress = iota
	sNation
	sPhone
	sAcctbal
	sComment
	sPress // where "Customer ... Complaints" and "... Recommends" go
)

func (g *generator) supplier(k int64, c *chunk) {
	var addr, nation, phone, bal, cmt, press stream
	addr.seed(tableSupplier, sAddress, k)
	nation.seed(tableSupplier, sNation, k)
	phone.seed(tableSupplier, sPhone, k)
	bal.seed(tableSupplier, sAcctbal, k)
	cmt.seed(tableSupplier, sComment, k)
	press.seed(tableSupplier, sPress, k)
	b := c.bufs[0]
	first, last := chunkSpan(k, g.suppliers)
	for key := first; key <= last; key++ {
		b = appendInt(b, key)
		b = append(b, "|Supplier#"...)
		b = appendKey9(b, key)
		b = append(b, '|')
		b = appendVString(b, &addr, 10, 40)
		b = append(b, '|')
		nk := nation.between(0, int64(len(nations)-1))
		b = appendInt(b, nk)
		b = append(b, '|')
		b = appendPhone(b, &phone, nk)
		b = append(b, '|')
		b = appendMoney(b, bal.between(-99999, 999999))
		b = append(b, '|')
		start := len(b)
		b = appendText(b, &cmt, 25, 100)
		if word, ok := g.press[key]; ok {
			// Clause 4.2.3: the comment holds "Customer", then
			// word further on, each at a random position.
			text := b[start:]
			p1 := press.between(0, int64(len(text)-8-len(word)))
			p2 := press.between(p1+8, int64(len(text)-len(word)))
			copy(text[p1:], "Customer")
			copy(text[p2:], word)
		}
		b = append(b, '\n')
	}
	c.bufs[0], c.rows[0] = b, last-first+1
}

// Columns of PART and PARTSUPP with a stream of their own.
const (
	pName = iota
	pMfgr
	pBrand
	pType
	pSize
	pContainer
	pComment
	psAvailqty
	psSupplycost
	psComment
)

// retailPrice is P_RETAILPRICE of a part in cents (clause 4.2.3).
func retailPrice(partkey int64) int64 {
	return 90000 + (partkey/10)%20001 + 100*(partkey%1000)
}

// partSupplier is the supplier key of the i-th (0..3) supplier of a part
// (clause 4.2.3, PS_SUPPKEY).
func (g *generator) partSupplier(partkey, i int64) int64 {
	s := g.suppliers
	return (partkey+i*(s/4+(partkey-1)/s))%s + 1
}

func (g *generator) part(k int64, c *chunk) {
	var name, mfgr, brand, typ, size, cntr, cmt, qty, cost, pscmt stream
	name.seed(tablePart, pName, k)
	mfgr.seed(tablePart, pMfgr, k)
	brand.seed(tablePart, pBrand, k)
	typ.seed(tablePart, pType, k)
	size.seed(tablePart, pSize, k)
	cntr.seed(tablePart, pContainer, k)
	cmt.seed(tablePart, pComment, k)
	qty.seed(tablePart, psAvailqty, k)
	cost.seed(tablePart, psSupplycost, k)
	pscmt.seed(tablePart, psComment, k)
	b, ps := c.bufs[0], c.bufs[1]
	first, last := chunkSpan(k, g.parts)
	for key := first; key <= last; key++ {
		b = appendInt(b, key)
		b = append(b, '|')
		var picked [5]uint64
		for i := range picked {
		draw:
			picked[i] = name.intn(uint64(len(colors)))
			for j := range i {
				if picked[j] == picked[i] {
					goto draw
				}
			}
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, colors[picked[i]]...)
		}
		m := mfgr.between(1, 5)
		b = append(b, "|Manufacturer#"...)
		b = appendInt(b, m)
		b = append(b, "|Brand#"...)
		b = appendInt(b, m)
		b = appendInt(b, brand.between(1, 5))
		b = append(b, '|')
		b = append(b, typeSyllable1[typ.intn(uint64(len(typeSyllable1)))]...)
		b = append(b, ' ')
		b = append(b, typeSyllable2[typ.intn(uint64(len(typeSyllable2)))]...)
		b = append(b, ' ')
		b = append(b, typeSyllable3[typ.intn(uint64(len(typeSyllable3)))]...)
		b = append(b, '|')
		b = appendInt(b, size.between(1, 50))
		b = append(b, '|')
		b = append(b, containerSyllable1[cntr.intn(uint64(len(containerSyllable1)))]...)
		b = append(b, ' ')
		b = append(b, containerSyllable2[cntr.intn(uint64(len(containerSyllable2)))]...)
		b = append(b, '|')
		b = appendMoney(b, retailPrice(key))
		b = append(b, '|')
		b = appendText(b, &cmt, 5, 22)
		b = append(b, '\n')

		for i := range int64(4) {
			ps = appendInt(ps, key)
			ps = append(ps, '|')
			ps = appendInt(ps, g.partSupplier(key, i))
			ps = append(ps, '|')
			ps = appendInt(ps, qty.between(1, 9999))
			ps = append(ps, '|')
			ps = appendMoney(ps, cost.between(100, 100000))
			ps = append(ps, '|')
			ps = appendText(ps, &pscmt, 49, 198)
			ps = append(ps, '\n')
		}
	}
	c.bufs[0], c.bufs[1] = b, ps
	c.rows[0], c.rows[1] = last-first+1, 4*(last-first+1)
}

// Columns of CUSTOMER with a stream of their own.
const (
	cAddress = iota
	cNation
	cPhone
	cAcctbal
	cSegment
	cComment
)

func (g *generator) customer(k int64, c *chunk) {
	var addr, nation, phone, bal, seg, cmt stream
	addr.seed(tableCustomer, cAddress, k)
	nation.seed(tableCustomer, cNation, k)
	phone.seed(tableCustomer, cPhone, k)
	bal.seed(tableCustomer, cAcctbal, k)
	seg.seed(tableCustomer, cSegment, k)
	cmt.seed(tableCustomer, cComment, k)
	b := c.bufs[0]
	first, last := chunkSpan(k, g.customers)
	for key := first; key <= last; key++ {
		b = appendInt(b, key)
		b = append(b, "|Customer#"...)
		b = appendKey9(b, key)
		b = append(b, '|')
		b = appendVString(b, &addr, 10, 40)
		b = append(b, '|')
		nk := nation.between(0, int64(len(nations)-1))
		b = appendInt(b, nk)
		b = append(b, '|')
		b = appendPhone(b, &phone, nk)
		b = append(b, '|')
		b = appendMoney(b, bal.between(-99999, 999999))
		b = append(b, '|')
		b = append(b, segments[seg.intn(uint64(len(segments)))]...)
		b = append(b, '|')
		b = appendText(b, &cmt, 29, 116)
		b = append(b, '\n')
	}
	c.bufs[0], c.rows[0] = b, last-first+1
}

// Columns of ORDERS and LINEITEM with a stream of their own.
const (
	oCustkey = iota
	oOrderdate
	oPriority
	oClerk
	oComment
	oLines
	lPartkey
	lSupplier
	lQuantity
	lDiscount
	lTax
	lShipdate
	lCommitdate
	lReceiptdate
	lReturnflag
	lShipinstruct
	lShipmode
	lComment
)

// orderKey is the key of the n-th order, n from 1: of every 32 keys only
// the first 8 are used (clause 4.2.3, O_ORDERKEY), as dbgen makes them.
func orderKey(n int64) int64 {
	return n>>3<<5 | n&7
}

func (g *generator) order(k int64, c *chunk) {
	var cust, date, prio, clerk, cmt, lines stream
	var part, supp, qty, disc, tax, ship, commit, receipt, flag, instr, mode, lcmt stream
	cust.seed(tableOrders, oCustkey, k)
	date.seed(tableOrders, oOrderdate, k)
	prio.seed(tableOrders, oPriority, k)
	clerk.seed(tableOrders, oClerk, k)
	cmt.seed(tableOrders, oComment, k)
	lines.seed(tableOrders, oLines, k)
	part.seed(tableOrders, lPartkey, k)
	supp.seed(tableOrders, lSupplier, k)
	qty.seed(tableOrders, lQuantity, k)
	disc.seed(tableOrders, lDiscount, k)
	tax.seed(tableOrders, lTax, k)
	ship.seed(tableOrders, lShipdate, k)
	commit.seed(tableOrders, lCommitdate, k)
	receipt.seed(tableOrders, lReceiptdate, k)
	flag.seed(tableOrders, lReturnflag, k)
	instr.seed(tableOrders, lShipinstruct, k)
	mode.seed(tableOrders, lShipmode, k)
	lcmt.seed(tableOrders, lComment, k)

	// O_CUSTKEY is uniform over the customers whose key is not a
	// multiple of 3: the j-th of them, from 0, is 3*(j/2) + j%2 + 1.
	ordering := uint64(g.customers - g.customers/3)

	b, l := c.bufs[0], c.bufs[1]
	var nlines int64
	first, last := chunkSpan(k, g.orders)
	for n := first; n <= last; n++ {
		key := orderKey(n)
		od := int(date.between(0, int64(endDate-151)))
		var total int64 // in 1/10,000 of a cent
		var open, filled int
		cnt := lines.between(1, 7)
		for ln := int64(1); ln <= cnt; ln++ {
			pk := part.between(1, g.parts)
			q := qty.between(1, 50)
			d := disc.between(0, 10)
			t := tax.between(0, 8)
			sd := od + int(ship.between(1, 121))
			cd := od + int(commit.between(30, 90))
			rd := sd + int(receipt.between(1, 30))
			ext := q * retailPrice(pk)
			total += ext * (100 - d) * (100 + t)

			l = appendInt(l, key)
			l = append(l, '|')
			l = appendInt(l, pk)
			l = append(l, '|')
			l = appendInt(l, g.partSupplier(pk, supp.between(0, 3)))
			l = append(l, '|')
			l = appendInt(l, ln)
			l = append(l, '|')
			l = appendInt(l, q)
			l = append(l, '|')
			l = appendMoney(l, ext)
			l = append(l, '|')
			l = appendMoney(l, d)
			l = append(l, '|')
			l = appendMoney(l, t)
			l = append(l, '|')
			switch {
			case rd > currentDate:
				l = append(l, 'N')
			case flag.intn(2) == 0:
				l = append(l, 'R')
			default:
				l = append(l, 'A')
			}
			if sd > currentDate {
				l = append(l, "|O|"...)
				open++
			} else {
				l = append(l, "|F|"...)
				filled++
			}
			l = appendDate(l, sd)
			l = append(l, '|')
			l = appendDate(l, cd)
			l = append(l, '|')
			l = appendDate(l, rd)
			l = append(l, '|')
			l = append(l, instructions[instr.intn(uint64(len(instructions)))]...)
			l = append(l, '|')
			l = append(l, modes[mode.intn(uint64(len(modes)))]...)
			l = append(l, '|')
			l = appendText(l, &lcmt, 10, 43)
			l = append(l, '\n')
		}
		nlines += cnt

		j := int64(cust.intn(ordering))
		b = appendInt(b, key)
		b = append(b, '|')
		b = appendInt(b, 3*(j/2)+j%2+1)
		switch {
		case filled == 0:
			b = append(b, "|O|"...)
		case open == 0:
			b = append(b, "|F|"...)
		default:
			b = append(b, "|P|"...)
		}
		b = appendMoney(b, (total+5000)/10000)
		b = append(b, '|')
		b = appendDate(b, od)
		b = append(b, '|')
		b = append(b, priorities[prio.intn(uint64(len(priorities)))]...)
		b = append(b, "|Clerk#"...)
		b = appendKey9(b, clerk.between(1, g.clerks))
		b = append(b, "|0|"...)
		b = appendText(b, &cmt, 19, 78)
		b = append(b, '\n')
	}
	c.bufs[0], c.bufs[1] = b, l
	c.rows[0], c.rows[1] = last-first+1, nlines
}

// chunkSpan returns the first and last row number, from 1, of chunk k of
// a table of rows rows.
func chunkSpan(k, rows int64) (first, last int64) {
	first = k*chunkRows + 1
	last = min(first+chunkRows-1, rows)
	return first, last
}
