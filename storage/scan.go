package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/types"
)

// ScanOptions refine a scan.
type ScanOptions struct {
	// Cols are the table column ordinals to read (possibly none, as for
	// count(*)).
	Cols []int
	// Preds are conditions every returned row is known to need; chunks
	// whose zone maps rule them out are skipped. The caller still filters.
	Preds []ZonePred
	// AsOf reads a past version of the table instead of the txn's
	// snapshot (0: the snapshot). It must be a retained version.
	AsOf uint64
	// Group reads only one row group of Txn.RowGroups (nil: every row).
	Group *RowGroup
	// Borrow lets a batch's columns be windows onto the chunks read
	// instead of copies (types.Vec.Window), for a reader that only reads
	// the values. Batches then end where a column's chunk does.
	Borrow bool
	// Hollow lists table columns among Cols, fixed-width ones, whose
	// values the caller reads itself with DB.ReadExtent (see Extent); with
	// Borrow only. A batch of a hollow column whose chunk allows it is a
	// hollow window: NULL flags and offsets, no bytes. A chunk among whose
	// rows the scan skips some (deleted ones) stays hollow, each run of
	// visible rows a batch of its own, where those runs average 16 KiB of
	// values or more; otherwise it is read as usual.
	Hollow []int
	// HollowRowBlocks makes hollow only the chunks whose checksum blocks
	// hold one row each, for a reader of single rows (a block read for a
	// row would otherwise be read and checked whole).
	HollowRowBlocks bool
	// Cached reads chunks through the database's cache of decoded chunks
	// (Options.ChunkCacheBytes), for scans repeated over one table such as
	// exact vector searches; other scans bypass it.
	Cached bool
}

// ZonePred is the condition `column Op value`, value being row Row of Val;
// for ZoneIn, `column IN (values)`, the values being every row of Val.
type ZonePred struct {
	Col int
	Op  ZoneOp
	Val *types.Vec
	Row int
}

// ScanStats counts what scans did, for tests and EXPLAIN-like reporting.
type ScanStats struct {
	ChunksRead   atomic.Int64
	ChunksPruned atomic.Int64
	// RangeReads and RangeBytes count byte-range reads of single rows.
	RangeReads atomic.Int64
	RangeBytes atomic.Int64
	// PKLookups counts scans answered by a primary key lookup, and
	// RowIDLookups those answered by reading rows by _rowid.
	PKLookups    atomic.Int64
	RowIDLookups atomic.Int64
	// ChunkCacheHits counts random-access chunk reads the cache answered.
	ChunkCacheHits atomic.Int64
	// HollowChunks counts chunks of hollow columns given without their
	// values (ScanOptions.Hollow), and ExtentBytes the bytes ReadExtent
	// read of them (whole blocks where an extent covers part of one).
	HollowChunks atomic.Int64
	ExtentBytes  atomic.Int64
	// IndexRowsAdded counts rows added to hnsw graphs (a graph loaded
	// from its saved copy adds none).
	IndexRowsAdded atomic.Int64
	// IndexRebuilds counts vector indexes rebuilt without their deleted
	// rows.
	IndexRebuilds atomic.Int64
	// DeletionLoads counts loads of every deletion marker of a table (a
	// scan's, or a RowFetcher's once it has checked many rows).
	DeletionLoads atomic.Int64
}

// Scanner reads a table's rows from one consistent view: its fragments,
// its buffered rows and the txn's own writes, minus deleted rows.
// Fragments are read column by column, each column's chunks loaded ahead
// of use and decoded in parallel.
type Scanner struct {
	db   *DB
	txn  *Txn
	t    *TableDesc
	cols []int
	opts ScanOptions

	out *types.Batch
	// rowID places _rowid among the columns asked, if it is; cols and
	// out are then the stored columns only.
	rowID *rowIDCols
	// borrowed[j] is set while out.Cols[j] is a window onto a chunk
	// (ScanOptions.Borrow); own[j] then keeps the column's own Vec.
	borrowed []bool
	own      []types.Vec
	// hollowAt[j] is the extent of out.Cols[j] while it is a hollow
	// window (ScanOptions.Hollow); hollow is set when some column may be.
	hollowAt []Extent
	hollow   bool
	// runsTo is the fragment row up to which readRows goes on cutting
	// runs of visible rows into batches of their own, as it decided for
	// the rows it read first (see readRows).
	runsTo int64
	ids    []uint64
	xmin   []uint64 // per row, when wantXmin
	// asOf filters rows by their committing version (0: no filter);
	// curAsOf is the current source's (a branch's layers have theirs).
	asOf, curAsOf uint64
	// curFrom is the current source's from.
	curFrom uint64
	// deleted holds the ids of deleted rows, ascending.
	deleted []uint64
	// groupRange is the fragment row range of a scan of one row group.
	groupRange *[2]int64
	// wantXmin makes Next record each row's version (compaction).
	wantXmin bool
	// dropped, when not nil, collects the ids of deleted rows skipped in
	// fragments (compaction).
	dropped []uint64

	sources []scanSource
	src     int
	err     error
	closed  bool

	// pk is set for a scan answered by primary key lookups, or by
	// _rowid: pkIDs holds the ids of the rows found still to read, by
	// pkFetch into pkBatch, until pkDone.
	pk      bool
	pkDone  bool
	pkBatch *types.Batch
	pkIDs   []uint64
	pkFetch *RowFetcher

	// per-fragment state
	frag     *fragment
	mem      []*types.Vec // in-memory chunks of a writer's view
	fragXmin uint64
	ranges   [][2]int64 // row ranges of the fragment left to read
	cursors  []*colCursor
	rowIDCur *colCursor
	xminCur  *colCursor
	idBuf    []uint64
	xBuf     []uint64
	loader   *chunkLoader

	// buffered rows; bufAt is the table whose rows it is at
	it    *pebble.Iterator
	bufAt uint64
	dec   *types.RowDecoder

	// pending rows of the txn
	pend    *txnTable
	pendPos int
}

type scanSource struct {
	frag *fragment
	mem  []*types.Vec
	kind int
	// table is the table whose fragment or buffered rows these are (a
	// layer's, in a branch's view); asOf the last version of it read (0:
	// every row of the snapshot).
	table uint64
	asOf  uint64
	// from, when not 0, leaves out the rows committed at or before it
	// (a diff reads the rows of a range of versions).
	from uint64
	// own marks the txn's own writes.
	own bool
}

const (
	srcFragment = iota
	srcBuffered
	srcPending
)

// Scan returns a Scanner over table t that reads the column ordinals cols.
func (txn *Txn) Scan(t *TableDesc, cols []int) (*Scanner, error) {
	return txn.ScanWith(t, ScanOptions{Cols: cols})
}

// ScanWith returns a Scanner over table t.
func (txn *Txn) ScanWith(t *TableDesc, opts ScanOptions) (*Scanner, error) {
	if err := txn.check(); err != nil {
		return nil, err
	}
	if opts.AsOf == 0 {
		opts.AsOf = t.AsOf
	}
	for _, c := range opts.Cols {
		if c < 0 || c > RowIDColumn(t) {
			return nil, assertf("scan of %q: column %d out of range", t.Name, c)
		}
	}
	if opts.AsOf == 0 && opts.Group == nil {
		// _rowid equal to a value or IN a list: the rows read by id (not
		// in a branch's view, whose layers hold rows it does not read).
		if ids, ok := rowIDLookup(t, opts.Preds); ok && t.Branch == "" {
			txn.db.stats.RowIDLookups.Add(1)
			return txn.lookupScan(t, opts, func(s *Scanner) error { return s.startIDScan(txn, ids) })
		}
		// Equalities on the whole primary key, or the key IN a list: at
		// most one row per key, read by id.
		if keys, ok := pkLookupKeys(t, opts.Preds); ok {
			return txn.lookupScan(t, opts, func(s *Scanner) error { return s.startPKScan(txn, keys) })
		}
	}
	s := newScanner(txn.db, t, opts)
	s.txn = txn
	r := pebble.Reader(txn.snap)
	if opts.AsOf != 0 {
		head, err := headVersion(r, t.ID)
		if err != nil {
			return nil, err
		}
		if opts.AsOf > head {
			return nil, pgerror.Newf(pgerror.InvalidParameterValue, "table %q has no version %d (its latest is %d)", t.Name, opts.AsOf, head)
		}
		key := appendIDKey(nil, t.ID, tagVersion, opts.AsOf)
		_, closer, err := txn.snap.Get(key)
		if err != nil {
			return nil, pgerror.Newf(pgerror.InvalidParameterValue, "version %d of table %q is not retained", opts.AsOf, t.Name)
		}
		closer.Close()
		s.asOf = opts.AsOf
	}
	if err := s.loadView(r, s.asOf); err != nil {
		return nil, err
	}
	// A branch's layers first, each read at the version the next forked
	// at, then its own rows.
	for _, l := range t.Base {
		lt := *t
		lt.ID = l.Table
		frags, err := txn.liveFragments(&lt)
		if err != nil {
			return nil, err
		}
		for _, f := range frags {
			s.sources = append(s.sources, scanSource{frag: f, kind: srcFragment, table: l.Table, asOf: l.Version})
		}
		s.sources = append(s.sources, scanSource{kind: srcBuffered, table: l.Table, asOf: l.Version})
	}
	frags, err := txn.liveFragments(t)
	if err != nil {
		return nil, err
	}
	for _, f := range frags {
		s.sources = append(s.sources, scanSource{frag: f, kind: srcFragment, table: t.ID, asOf: s.asOf})
	}
	s.sources = append(s.sources, scanSource{kind: srcBuffered, table: t.ID, asOf: s.asOf})
	if tt := txn.tables[t.ID]; tt != nil && s.asOf == 0 {
		if len(tt.deleted)+len(tt.ownDel) > 0 {
			for id := range tt.deleted {
				s.deleted = append(s.deleted, id)
			}
			for id := range tt.ownDel {
				s.deleted = append(s.deleted, id)
			}
			sort.Slice(s.deleted, func(i, j int) bool { return s.deleted[i] < s.deleted[j] })
		}
		if tt.w != nil {
			f, mem, err := tt.w.view()
			if err != nil {
				return nil, err
			}
			f.Xmin = 1
			s.sources = append(s.sources, scanSource{frag: f, mem: mem, kind: srcFragment, table: t.ID, own: true})
		}
		if len(tt.pendingIDs) > 0 {
			s.pend = tt
			s.sources = append(s.sources, scanSource{kind: srcPending, table: t.ID, own: true})
		}
	}
	if opts.Group != nil {
		s.restrictToGroup(opts.Group)
	}
	it, err := r.NewIter(&pebble.IterOptions{})
	if err != nil {
		return nil, ioErrorf(err, "scanning %q", t.Name)
	}
	s.it = it
	return s, nil
}

// lookupScan returns a Scanner that reads the rows start finds by id
// instead of scanning t.
func (txn *Txn) lookupScan(t *TableDesc, opts ScanOptions, start func(*Scanner) error) (*Scanner, error) {
	s := newScannerCap(txn.db, t, opts, 1)
	s.txn = txn
	s.pk = true
	if err := start(s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func math64(v uint64) uint64 {
	if v == 0 {
		return ^uint64(0)
	}
	return v
}

func newScanner(db *DB, t *TableDesc, opts ScanOptions) *Scanner {
	return newScannerCap(db, t, opts, types.BatchSize)
}

// newScannerCap is newScanner with room for capacity rows in its batch,
// for scans known to return few.
func newScannerCap(db *DB, t *TableDesc, opts ScanOptions, capacity int) *Scanner {
	var rowID *rowIDCols
	opts.Cols, rowID = splitRowID(t, opts.Cols)
	s := &Scanner{db: db, t: t, cols: opts.Cols, opts: opts, rowID: rowID, dec: types.NewRowDecoder(t.ColumnTypes())}
	ts := make([]types.Type, len(opts.Cols))
	for j, c := range opts.Cols {
		ts[j] = t.Columns[c].Type
	}
	s.out = types.NewBatch(ts, capacity)
	s.dec.Bind(opts.Cols, s.out)
	if opts.Borrow {
		s.borrowed = make([]bool, len(opts.Cols))
		s.own = make([]types.Vec, len(opts.Cols))
		s.hollow = len(opts.Hollow) > 0
		s.hollowAt = make([]Extent, len(opts.Cols))
	}
	s.loader = newChunkLoader(db, t)
	s.loader.cached = opts.Cached
	return s
}

// loadView reads the deletion markers of the scanner's view: those of
// its table with a version at most asOf (0: all of them), and for a
// branch, those of each layer up to the layer's version.
func (s *Scanner) loadView(r pebble.Reader, asOf uint64) error {
	for _, l := range s.t.Base {
		if err := s.loadDeletedOf(r, l.Table, l.Version); err != nil {
			return err
		}
	}
	if err := s.loadDeletedOf(r, s.t.ID, math64(asOf)); err != nil {
		return err
	}
	if len(s.t.Base) > 0 {
		slices.Sort(s.deleted)
		s.deleted = slices.Compact(s.deleted)
	}
	return nil
}

// loadDeleted reads the deletion markers with a version at most upTo.
func (s *Scanner) loadDeleted(r pebble.Reader, upTo uint64) error {
	return s.loadDeletedOf(r, s.t.ID, upTo)
}

// loadDeletedOf reads the deletion markers of table id with a version
// at most upTo.
func (s *Scanner) loadDeletedOf(r pebble.Reader, id, upTo uint64) error {
	s.db.stats.DeletionLoads.Add(1)
	lo, hi := sectionSpan(id, tagDelete)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return ioErrorf(err, "scanning %q", s.t.Name)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		rid, ok := idFromKey(it.Key())
		x, n := binary.Uvarint(it.Value())
		if !ok || n <= 0 {
			return corruptionf("table %q: bad deletion marker %x", s.t.Name, it.Key())
		}
		if x <= upTo {
			s.deleted = append(s.deleted, rid)
		}
	}
	return it.Error()
}

// isDeletedFrom reports whether id is deleted, searching from *pos, which
// it advances; ids must be asked in increasing order.
func (s *Scanner) isDeletedFrom(pos *int, id uint64) bool {
	d := s.deleted
	for *pos < len(d) && d[*pos] < id {
		*pos++
	}
	return *pos < len(d) && d[*pos] == id
}

// Next returns the next batch of up to types.BatchSize rows and their row
// ids, or a nil batch at the end. The batch and the slice are reused: they
// are valid until the next call to Next.
func (s *Scanner) Next() (*types.Batch, []uint64, error) {
	b, ids, err := s.next()
	if b == nil || s.rowID == nil {
		return b, ids, err
	}
	return s.rowID.merge(b, ids), ids, nil
}

// next is Next for the stored columns.
func (s *Scanner) next() (*types.Batch, []uint64, error) {
	if s.err != nil || s.closed {
		return nil, nil, s.err
	}
	if s.pk {
		return s.nextPK()
	}
	for j, b := range s.borrowed {
		if b {
			*s.out.Cols[j] = s.own[j]
			s.borrowed[j] = false
			s.hollowAt[j] = Extent{}
		}
	}
	s.out.Reset()
	s.ids = s.ids[:0]
	s.xmin = s.xmin[:0]
	for len(s.ids) == 0 && s.src < len(s.sources) {
		var done bool
		switch src := &s.sources[s.src]; src.kind {
		case srcFragment:
			done = s.readFragment(src)
		case srcBuffered:
			done = s.readBuffered(src)
		case srcPending:
			done = s.readPending()
		}
		if s.err != nil {
			return nil, nil, s.err
		}
		if done {
			s.src++
		}
	}
	if len(s.ids) == 0 {
		return nil, nil, nil
	}
	if len(s.cols) == 0 {
		s.out.SetLen(len(s.ids))
	}
	return s.out, s.ids, nil
}

// startFragment prepares the cursors and row ranges of f.
func (s *Scanner) startFragment(src *scanSource) {
	f := src.frag
	s.frag, s.mem = f, src.mem
	s.runsTo = 0
	s.ranges = s.ranges[:0]
	n := len(s.t.Columns)
	s.curAsOf, s.curFrom = src.asOf, src.from
	if src.asOf != 0 && f.Xmin != 0 && f.Xmin > src.asOf {
		return // committed after the version read
	}
	if src.from != 0 && f.Xmin != 0 && f.Xmin <= src.from {
		return // committed before the versions read
	}
	// Prune with zone maps: a chunk that can't match excludes its rows.
	keep := [][2]int64{s.fragRange(f)}
	if keep[0][0] >= keep[0][1] {
		keep = nil
	}
	for _, p := range s.opts.Preds {
		for _, ck := range f.Cols[p.Col] {
			if ck.Seq == memChunkSeq || ck.Zone.MayContain(p.Op, p.Val, p.Row) {
				continue
			}
			s.db.stats.ChunksPruned.Add(1)
			keep = cutRange(keep, ck.Start, ck.Start+ck.Rows)
		}
	}
	if src.from != 0 && f.Xmin == 0 {
		// Chunks of rows all committed before the versions read.
		for _, ck := range f.Cols[hiddenXmin(n)] {
			if ck.Seq != memChunkSeq && ck.Zone.HasMinMax && uint64(ck.Zone.MaxInt) <= src.from {
				s.db.stats.ChunksPruned.Add(1)
				keep = cutRange(keep, ck.Start, ck.Start+ck.Rows)
			}
		}
	}
	s.ranges = append(s.ranges, keep...)
	s.cursors = s.cursors[:0]
	span := s.fragRange(f)
	for _, c := range s.cols {
		cc := s.loader.cursor(f, src.mem, c, s.t.Columns[c].Type, &s.ranges, span)
		cc.hollow = s.hollow && slices.Contains(s.opts.Hollow, c)
		cc.hollowRowBlocks = s.opts.HollowRowBlocks
		s.cursors = append(s.cursors, cc)
	}
	s.rowIDCur = s.loader.cursor(f, src.mem, hiddenRowID(n), types.TypInt8, &s.ranges, span)
	s.xminCur = nil
	s.fragXmin = f.Xmin
	if f.Xmin == 0 && (src.asOf != 0 || src.from != 0 || s.wantXmin) {
		s.xminCur = s.loader.cursor(f, src.mem, hiddenXmin(n), types.TypInt8, &s.ranges, span)
	}
}

// cutRange removes [lo, hi) from the sorted ranges rs.
func cutRange(rs [][2]int64, lo, hi int64) [][2]int64 {
	out := rs[:0:0]
	for _, r := range rs {
		if r[1] <= lo || r[0] >= hi {
			out = append(out, r)
			continue
		}
		if r[0] < lo {
			out = append(out, [2]int64{r[0], lo})
		}
		if r[1] > hi {
			out = append(out, [2]int64{hi, r[1]})
		}
	}
	return out
}

// readFragment reads up to a batch of rows of the current fragment and
// reports whether the fragment is finished.
func (s *Scanner) readFragment(src *scanSource) bool {
	if s.frag != src.frag {
		s.startFragment(src)
	}
	for len(s.ids) < types.BatchSize && len(s.ranges) > 0 {
		r := &s.ranges[0]
		lo := r[0]
		hi := min(r[1], lo+int64(types.BatchSize-len(s.ids)))
		if s.borrowed != nil {
			hi = min(hi, s.chunkEnd(lo))
		}
		next, err := s.readRows(lo, hi)
		if err != nil {
			s.err = err
			return true
		}
		r[0] = next
		if r[0] == r[1] {
			s.ranges = s.ranges[1:]
		}
		if s.borrowed != nil && len(s.ids) > 0 {
			// The rows read are windows onto their chunks; more would
			// come from other chunks, to be copied.
			break
		}
	}
	if len(s.ranges) == 0 {
		s.frag = nil
		s.loader.releaseAll()
		return true
	}
	return false
}

// readRows appends the visible rows among fragment rows [lo, hi) and
// returns where it stopped: hi, or in a hollow scan (ScanOptions.Hollow),
// whose windows hold one run of rows each, the row after the first run of
// visible rows when invisible rows end it.
func (s *Scanner) readRows(lo, hi int64) (int64, error) {
	n := int(hi - lo)
	s.idBuf = s.idBuf[:0]
	if err := s.rowIDCur.readInts(lo, hi, &s.idBuf); err != nil {
		return 0, err
	}
	s.xBuf = s.xBuf[:0]
	if s.xminCur != nil {
		if err := s.xminCur.readInts(lo, hi, &s.xBuf); err != nil {
			return 0, err
		}
	}
	// Visible runs: skip deleted rows and rows newer than asOf.
	pos := sort.Search(len(s.deleted), func(i int) bool { return s.deleted[i] >= s.idBuf[0] })
	// A hollow window holds one run of rows. Where rows are invisible,
	// each run of visible rows of hollow chunks is a batch of its own
	// when the runs are long enough (minHollowRun bytes of hollow values
	// for each batch beyond the first, on average) to pay for their
	// batches; otherwise the hollow chunks these rows lie in are read
	// after all, and their runs copied. The decision holds for the rows
	// of [lo, hi) that later calls read (runsTo).
	oneRun := lo < s.runsTo
	if s.hollow && !oneRun {
		if runs, visible := s.visibleRuns(pos, n); runs > 0 && visible < n {
			width, err := s.hollowRow(lo)
			if err != nil {
				return 0, err
			}
			hollow := width > 0
			if oneRun = hollow && visible*width >= minHollowRun*(runs-1); oneRun {
				s.runsTo = hi
			} else if hollow {
				for _, cc := range s.cursors {
					if cc.hollow {
						if err := cc.unhollow(lo); err != nil {
							return 0, err
						}
					}
				}
			}
		}
	}
	run := 0
	emit := func(end int) error {
		if end <= run {
			return nil
		}
		for j, cc := range s.cursors {
			if s.borrowed != nil {
				if err := s.borrowTo(j, cc, lo+int64(run), lo+int64(end)); err != nil {
					return err
				}
				continue
			}
			if err := cc.copyTo(s.out.Cols[j], lo+int64(run), lo+int64(end)); err != nil {
				return err
			}
		}
		s.ids = append(s.ids, s.idBuf[run:end]...)
		if s.wantXmin {
			if s.xminCur != nil {
				s.xmin = append(s.xmin, s.xBuf[run:end]...)
			} else {
				for range end - run {
					s.xmin = append(s.xmin, s.fragXmin)
				}
			}
		}
		return nil
	}
	if len(s.deleted) == 0 && (s.curAsOf == 0 && s.curFrom == 0 || s.xminCur == nil) {
		return hi, emit(n) // every row is visible
	}
	for i := 0; i < n; i++ {
		del := s.isDeletedFrom(&pos, s.idBuf[i])
		if del && s.dropped != nil {
			s.dropped = append(s.dropped, s.idBuf[i])
		}
		if del || s.outOfRange(i) {
			if err := emit(i); err != nil {
				return 0, err
			}
			if oneRun && i > run {
				return lo + int64(i) + 1, nil // row i is skipped; the next batch starts after it
			}
			run = i + 1
		}
	}
	return hi, emit(n)
}

// outOfRange reports whether row i of s.idBuf was committed outside the
// versions the current fragment is read at (s.xBuf holds its version).
func (s *Scanner) outOfRange(i int) bool {
	if s.xminCur == nil {
		return false
	}
	x := s.xBuf[i]
	return s.curAsOf != 0 && x > s.curAsOf || x <= s.curFrom
}

// hollowRow returns the bytes of a row's values in the hollow columns
// whose chunks holding fragment row r are read hollow (their windows then
// holding one run each); 0 when there are none.
func (s *Scanner) hollowRow(r int64) (int, error) {
	width := 0
	for _, cc := range s.cursors {
		if cc.hollow {
			if err := cc.at(r); err != nil {
				return 0, err
			}
			if cc.hc != nil {
				width += cc.hc.h.shape.width
			}
		}
	}
	return width, nil
}

// minHollowRun is the least size, in bytes of hollow values, of the
// visible rows for each batch beyond the first that a hollow scan reads
// its runs of visible rows in, rather than reading their chunks (see
// readRows): a batch costs about as much as copying that many bytes once
// more.
const minHollowRun = 16 << 10

// visibleRuns counts the runs of visible rows among the n rows in s.idBuf
// (and s.xBuf), and those rows: rows deleted or newer than asOf are not
// visible; pos is where s.deleted reaches the first.
func (s *Scanner) visibleRuns(pos, n int) (runs, visible int) {
	if len(s.deleted) == 0 && (s.curAsOf == 0 && s.curFrom == 0 || s.xminCur == nil) {
		return min(n, 1), n
	}
	in := false
	for i := 0; i < n; i++ {
		if s.isDeletedFrom(&pos, s.idBuf[i]) || s.outOfRange(i) {
			in = false
			continue
		}
		if !in {
			runs++
		}
		in = true
		visible++
	}
	return runs, visible
}

// chunkEnd returns where the first chunk that ends after fragment row lo
// among the columns read ends (the fragment's end if none does).
func (s *Scanner) chunkEnd(lo int64) int64 {
	end := int64(math.MaxInt64)
	for _, cc := range s.cursors {
		cs := cc.f.Cols[cc.col]
		if i := cc.f.chunkIndex(cc.col, lo); i < len(cs) {
			end = min(end, cs[i].Start+cs[i].Rows)
		}
	}
	return end
}

// borrowTo appends fragment rows [lo, hi) of column j: as a window onto
// the chunk when the column has no rows yet in the batch and the rows lie
// in one stored chunk, else as a copy (after copying any window).
func (s *Scanner) borrowTo(j int, cc *colCursor, lo, hi int64) error {
	dst := s.out.Cols[j]
	if s.hollowAt[j].c != nil {
		// A hollow window holds one run (see readRows).
		return assertf("scan of %q: a hollow window of column %d would be copied", s.t.Name, s.cols[j])
	}
	if s.borrowed[j] {
		w := *dst
		*dst = s.own[j]
		appendRange(dst, &w, 0, w.Len())
		s.borrowed[j] = false
	} else if dst.Len() == 0 {
		if err := cc.at(lo); err != nil {
			return err
		}
		ck := cc.f.Cols[cc.col][cc.cur]
		if ck.Seq != memChunkSeq && hi <= ck.Start+ck.Rows {
			s.own[j] = *dst
			dst.Window(cc.vec, int(lo-ck.Start), int(hi-ck.Start))
			s.borrowed[j] = true
			if cc.hc != nil {
				s.hollowAt[j] = Extent{c: cc.hc, Row: int(lo - ck.Start), Rows: int(hi - lo)}
			}
			return nil
		}
	}
	return cc.copyTo(dst, lo, hi)
}

// Extent returns where the values of v are stored when v is a hollow
// window of this scan's last batch (ScanOptions.Hollow). Its bytes are
// then not in v: read them with DB.ReadExtent.
func (s *Scanner) Extent(v *types.Vec) (Extent, bool) {
	for j, e := range s.hollowAt {
		if e.c != nil && s.out.Cols[j] == v {
			return e, true
		}
	}
	return Extent{}, false
}

// readBuffered reads up to a batch of committed buffered rows and reports
// whether they are finished.
func (s *Scanner) readBuffered(src *scanSource) bool {
	lo, hi := sectionSpan(src.table, tagRow)
	if s.bufAt == src.table && s.it.Valid() && string(s.it.Key()) >= string(lo) {
		// continuing
	} else if s.bufAt = src.table; !s.it.SeekGE(lo) {
		return true
	}
	pos := -1
	for ; s.it.Valid() && string(s.it.Key()) < string(hi); s.it.Next() {
		if len(s.ids) == types.BatchSize {
			return false
		}
		id, ok := idFromKey(s.it.Key())
		v := s.it.Value()
		x, n := binary.Uvarint(v)
		if !ok || n <= 0 {
			s.err = corruptionf("table %q: bad buffered row %x", s.t.Name, s.it.Key())
			return true
		}
		if pos < 0 {
			pos = sort.Search(len(s.deleted), func(i int) bool { return s.deleted[i] >= id })
		}
		if s.isDeletedFrom(&pos, id) || (src.asOf != 0 && x > src.asOf) || x <= src.from {
			continue
		}
		if err := decodeBuffered(s.dec, v[n:]); err != nil {
			s.err = inTable(err, "table %q, row %d", s.t.Name, id)
			return true
		}
		s.ids = append(s.ids, id)
		if s.wantXmin {
			s.xmin = append(s.xmin, x)
		}
	}
	if err := s.it.Error(); err != nil {
		s.err = ioErrorf(err, "scanning %q", s.t.Name)
	}
	// Park the iterator past the table so a later call ends at once.
	s.it.SeekGE(hi)
	return true
}

// readPending reads the txn's own unspilled rows.
func (s *Scanner) readPending() bool {
	tt := s.pend
	pos := sort.Search(len(s.deleted), func(i int) bool { return s.deleted[i] >= tt.pendingIDs[0] })
	for s.pendPos < len(tt.pendingIDs) && len(s.ids) < types.BatchSize {
		i := s.pendPos
		s.pendPos++
		id := tt.pendingIDs[i]
		if s.isDeletedFrom(&pos, id) {
			continue
		}
		for j, c := range s.cols {
			s.out.Cols[j].AppendFrom(tt.pending.Cols[c], i)
		}
		s.ids = append(s.ids, id)
	}
	return s.pendPos == len(tt.pendingIDs)
}

// appendRange appends rows [i, j) of src to dst (same physical layout).
func appendRange(dst, src *types.Vec, i, j int) {
	dst.Nulls = append(dst.Nulls, src.Nulls[i:j]...)
	switch dst.Type.Phys() {
	case types.PhysBool:
		dst.Bools = append(dst.Bools, src.Bools[i:j]...)
	case types.PhysInt:
		dst.Ints = append(dst.Ints, src.Ints[i:j]...)
	case types.PhysFloat:
		dst.Floats = append(dst.Floats, src.Floats[i:j]...)
	default:
		if len(dst.Bytes.Offsets) == 0 {
			dst.Bytes.Offsets = append(dst.Bytes.Offsets, 0)
		}
		so := src.Bytes.Offsets
		base := dst.Bytes.Offsets[len(dst.Bytes.Offsets)-1] - so[i]
		dst.Bytes.Data = append(dst.Bytes.Data, src.Bytes.Data[so[i]:so[j]]...)
		for _, o := range so[i+1 : j+1] {
			dst.Bytes.Offsets = append(dst.Bytes.Offsets, o+base)
		}
	}
}

// Close releases the scanner. It is safe to call twice.
func (s *Scanner) Close() {
	if s.closed {
		return
	}
	s.closed = true
	s.loader.close()
	if s.pkFetch != nil {
		s.pkFetch.Close()
	}
	if s.it != nil {
		if err := s.it.Close(); err != nil && s.err == nil {
			s.err = ioErrorf(err, "closing scan of %q", s.t.Name)
		}
	}
}

// prefetchDepth is how many chunks of a column are loaded ahead of the
// one being read.
const prefetchDepth = 2

// chunkLoader loads and decodes the chunks of one scan, ahead of use, on
// background goroutines bounded by a semaphore shared by the database.
type chunkLoader struct {
	db   *DB
	t    *TableDesc
	ctx  context.Context
	stop context.CancelFunc
	curs []*colCursor
	// cached reads through the chunk cache (ScanOptions.Cached): loaded
	// Vecs are the cache's, shared and never decoded into again.
	cached bool
	// loads tracks the loading goroutines: close waits for them, so that
	// a closed scan reads nothing more.
	loads sync.WaitGroup
}

func newChunkLoader(db *DB, t *TableDesc) *chunkLoader {
	ctx, cancel := context.WithCancel(context.Background())
	return &chunkLoader{db: db, t: t, ctx: ctx, stop: cancel}
}

// cursor returns a cursor over stored column col of f. ranges are the
// fragment rows the scan has still to read: chunks outside them are not
// loaded ahead. span is the rows of f the scan reads at most (a row
// group's, or all of them).
func (l *chunkLoader) cursor(f *fragment, mem []*types.Vec, col int, typ types.Type, ranges *[][2]int64, span [2]int64) *colCursor {
	cc := &colCursor{l: l, f: f, col: col, typ: typ, cur: -1, ranges: ranges, span: span}
	if mem != nil {
		cc.mem = mem[col]
	}
	l.curs = append(l.curs, cc)
	return cc
}

// releaseAll drops the cursors of a finished fragment.
func (l *chunkLoader) releaseAll() {
	for _, cc := range l.curs {
		cc.release()
	}
	l.curs = l.curs[:0]
}

func (l *chunkLoader) close() {
	l.stop()
	l.loads.Wait()
	l.releaseAll()
}

// chunkLoad is a chunk being loaded; shared when it is loaded through the
// chunk cache, into a Vec the cache owns.
type chunkLoad struct {
	done   chan struct{}
	vec    *types.Vec
	err    error
	shared bool
	hc     *hollowChunk
}

// colCursor reads one stored column of a fragment.
type colCursor struct {
	l     *chunkLoader
	f     *fragment
	col   int
	typ   types.Type
	mem   *types.Vec
	cur   int // index of the chunk in vec, -1 none
	vec   *types.Vec
	loads map[int]*chunkLoad
	spare *types.Vec
	// ranges points at the scan's fragment rows still to read; span is
	// the rows it reads at most.
	ranges *[][2]int64
	span   [2]int64
	// shared is set when vec is the chunk cache's (see start).
	shared bool
	// hollow is set for a hollow column (ScanOptions.Hollow); hc is then
	// the current chunk when vec holds none of its bytes.
	hollow          bool
	hollowRowBlocks bool
	hc              *hollowChunk
}

// needed reports whether the scan has rows of chunk ck still to read.
func (cc *colCursor) needed(ck fragChunk) bool {
	for _, r := range *cc.ranges {
		if r[0] < ck.Start+ck.Rows && r[1] > ck.Start {
			return true
		}
	}
	return false
}

// at makes the chunk holding fragment row r current.
func (cc *colCursor) at(r int64) error {
	cs := cc.f.Cols[cc.col]
	if cc.cur >= 0 && cs[cc.cur].Start <= r && r < cs[cc.cur].Start+cs[cc.cur].Rows {
		return nil
	}
	i := cc.f.chunkIndex(cc.col, r)
	if i >= len(cs) {
		return corruptionf("table %q: fragment %d column %d has no row %d", cc.l.t.Name, cc.f.ID, cc.col, r)
	}
	if cs[i].Seq == memChunkSeq {
		cc.cur, cc.vec, cc.hc = i, cc.mem, nil
		return nil
	}
	ld := cc.start(i)
	for k := 1; k <= prefetchDepth && i+k < len(cs); k++ {
		if cs[i+k].Seq != memChunkSeq && cc.needed(cs[i+k]) {
			cc.start(i + k)
		}
	}
	select {
	case <-ld.done:
	case <-cc.l.ctx.Done():
		return pgerror.New(pgerror.QueryCanceled, "scan closed")
	}
	delete(cc.loads, i)
	if ld.err != nil {
		return ld.err
	}
	if cc.vec != nil && cc.vec != cc.mem && !cc.shared {
		cc.spare = cc.vec
	}
	cc.cur, cc.vec, cc.shared, cc.hc = i, ld.vec, ld.shared, ld.hc
	// Loads behind the new position are no longer needed.
	for k := range cc.loads {
		if k < i {
			delete(cc.loads, k)
		}
	}
	return nil
}

// start begins loading chunk i unless it is loading already.
func (cc *colCursor) start(i int) *chunkLoad {
	if ld, ok := cc.loads[i]; ok {
		return ld
	}
	if cc.loads == nil {
		cc.loads = make(map[int]*chunkLoad)
	}
	ck := cc.f.Cols[cc.col][i]
	// A chunk that holds more rows than the scan's span (a row group's
	// rows), as a narrow column's chunk may hold those of many groups,
	// goes through the chunk cache: the scans of the next groups read it
	// too. A large one only while the cache has room, as for fetches. A
	// smaller chunk across the span's edge is read again by the next
	// group's scan: caching it would churn the cache (and the read
	// buffers it keeps) for one read saved.
	partial := (ck.Start < cc.span[0] || ck.Start+ck.Rows > cc.span[1]) && ck.Rows > cc.span[1]-cc.span[0]
	ld := &chunkLoad{done: make(chan struct{}),
		shared: cc.l.cached || partial && (ck.Size <= smallChunkFetch || cc.l.db.chunks.room(ck.Size))}
	cc.loads[i] = ld
	var vec *types.Vec
	if !ld.shared {
		vec, cc.spare = cc.spare, nil
		if vec == nil {
			vec = types.NewVec(cc.typ, 0)
		}
	}
	key := fragChunkKey(cc.f.table(cc.l.t.ID), cc.f.ID, cc.col, ck.Seq)
	db, t, ctx, typ, hollow, rowBlocks := cc.l.db, cc.l.t, cc.l.ctx, cc.typ, cc.hollow, cc.hollowRowBlocks
	cc.l.loads.Go(func() {
		defer close(ld.done)
		select {
		case db.loadSem <- struct{}{}:
		case <-ctx.Done():
			ld.err = pgerror.New(pgerror.QueryCanceled, "scan closed")
			return
		}
		defer func() { <-db.loadSem }()
		if ctx.Err() != nil {
			ld.err = pgerror.New(pgerror.QueryCanceled, "scan closed")
			return
		}
		if ld.shared {
			ld.vec, ld.err = db.cachedChunk(ctx, t, key, typ, ck)
			return
		}
		if hollow {
			hc, err := db.hollowChunkOf(ctx, t, key, typ, ck)
			if err != nil {
				ld.err = err
				return
			}
			if hc != nil && rowBlocks && hc.rows != 1 {
				hc = nil
			}
			if hc != nil {
				db.stats.HollowChunks.Add(1)
				hollowVec(vec, typ, hc.h.rows, hc.h.shape.width)
				ld.vec, ld.hc = vec, hc
				return
			}
		}
		ld.err = db.readChunk(ctx, t, key, typ, ck, vec)
		ld.vec = vec
	})
	return ld
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

// readChunk reads and decodes the chunk object key into vec.
func (db *DB) readChunk(ctx context.Context, t *TableDesc, key string, typ types.Type, ck fragChunk, vec *types.Vec) error {
	var data []byte
	var err error
	bg, buffered := db.store.(bufferedGetter)
	sg, sized := db.store.(sizedGetter)
	sized = sized && ck.Size > 0
	buffered = buffered || sized
	var buf *[]byte
	// The checksums are checked piece by piece as the chunk is read.
	v := chunkVerifier{typ: typ}
	if buffered {
		// Read into a pooled buffer. Decoding copies out of it, or, for
		// stored values a Vec can hold as they are, vec keeps it and
		// gives the pool its old buffer in exchange.
		buf = readBufs.Get().(*[]byte)
		defer readBufs.Put(buf)
		if sized {
			data, err = sg.GetSizedInto(ctx, key, ck.Size, (*buf)[:0], v.progress)
		} else {
			data, err = bg.GetInto(ctx, key, (*buf)[:0], v.progress)
		}
		if data != nil {
			*buf = data
		}
	} else {
		data, err = db.store.Get(ctx, key)
	}
	if err != nil {
		if ctx.Err() != nil {
			return pgerror.New(pgerror.QueryCanceled, "scan closed")
		}
		if errors.Is(err, ErrCorruption) {
			return inTable(err, "table %q, object %s", t.Name, key)
		}
		return ioErrorf(err, "reading table %q", t.Name)
	}
	db.stats.ChunksRead.Add(1)
	vec.SetType(typ)
	old := vec.Bytes.Data[:0]
	kept, err := decodeColChunkKeep(data, typ, vec, true, v.verified())
	if err != nil {
		return inTable(err, "table %q, object %s", t.Name, key)
	}
	if kept && buffered {
		*buf = old
	}
	if int64(vec.Len()) != ck.Rows {
		return corruptionf("table %q, object %s: %d rows, manifest says %d", t.Name, key, vec.Len(), ck.Rows)
	}
	return nil
}

// unhollow reads the values of the chunk holding fragment row r if it is
// hollow so far.
func (cc *colCursor) unhollow(r int64) error {
	if err := cc.at(r); err != nil {
		return err
	}
	if cc.hc == nil {
		return nil
	}
	ck := cc.f.Cols[cc.col][cc.cur]
	key := fragChunkKey(cc.f.table(cc.l.t.ID), cc.f.ID, cc.col, ck.Seq)
	if err := cc.l.db.readChunk(cc.l.ctx, cc.l.t, key, cc.typ, ck, cc.vec); err != nil {
		return err
	}
	cc.hc = nil
	return nil
}

// copyTo appends fragment rows [lo, hi) of the column to dst.
func (cc *colCursor) copyTo(dst *types.Vec, lo, hi int64) error {
	for lo < hi {
		if err := cc.at(lo); err != nil {
			return err
		}
		if cc.hc != nil {
			return assertf("scan of %q: rows of hollow column %d copied", cc.l.t.Name, cc.col)
		}
		ck := cc.f.Cols[cc.col][cc.cur]
		end := min(hi, ck.Start+ck.Rows)
		appendRange(dst, cc.vec, int(lo-ck.Start), int(end-ck.Start))
		lo = end
	}
	return nil
}

// readInts appends fragment rows [lo, hi) of an int8 column to dst.
func (cc *colCursor) readInts(lo, hi int64, dst *[]uint64) error {
	for lo < hi {
		if err := cc.at(lo); err != nil {
			return err
		}
		ck := cc.f.Cols[cc.col][cc.cur]
		end := min(hi, ck.Start+ck.Rows)
		ints := cc.vec.Ints[lo-ck.Start : end-ck.Start]
		if len(ints) > 0 {
			// Row ids are stored as int8 values: the same bits.
			*dst = append(*dst, unsafe.Slice((*uint64)(unsafe.Pointer(&ints[0])), len(ints))...)
		}
		lo = end
	}
	return nil
}

func (cc *colCursor) release() {
	cc.vec, cc.spare, cc.loads, cc.hc = nil, nil, nil, nil
}
