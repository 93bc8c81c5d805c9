package gen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests read one generation at scale factor 0.01, made by TestMain.
const testSF = 0.01

var (
	testDir    string
	testCounts []Count
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tpchgen-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testDir = dir
	testCounts, err = Generate(dir, testSF, Options{Workers: 3})
	code := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func readTable(t *testing.T, table string, fields int) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testDir, table+".tbl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s: empty, or no line break at the end", table)
	}
	if i := bytes.IndexAny(b, "\"\\\r\x00"); i >= 0 {
		t.Fatalf("%s: byte %q at %d: a field would need quoting", table, b[i], i)
	}
	var rows [][]string
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "|")
		if len(f) != fields {
			t.Fatalf("%s: %d fields, want %d: %q", table, len(f), fields, line)
		}
		for i, v := range f {
			if v == "" {
				t.Fatalf("%s: field %d empty (NULL to COPY): %q", table, i+1, line)
			}
		}
		rows = append(rows, f)
	}
	return rows
}

// A checker collects the failures of a table's rows, up to a few.
type checker struct {
	t     *testing.T
	table string
	fails int
}

func (c *checker) check(ok bool, row []string, format string, args ...any) {
	c.t.Helper()
	if ok {
		return
	}
	c.fails++
	if c.fails <= 10 {
		c.t.Errorf("%s %s: %s", c.table, strings.Join(row, "|"), fmt.Sprintf(format, args...))
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var moneyRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)\.[0-9]{2}$`)

// cents parses an exact decimal with two digits after the point.
func cents(t *testing.T, s string) int64 {
	t.Helper()
	if !moneyRE.MatchString(s) {
		t.Fatalf("%q is not a decimal with two digits after the point", s)
	}
	n := atoi(t, strings.Replace(s, ".", "", 1))
	if n == 0 && s[0] == '-' {
		t.Fatalf("%q: negative zero", s)
	}
	return n
}

func date(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func addDays(d time.Time, n int) time.Time { return d.AddDate(0, 0, n) }

func inDays(d, from, to time.Time) bool { return !d.Before(from) && !d.After(to) }

var phoneRE = regexp.MustCompile(`^([0-9]{2})-[1-9][0-9]{2}-[1-9][0-9]{2}-[1-9][0-9]{3}$`)

func checkPhone(c *checker, row []string, phone, nation string) {
	c.t.Helper()
	m := phoneRE.FindStringSubmatch(phone)
	c.check(m != nil && m[1] == strconv.Itoa(int(atoi(c.t, nation))+10), row, "phone %q for nation %s", phone, nation)
}

func checkLen(c *checker, row []string, what, s string, lo, hi int) {
	c.t.Helper()
	c.check(len(s) >= lo && len(s) <= hi, row, "%s of length %d, want %d..%d", what, len(s), lo, hi)
}

func checkVString(c *checker, row []string, what, s string) {
	c.t.Helper()
	checkLen(c, row, what, s, 10, 40)
	c.check(strings.Trim(s, vchars) == "", row, "%s %q has characters out of the v-string set", what, s)
}

func checkMoney(c *checker, row []string, what string, v, lo, hi int64) {
	c.t.Helper()
	c.check(v >= lo && v <= hi, row, "%s %d cents out of [%d, %d]", what, v, lo, hi)
}

func TestRowCounts(t *testing.T) {
	want := map[string]int64{
		"region": 5, "nation": 25, "supplier": 100, "part": 2000,
		"partsupp": 8000, "customer": 1500, "orders": 15000,
	}
	var got []string
	for _, c := range testCounts {
		got = append(got, c.Table)
		lines := int64(len(readTable(t, c.Table, len(fields[c.Table]))))
		if lines != c.Rows {
			t.Errorf("%s: %d lines in the file, %d rows reported", c.Table, lines, c.Rows)
		}
		if w, ok := want[c.Table]; ok {
			if c.Rows != w || Rows(testSF, c.Table) != w {
				t.Errorf("%s: %d rows (Rows says %d), want %d", c.Table, c.Rows, Rows(testSF, c.Table), w)
			}
			continue
		}
		// LINEITEM: 1 to 7 lines an order, 4 on average; 15,000 orders
		// give 60,000 ± 245 (one standard deviation).
		if c.Rows < 59_000 || c.Rows > 61_000 {
			t.Errorf("lineitem: %d rows, want 60,000 ± 1,000", c.Rows)
		}
	}
	if !slices.Equal(got, Tables) {
		t.Errorf("tables %v, want %v", got, Tables)
	}
}

// fields are the columns of each table, as schema.sql has them.
var fields = map[string][]string{
	"region":   {"r_regionkey", "r_name", "r_comment"},
	"nation":   {"n_nationkey", "n_name", "n_regionkey", "n_comment"},
	"supplier": {"s_suppkey", "s_name", "s_address", "s_nationkey", "s_phone", "s_acctbal", "s_comment"},
	"part":     {"p_partkey", "p_name", "p_mfgr", "p_brand", "p_type", "p_size", "p_container", "p_retailprice", "p_comment"},
	"partsupp": {"ps_partkey", "ps_suppkey", "ps_availqty", "ps_supplycost", "ps_comment"},
	"customer": {"c_custkey", "c_name", "c_address", "c_nationkey", "c_phone", "c_acctbal", "c_mktsegment", "c_comment"},
	"orders":   {"o_orderkey", "o_custkey", "o_orderstatus", "o_totalprice", "o_orderdate", "o_orderpriority", "o_clerk", "o_shippriority", "o_comment"},
	"lineitem": {"l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipinstruct", "l_shipmode", "l_comment"},
}

// TestDeterministic generates the data again with another number of
// workers, and one table alone, and compares the bytes; and it compares
// them with the hashes of the data this generator has always made, which
// hold on every platform.
func TestDeterministic(t *testing.T) {
	again := t.TempDir()
	if _, err := Generate(again, testSF, Options{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	alone := t.TempDir()
	if _, err := Generate(alone, testSF, Options{Tables: []string{"lineitem"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(alone, "orders.tbl")); !os.IsNotExist(err) {
		t.Errorf("orders.tbl written when only lineitem was asked for (%v)", err)
	}
	for _, table := range Tables {
		a, b := fileHash(t, testDir, table), fileHash(t, again, table)
		if a != b {
			t.Errorf("%s: two generations differ: %s, %s", table, a, b)
		}
		if table == "lineitem" {
			if c := fileHash(t, alone, table); c != a {
				t.Errorf("lineitem alone differs: %s, %s", c, a)
			}
		}
		if want := goldenHashes[table]; a != want {
			t.Errorf("%s: sha256 %s, want %s: the data of SF %v changed", table, a, want, testSF)
		}
	}
}

// goldenHashes are the SHA-256 sums of the tables at scale factor 0.01.
var goldenHashes = map[string]string{
	"region":   "41abfc0fdc56ef4f7dc29ff8416fa5991b858fdbab6862932fc71f895b67a8a8",
	"nation":   "e13de1497c892ceec936e0547d6e8f8e30031d6145238b379bffbda40edeee67",
	"supplier": "c750e622652a217e268fcd2c5ce10eb3cd5e342c06b3707fa49258b3381a7298",
	"part":     "18650507aa57d8b17c8f652fd84d1a27dfad020c7037b0f3386d6292bc6b165f",
	"partsupp": "591d669a65cb9cc7eef13a163394865ee0d8407989e065128fcb0bbf8b2e3ee2",
	"customer": "2d8a5ba6dd459fc874126e43e18723dcb8806c3e7189f45d7d99c8a291dd7653",
	"orders":   "014431b891a52a82cd7baa1a1d0d31f4256f3c7b82a2b48bb9b26915d325c857",
	"lineitem": "c199d06079dcca27c439a6c5fd26ea14a0dec57c2dadb062632145a26ea3a2a3",
}

func fileHash(t *testing.T, dir, table string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, table+".tbl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestRegionNation(t *testing.T) {
	wantRegions := []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	c := &checker{t: t, table: "region"}
	for i, r := range readTable(t, "region", 3) {
		c.check(r[0] == strconv.Itoa(i) && r[1] == wantRegions[i], r, "want %d|%s", i, wantRegions[i])
		checkLen(c, r, "r_comment", r[2], 31, 115)
	}
	// Clause 4.2.3: the nations, their keys and their regions' keys.
	wantNations := "0 ALGERIA 0,1 ARGENTINA 1,2 BRAZIL 1,3 CANADA 1,4 EGYPT 4,5 ETHIOPIA 0," +
		"6 FRANCE 3,7 GERMANY 3,8 INDIA 2,9 INDONESIA 2,10 IRAN 4,11 IRAQ 4,12 JAPAN 2," +
		"13 JORDAN 4,14 KENYA 0,15 MOROCCO 0,16 MOZAMBIQUE 0,17 PERU 1,18 CHINA 2," +
		"19 ROMANIA 3,20 SAUDI_ARABIA 4,21 VIETNAM 2,22 RUSSIA 3,23 UNITED_KINGDOM 3,24 UNITED_STATES 1"
	var got []string
	c = &checker{t: t, table: "nation"}
	for _, r := range readTable(t, "nation", 4) {
		got = append(got, r[0]+" "+strings.ReplaceAll(r[1], " ", "_")+" "+r[2])
		checkLen(c, r, "n_comment", r[3], 31, 114)
	}
	if g := strings.Join(got, ","); g != wantNations {
		t.Errorf("nations:\n%s\nwant\n%s", g, wantNations)
	}
}

func TestSupplier(t *testing.T) {
	c := &checker{t: t, table: "supplier"}
	var complaints, recommends int
	complaintsRE := regexp.MustCompile(`Customer.*Complaints`)
	recommendsRE := regexp.MustCompile(`Customer.*Recommends`)
	for i, r := range readTable(t, "supplier", 7) {
		key := int64(i + 1)
		c.check(atoi(t, r[0]) == key, r, "key, want %d", key)
		c.check(r[1] == fmt.Sprintf("Supplier#%09d", key), r, "name")
		checkVString(c, r, "s_address", r[2])
		nk := atoi(t, r[3])
		c.check(nk >= 0 && nk <= 24, r, "nation key")
		checkPhone(c, r, r[4], r[3])
		checkMoney(c, r, "s_acctbal", cents(t, r[5]), -99999, 999999)
		checkLen(c, r, "s_comment", r[6], 25, 100)
		if complaintsRE.MatchString(r[6]) {
			complaints++
		}
		if recommendsRE.MatchString(r[6]) {
			recommends++
		}
	}
	// SF × 5 of each, but at least one.
	if complaints != 1 || recommends != 1 {
		t.Errorf("%d comments with Customer...Complaints and %d with Customer...Recommends, want 1 and 1", complaints, recommends)
	}
}

func TestPartPartsupp(t *testing.T) {
	c := &checker{t: t, table: "part"}
	var green, forest int
	typeRE := regexp.MustCompile(`^(STANDARD|SMALL|MEDIUM|LARGE|ECONOMY|PROMO) (ANODIZED|BURNISHED|PLATED|POLISHED|BRUSHED) (TIN|NICKEL|BRASS|STEEL|COPPER)$`)
	containerRE := regexp.MustCompile(`^(SM|LG|MED|JUMBO|WRAP) (CASE|BOX|BAG|JAR|PKG|PACK|CAN|DRUM)$`)
	parts := readTable(t, "part", 9)
	for i, r := range parts {
		key := int64(i + 1)
		c.check(atoi(t, r[0]) == key, r, "key, want %d", key)
		words := strings.Split(r[1], " ")
		distinct := slices.Compact(slices.Sorted(slices.Values(words)))
		c.check(len(words) == 5 && len(distinct) == 5, r, "p_name not 5 distinct words")
		for _, w := range words {
			c.check(slices.Contains(colors[:], w), r, "p_name word %q not a color", w)
		}
		if strings.Contains(r[1], "green") {
			green++
		}
		if strings.HasPrefix(r[1], "forest") {
			forest++
		}
		m, ok := strings.CutPrefix(r[2], "Manufacturer#")
		c.check(ok && len(m) == 1 && m >= "1" && m <= "5", r, "p_mfgr")
		brand, ok := strings.CutPrefix(r[3], "Brand#")
		c.check(ok && len(brand) == 2 && brand[:1] == m && brand[1] >= '1' && brand[1] <= '5', r, "p_brand")
		c.check(typeRE.MatchString(r[4]), r, "p_type")
		size := atoi(t, r[5])
		c.check(size >= 1 && size <= 50, r, "p_size")
		c.check(containerRE.MatchString(r[6]), r, "p_container")
		// P_RETAILPRICE = (90000 + ((P_PARTKEY/10) modulo 20001) +
		// 100 * (P_PARTKEY modulo 1000)) / 100
		c.check(cents(t, r[7]) == 90000+(key/10)%20001+100*(key%1000), r, "p_retailprice")
		checkLen(c, r, "p_comment", r[8], 5, 22)
	}
	// Queries 9 and 20: 5 of 92 colors in a name, 1 of 92 first.
	if green < 60 || green > 160 || forest < 8 || forest > 40 {
		t.Errorf("%d names with green (want about 108), %d starting with forest (about 22)", green, forest)
	}

	c = &checker{t: t, table: "partsupp"}
	const s = 100 // suppliers
	ps := readTable(t, "partsupp", 5)
	seen := map[[2]int64]bool{}
	for i, r := range ps {
		pk, sk := atoi(t, r[0]), atoi(t, r[1])
		c.check(pk == int64(i/4+1), r, "ps_partkey, want %d", i/4+1)
		// PS_SUPPKEY = (ps_partkey + (i * (( S/4 ) + (int)(ps_partkey-1 )/S))))
		// modulo S + 1, for the i-th supplier of the part.
		n := int64(i % 4)
		c.check(sk == (pk+n*(s/4+(pk-1)/s))%s+1, r, "ps_suppkey")
		c.check(!seen[[2]int64{pk, sk}], r, "duplicate primary key")
		seen[[2]int64{pk, sk}] = true
		q := atoi(t, r[2])
		c.check(q >= 1 && q <= 9999, r, "ps_availqty")
		checkMoney(c, r, "ps_supplycost", cents(t, r[3]), 100, 100000)
		checkLen(c, r, "ps_comment", r[4], 49, 198)
	}
}

func TestCustomer(t *testing.T) {
	c := &checker{t: t, table: "customer"}
	for i, r := range readTable(t, "customer", 8) {
		key := int64(i + 1)
		c.check(atoi(t, r[0]) == key, r, "key, want %d", key)
		c.check(r[1] == fmt.Sprintf("Customer#%09d", key), r, "name")
		checkVString(c, r, "c_address", r[2])
		nk := atoi(t, r[3])
		c.check(nk >= 0 && nk <= 24, r, "nation key")
		checkPhone(c, r, r[4], r[3])
		checkMoney(c, r, "c_acctbal", cents(t, r[5]), -99999, 999999)
		c.check(slices.Contains([]string{"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"}, r[6]), r, "c_mktsegment")
		checkLen(c, r, "c_comment", r[7], 29, 116)
	}
}

// TestOrdersLineitem checks every order and line: keys, dates, derived
// flags and prices, and that the keys they hold name existing rows.
func TestOrdersLineitem(t *testing.T) {
	var (
		start   = day(1992, 1, 1)
		current = day(1995, 6, 17)
		end     = day(1998, 12, 31)
	)
	partsupp := map[[2]string]bool{}
	for _, r := range readTable(t, "partsupp", 5) {
		partsupp[[2]string{r[0], r[1]}] = true
	}
	lines := map[string][][]string{}
	c := &checker{t: t, table: "lineitem"}
	modes := []string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
	instructions := []string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	for _, r := range readTable(t, "lineitem", 16) {
		lines[r[0]] = append(lines[r[0]], r)
		c.check(partsupp[[2]string{r[1], r[2]}], r, "(l_partkey, l_suppkey) not in partsupp")
		c.check(atoi(t, r[3]) == int64(len(lines[r[0]])), r, "l_linenumber, want %d", len(lines[r[0]]))
		q := atoi(t, r[4])
		c.check(q >= 1 && q <= 50, r, "l_quantity")
		pk := atoi(t, r[1])
		c.check(cents(t, r[5]) == q*(90000+(pk/10)%20001+100*(pk%1000)), r, "l_extendedprice is not quantity × retail price")
		d, tx := cents(t, r[6]), cents(t, r[7])
		c.check(d >= 0 && d <= 10, r, "l_discount")
		c.check(tx >= 0 && tx <= 8, r, "l_tax")
		ship, receipt := date(t, r[10]), date(t, r[12])
		c.check(inDays(receipt, addDays(ship, 1), addDays(ship, 30)), r, "l_receiptdate not shipdate + 1..30")
		if receipt.After(current) {
			c.check(r[8] == "N", r, "l_returnflag, want N")
		} else {
			c.check(r[8] == "R" || r[8] == "A", r, "l_returnflag, want R or A")
		}
		c.check(r[9] == map[bool]string{true: "O", false: "F"}[ship.After(current)], r, "l_linestatus")
		c.check(slices.Contains(instructions, r[13]), r, "l_shipinstruct")
		c.check(slices.Contains(modes, r[14]), r, "l_shipmode")
		checkLen(c, r, "l_comment", r[15], 10, 43)
	}

	o := &checker{t: t, table: "orders"}
	var special int
	specialRE := regexp.MustCompile(`special.*requests`)
	clerks := map[string]bool{}
	orders := readTable(t, "orders", 9)
	for i, r := range orders {
		// The n-th order's key: of every 32 keys, the first 8.
		n := int64(i + 1)
		key := atoi(t, r[0])
		o.check(key == n/8*32+n%8, r, "o_orderkey of order %d", n)
		ck := atoi(t, r[1])
		o.check(ck >= 1 && ck <= 1500 && ck%3 != 0, r, "o_custkey")
		od := date(t, r[4])
		o.check(inDays(od, start, addDays(end, -151)), r, "o_orderdate")
		o.check(slices.Contains([]string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}, r[5]), r, "o_orderpriority")
		clerk, ok := strings.CutPrefix(r[6], "Clerk#")
		o.check(ok && len(clerk) == 9 && atoi(t, clerk) >= 1 && atoi(t, clerk) <= 10, r, "o_clerk")
		clerks[r[6]] = true
		o.check(r[7] == "0", r, "o_shippriority")
		checkLen(o, r, "o_comment", r[8], 19, 78)
		if specialRE.MatchString(r[8]) {
			special++
		}

		ls := lines[r[0]]
		o.check(len(ls) >= 1 && len(ls) <= 7, r, "%d lines", len(ls))
		var exact int64 // the sum of the lines' prices, in 1/10,000 of a cent
		status := map[string]int{}
		for _, l := range ls {
			ship, commit := date(t, l[10]), date(t, l[11])
			c.check(inDays(ship, addDays(od, 1), addDays(od, 121)), l, "l_shipdate not orderdate %s + 1..121", r[4])
			c.check(inDays(commit, addDays(od, 30), addDays(od, 90)), l, "l_commitdate not orderdate %s + 30..90", r[4])
			exact += cents(t, l[5]) * (100 - cents(t, l[6])) * (100 + cents(t, l[7]))
			status[l[9]]++
		}
		// O_TOTALPRICE = sum(L_EXTENDEDPRICE * (1+L_TAX) * (1-L_DISCOUNT)),
		// rounded to the cent.
		total := cents(t, r[3])
		o.check(math.Abs(float64(total*10000-exact)) <= 5000, r, "o_totalprice, want %.4f", float64(exact)/1e6)
		want := "P"
		if status["O"] == 0 {
			want = "F"
		} else if status["F"] == 0 {
			want = "O"
		}
		o.check(r[2] == want, r, "o_orderstatus, want %s", want)
		delete(lines, r[0])
	}
	if len(lines) > 0 {
		t.Errorf("%d orders of lineitem are not in orders", len(lines))
	}
	if len(clerks) != 10 {
		t.Errorf("%d clerks, want 10", len(clerks))
	}
	// Query 13 removes the orders whose comment matches
	// '%special%requests%': about 1% with dbgen.
	if f := float64(special) / float64(len(orders)); f < 0.005 || f > 0.02 {
		t.Errorf("%.2f%% of order comments match special%%requests, want about 1%%", 100*f)
	}
}

func TestFormat(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", -5: "-0.05", 100: "1.00", -99999: "-999.99", 123450: "1234.50"} {
		if got := string(appendMoney(nil, cents)); got != want {
			t.Errorf("appendMoney(%d) = %q, want %q", cents, got, want)
		}
	}
	if got := string(appendDate(nil, 0)) + " " + string(appendDate(nil, currentDate)) + " " + string(appendDate(nil, endDate)); got != "1992-01-01 1995-06-17 1998-12-31" {
		t.Errorf("dates: %s", got)
	}
	var keys []int64
	for n := int64(1); n <= 10; n++ {
		keys = append(keys, orderKey(n))
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 32, 33, 34}; !slices.Equal(keys, want) {
		t.Errorf("order keys %v, want %v", keys, want)
	}
}

func TestBadScale(t *testing.T) {
	for _, sf := range []float64{0, -1, 0.001, math.NaN()} {
		if _, err := Write(sf, nil, Options{}); err == nil {
			t.Errorf("scale factor %v accepted", sf)
		}
	}
	if _, err := Write(testSF, nil, Options{Tables: []string{"lineitems"}}); err == nil {
		t.Error("unknown table accepted")
	}
}
