package storage

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/deeplaked/deeplaked/pgerror"
)

// Table versions. Every commit that changes a table (a write transaction,
// a flush, a compaction) gives it a new version number, recorded in Pebble
// under t<id>v<version> in the same synced batch as the change. Rows carry
// the version that committed them (xmin) and deletion markers the version
// that deleted them (xmax), so version v of a table is exactly the rows
// with xmin <= v and no deletion marker with xmax <= v; nothing stamped is
// ever rewritten, so a retained version never changes. A commit that
// changes the table's fragments also writes a manifest object listing them
// (with their chunks and zone maps), using put-if-absent.

// Version operations.
const (
	opWrite   = 1 // a write transaction
	opFlush   = 2 // buffered rows moved into a fragment
	opCompact = 3 // fragments merged, deleted rows dropped
)

// OpName names a version operation.
func OpName(op uint8) string {
	switch op {
	case opWrite:
		return "write"
	case opFlush:
		return "flush"
	case opCompact:
		return "compact"
	}
	return "op" + fmt.Sprint(op)
}

// versionRecord is the value of a t<id>v<version> key.
type versionRecord struct {
	Parent   uint64
	Time     int64 // unix nanoseconds
	Op       uint8
	Added    int64 // rows added
	Deleted  int64 // rows deleted
	Manifest bool  // a manifest object was written
}

const versionRecordFormat = 1

func (r *versionRecord) appendBinary(dst []byte) []byte {
	dst = append(dst, versionRecordFormat, r.Op)
	dst = binary.AppendUvarint(dst, r.Parent)
	dst = binary.AppendVarint(dst, r.Time)
	dst = binary.AppendVarint(dst, r.Added)
	dst = binary.AppendVarint(dst, r.Deleted)
	m := byte(0)
	if r.Manifest {
		m = 1
	}
	return append(dst, m)
}

func decodeVersionRecord(b []byte) (versionRecord, error) {
	var r versionRecord
	if len(b) < 3 || b[0] != versionRecordFormat {
		return r, corruptionf("version record: unknown format")
	}
	r.Op = b[1]
	b = b[2:]
	var n int
	if r.Parent, n = binary.Uvarint(b); n <= 0 {
		return r, corruptionf("version record: truncated")
	}
	b = b[n:]
	for _, p := range []*int64{&r.Time, &r.Added, &r.Deleted} {
		if *p, n = binary.Varint(b); n <= 0 {
			return r, corruptionf("version record: truncated")
		}
		b = b[n:]
	}
	if len(b) != 1 || b[0] > 1 {
		return r, corruptionf("version record: bad trailer")
	}
	r.Manifest = b[0] == 1
	return r, nil
}

// VersionInfo describes one retained version of a table.
type VersionInfo struct {
	Version uint64
	Parent  uint64
	Time    time.Time
	Op      string
	Added   int64
	Deleted int64
	// Manifest is the object key of the version's manifest, "" if the
	// version did not change the table's fragments.
	Manifest string
}

// Versions lists the retained versions of table name of database
// postgres, oldest first.
func (db *DB) Versions(name string) ([]VersionInfo, error) {
	t, err := db.Table(name)
	if err != nil {
		return nil, err
	}
	return db.tableVersions(t)
}

// tableVersions lists the retained versions of table t, oldest first.
func (db *DB) tableVersions(t *TableDesc) ([]VersionInfo, error) {
	lo, hi := sectionSpan(t.ID, tagVersion)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, ioErrorf(err, "reading versions of %q", t.Name)
	}
	defer it.Close()
	var out []VersionInfo
	for it.First(); it.Valid(); it.Next() {
		v, _ := idFromKey(it.Key())
		r, err := decodeVersionRecord(it.Value())
		if err != nil {
			return nil, err
		}
		vi := VersionInfo{Version: v, Parent: r.Parent, Time: time.Unix(0, r.Time), Op: OpName(r.Op), Added: r.Added, Deleted: r.Deleted}
		if r.Manifest {
			vi.Manifest = manifestKey(t.ID, v)
		}
		out = append(out, vi)
	}
	return out, it.Error()
}

// headVersion returns the last version of table id in reader r.
func headVersion(r pebble.Reader, id uint64) (uint64, error) {
	lo, hi := sectionSpan(id, tagVersion)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, ioErrorf(err, "reading table version")
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	v, ok := idFromKey(it.Key())
	if !ok {
		return 0, corruptionf("bad version key %x", it.Key())
	}
	return v, nil
}

func manifestKey(table, version uint64) string {
	return fmt.Sprintf("tables/%d/manifests/%016x.dlm", table, version)
}

const manifestMagic = "DLKM"
const manifestFormat = 1

// putManifest writes the manifest object of version v of ts's table, whose
// fragments are the table's live fragments (read from Pebble) minus
// removed plus added, and marks rec as having one. The object is written
// with put-if-absent: a manifest already there (left by a commit that
// crashed before its Pebble batch) is never overwritten; the commit takes
// the next version number instead. It returns the version used. Callers
// hold db.commitMu.
func (db *DB) putManifest(ts *tableState, v uint64, rec *versionRecord, added []*fragment, removed map[uint64]bool) (uint64, error) {
	t := ts.desc
	live, err := db.liveFragments(db.kv, t)
	if err != nil {
		return 0, err
	}
	var frags []*fragment
	for _, f := range live {
		if !removed[f.ID] {
			frags = append(frags, f)
		}
	}
	frags = append(frags, added...)
	schema, err := json.Marshal(t)
	if err != nil {
		return 0, assertf("encoding schema of %q: %v", t.Name, err)
	}
	rec.Manifest = true
	for attempt := 0; attempt < 16; attempt++ {
		var buf []byte
		buf = append(buf, manifestMagic...)
		buf = binary.LittleEndian.AppendUint16(buf, manifestFormat)
		buf = binary.LittleEndian.AppendUint64(buf, t.ID)
		buf = binary.LittleEndian.AppendUint64(buf, v)
		buf = binary.LittleEndian.AppendUint64(buf, rec.Parent)
		buf = binary.LittleEndian.AppendUint64(buf, uint64(rec.Time))
		buf = binary.AppendUvarint(buf, uint64(len(schema)))
		buf = append(buf, schema...)
		buf = binary.AppendUvarint(buf, uint64(len(frags)))
		for _, f := range frags {
			fv := *f
			if fv.Xmin == 0 && f.Cols != nil && len(f.Cols) == len(t.Columns)+1 {
				fv.Xmin = v // the fragment being committed
			}
			d := fv.appendBinary(nil)
			buf = binary.AppendUvarint(buf, uint64(len(d)))
			buf = append(buf, d...)
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
		err := db.store.PutIfAbsent(context.Background(), manifestKey(t.ID, v), buf)
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrExists) {
			return 0, ioErrorf(err, "writing manifest of %q", t.Name)
		}
		db.log.Warn("storage: manifest exists, taking the next version", "table", t.Name, "version", v)
		v++
	}
	return 0, pgerror.Newf(pgerror.SerializationFailure, "could not commit to %q: versions up to %d already have manifests", t.Name, v)
}

// liveFragments reads the fragment descriptors of t from r.
func (db *DB) liveFragments(r pebble.Reader, t *TableDesc) ([]*fragment, error) {
	lo, hi := sectionSpan(t.ID, tagFragment)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, ioErrorf(err, "reading fragments of %q", t.Name)
	}
	defer it.Close()
	var out []*fragment
	for it.First(); it.Valid(); it.Next() {
		f, err := decodeFragment(it.Value(), len(t.Columns))
		if err != nil {
			return nil, inTable(err, "table %q", t.Name)
		}
		f.owner = t.ID
		out = append(out, f)
	}
	return out, it.Error()
}

func (db *DB) now() time.Time { return time.Now() }

// setHead records that version v of the table committed at commit
// sequence seq. Stamps no open transaction can ask about (older than the
// oldest snapshot, minOpen) fold into baseHead. Callers hold db.commitMu.
func (ts *tableState) setHead(v, seq, minOpen uint64) {
	ts.head = v
	ts.stamps = append(ts.stamps, verStamp{v: v, seq: seq})
	if len(ts.stamps) < 64 {
		return
	}
	k := 0
	for k < len(ts.stamps)-1 && ts.stamps[k+1].seq <= minOpen {
		k++
	}
	if k > 0 {
		ts.baseHead = ts.stamps[k-1].v
		ts.stamps = append(ts.stamps[:0], ts.stamps[k:]...)
	}
}

// minOpenSeq returns the commit sequence of the oldest open snapshot, or
// the current one. Callers hold db.commitMu.
func (db *DB) minOpenSeq() uint64 {
	m := db.commitSeq
	for _, seq := range db.openTxns {
		m = min(m, seq)
	}
	return m
}

// verStamp pairs a version with the commit sequence that made it.
type verStamp struct{ v, seq uint64 }

// visibleHeadAt returns the table's last version committed at or before
// commit sequence seq. Callers hold db.commitMu.
func (ts *tableState) visibleHeadAt(seq uint64) uint64 {
	h := ts.baseHead
	for _, s := range ts.stamps {
		if s.seq > seq {
			break
		}
		h = s.v
	}
	return h
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
