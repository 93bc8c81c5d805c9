package storage

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/deeplaked/deeplaked/types"
)

// Pebble key layout (see docs/storage.md):
//
//	m/layout                         catalog layout version ("2": tables by database)
//	m/storage                        the storage location and identity of the data directory (identity.go)
//	m/db/<name>                      database (JSON)
//	m/rel/<database OID BE4><name>   table descriptor (JSON)
//	m/table/<name>                   table descriptor of layout 1, moved by Open (migrateLayout)
//	m/ctr/<name>                     counter high-water mark (uint64 BE)
//	m/seq/<table id BE8><col BE4>    serial sequence high-water mark
//	m/role/<name>                    role (JSON, password as a SCRAM verifier)
//	m/member/<role>\0<member>        role membership (JSON: grantor, admin option)
//	m/nspacl/<db OID>\0<schema>      a schema's ACL (JSON), absent while it has its default
//	m/defacl/<db OID>\0<role>\0<schema>\0<kind>  default privileges (JSON)
//	m/dropped/<table id BE8>         a dropped table whose objects are still to delete → its name
//	t<table id BE8>d<row id BE8>     deletion marker → deleting version (uvarint)
//	t<table id BE8>f<frag id BE8>    fragment descriptor
//	t<table id BE8>k<key bytes>      primary key entry → row id BE8 (a branch's: empty for a key it deleted)
//	t<table id BE8>r<row id BE8>     buffered row: committing version (uvarint), row encoding
//	t<table id BE8>v<version BE8>    version record
//	t<table id BE8>x<frag id BE8>    fragment removed by compaction, awaiting VACUUM
//	t<table id BE8>i<index id BE8>   saved hnsw graph: object key, covered fragments
//	t<table id BE8>n<kind><name>     named version: a commit, a tag or a branch (refs.go, branch.go)
//	l/seq, l/node, l/checkpoint      log position, node name, last checkpoint (replog.go)
//	l/out/<seq BE8>                  a log entry not yet uploaded
//
// Every key of a table starts with t<id>, so one iterator over that prefix
// sees the table's chunk refs, deletion markers and buffered rows at one
// point in time, and dropping a table is one range deletion.
const (
	tagDelete   = 'd'
	tagFragment = 'f'
	tagPK       = 'k'
	tagRow      = 'r'
	tagVersion  = 'v'
	tagRemoved  = 'x'
	tagIndex    = 'i'
)

var (
	relPrefix = []byte("m/rel/")
	dbPrefix  = []byte("m/db/")
	layoutKey = []byte("m/layout")
	// legacyTablePrefix holds the table descriptors of layout 1, keyed
	// by name alone.
	legacyTablePrefix = []byte("m/table/")
	ctrPrefix         = []byte("m/ctr/")
	seqPrefix         = []byte("m/seq/")
	rolePrefix        = []byte("m/role/")
	dropPrefix        = []byte("m/dropped/")

	memberPrefix = []byte("m/member/")
	nspACLPrefix = []byte("m/nspacl/")
	defACLPrefix = []byte("m/defacl/")
)

// descKey is the key of table name's descriptor in database dbOID.
func descKey(dbOID uint32, name string) []byte {
	return append(binary.BigEndian.AppendUint32(append([]byte(nil), relPrefix...), dbOID), name...)
}

// relSpan returns the bounds [lo, hi) of database dbOID's table
// descriptors.
func relSpan(dbOID uint32) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint32(append([]byte(nil), relPrefix...), dbOID)
	return lo, prefixEnd(lo)
}

func databaseKey(name string) []byte { return append(append([]byte(nil), dbPrefix...), name...) }

func memberKey(role, member string) []byte {
	return append(append(append(append([]byte(nil), memberPrefix...), role...), 0), member...)
}

func nspACLKey(database, schema string) []byte {
	return append(append(append(append([]byte(nil), nspACLPrefix...), database...), 0), schema...)
}

func defACLKey(database, role, schema string, kind ObjectKind) []byte {
	k := append(append([]byte(nil), defACLPrefix...), database...)
	k = append(append(k, 0), role...)
	k = append(append(k, 0), schema...)
	return append(k, 0, byte(kind))
}

func droppedKey(tableID uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), dropPrefix...), tableID)
}

func roleKey(name string) []byte { return append(append([]byte(nil), rolePrefix...), name...) }

func ctrKey(name string) []byte { return append(append([]byte(nil), ctrPrefix...), name...) }

func seqKey(tableID uint64, col int) []byte {
	k := append(append([]byte(nil), seqPrefix...), make([]byte, 12)...)
	binary.BigEndian.PutUint64(k[len(seqPrefix):], tableID)
	binary.BigEndian.PutUint32(k[len(seqPrefix)+8:], uint32(col))
	return k
}

// tableSpan returns the bounds [lo, hi) of all of a table's data keys.
func tableSpan(id uint64) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint64([]byte{'t'}, id)
	hi = binary.BigEndian.AppendUint64([]byte{'t'}, id+1)
	if id == math.MaxUint64 {
		hi = []byte{'u'}
	}
	return lo, hi
}

// sectionSpan returns the bounds [lo, hi) of one tag section of a table.
func sectionSpan(id uint64, tag byte) (lo, hi []byte) {
	lo = append(binary.BigEndian.AppendUint64([]byte{'t'}, id), tag)
	hi = append(binary.BigEndian.AppendUint64([]byte{'t'}, id), tag+1)
	return lo, hi
}

// appendIDKey appends t<table>tag<id> to dst.
func appendIDKey(dst []byte, table uint64, tag byte, id uint64) []byte {
	dst = append(dst, 't')
	dst = binary.BigEndian.AppendUint64(dst, table)
	dst = append(dst, tag)
	return binary.BigEndian.AppendUint64(dst, id)
}

// idKeyLen is the length of a key made by appendIDKey.
const idKeyLen = 1 + 8 + 1 + 8

// idFromKey returns the trailing id of a key made by appendIDKey.
func idFromKey(k []byte) (uint64, bool) {
	if len(k) != idKeyLen {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[10:]), true
}

func tableObjectPrefix(table uint64) string {
	return "tables/" + strconv.FormatUint(table, 10) + "/"
}

// appendPKKey appends the primary key entry key of row i of b to dst:
// t<table>k followed by each key column in an order-preserving encoding.
// Equal SQL values encode to equal bytes (-0 and +0 are one float key, as
// are all NaNs).
func appendPKKey(dst []byte, t *TableDesc, b *types.Batch, i int) []byte {
	dst = append(dst, 't')
	dst = binary.BigEndian.AppendUint64(dst, t.ID)
	dst = append(dst, tagPK)
	for _, c := range t.PrimaryKey {
		v := b.Cols[c]
		if v.Nulls[i] {
			dst = append(dst, 0x00) // NULL sorts first; callers reject it anyway
			continue
		}
		dst = append(dst, 0x01)
		switch v.Type.Phys() {
		case types.PhysBool:
			if v.Bools[i] {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case types.PhysInt:
			dst = binary.BigEndian.AppendUint64(dst, uint64(v.Ints[i])^(1<<63))
		case types.PhysFloat:
			dst = binary.BigEndian.AppendUint64(dst, orderedFloat(v.Floats[i]))
		default:
			// Bytes are escaped so that a value is never a prefix of
			// another's encoding: 0x00 → 0x00 0xff, terminated by 0x00 0x01.
			// Numerics enter by their key, which equal numbers share.
			val := v.Bytes.Get(i)
			if v.Type.Kind == types.Numeric {
				val = types.AppendNumericKey(nil, val)
			}
			for _, c := range val {
				if c == 0 {
					dst = append(dst, 0, 0xff)
				} else {
					dst = append(dst, c)
				}
			}
			dst = append(dst, 0, 1)
		}
	}
	return dst
}

// orderedFloat maps a float64 to a uint64 with the same order.
func orderedFloat(f float64) uint64 {
	if f == 0 {
		f = 0 // fold -0 into +0
	}
	if math.IsNaN(f) {
		return math.MaxUint64 // NaN sorts last and equals itself, as in PostgreSQL
	}
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		return ^u
	}
	return u | 1<<63
}
