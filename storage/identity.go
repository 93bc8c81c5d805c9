package storage

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A storage location (an S3 prefix, or the data directory's own objects)
// gets an identity at first use: identityKey, written put-if-absent. The
// data directory records which location and identity it belongs to
// (storageKey), and Open refuses to run a data directory on any other
// location: a forgotten or wrong --storage would otherwise serve an empty
// store, and write there, while the tables' objects sit elsewhere; and two
// data directories on one prefix would hand out the same table ids and
// overwrite each other's objects.

// identityKey is the object that names a storage location's catalog.
const identityKey = "deeplake/identity.json"

// storageKey is the Pebble key of the data directory's storage record.
var storageKey = []byte("m/storage")

// Identity is the content of identityKey.
type Identity struct {
	ID      string
	Created time.Time
}

// storageRecord is what a data directory knows of its storage location.
type storageRecord struct {
	// Location is where the storage was when the record was written, as
	// Options.Location names it (for messages).
	Location string
	// Identity is the location's Identity.ID.
	Identity string
}

// ErrForeignStorage is returned (wrapped) by Open when the data directory
// and the storage location do not belong together.
var ErrForeignStorage = errors.New("storage: the data directory and the storage location do not belong together")

// checkIdentity ties the data directory to its storage location, before
// Open writes or deletes anything: a data directory with a record must
// meet the location of its identity; one without (new, or written by an
// earlier version) claims a location that holds no other catalog's data.
func (db *DB) checkIdentity(ctx context.Context) error {
	loc := db.opts.Location
	if loc == "" {
		loc = "the data directory's objects"
	}
	var rec storageRecord
	hasRec, err := db.getJSON(storageKey, &rec)
	if err != nil {
		return err
	}
	ident, hasIdent, err := readIdentity(ctx, db.store)
	if err != nil {
		return err
	}
	foreign := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrForeignStorage, fmt.Sprintf(format, args...))
	}
	if hasRec {
		switch {
		case !hasIdent:
			return foreign("data directory %s belongs to storage %s (identity %s), but %s holds no deeplaked data; start it with --storage %s",
				db.opts.Dir, rec.Location, rec.Identity, loc, flagValue(rec.Location))
		case ident.ID != rec.Identity:
			return foreign("data directory %s belongs to storage %s (identity %s), but %s holds another catalog's data (identity %s); start it with --storage %s",
				db.opts.Dir, rec.Location, rec.Identity, loc, ident.ID, flagValue(rec.Location))
		case rec.Location != loc:
			// The same identity under another name (an endpoint or a
			// path that changed): the name is for messages only.
			rec.Location = loc
			return db.putJSON(storageKey, &rec)
		}
		return nil
	}
	fresh, hasData, err := db.catalogState()
	if err != nil {
		return err
	}
	if hasIdent && fresh && db.opts.Attach {
		db.attaching = true
		return db.putJSON(storageKey, &storageRecord{Location: loc, Identity: ident.ID})
	}
	if hasIdent {
		what := "a new data directory"
		if !fresh {
			what = "data directory " + db.opts.Dir + ", which belongs to no storage yet,"
		}
		return foreign("storage %s already holds another catalog's data (identity %s): %s cannot use it; start with that catalog's data directory, or with --attach to serve that catalog from a new data directory, or give this one its own --storage prefix",
			loc, ident.ID, what)
	}
	if db.opts.Attach && fresh {
		// Attaching to a location that holds no catalog is a mistake (a
		// mistyped prefix, or the first server not started yet): it
		// would serve a new, empty catalog.
		return foreign("storage %s holds no catalog to attach to; start the first server of a location without --attach, or check the --storage prefix",
			loc)
	}
	objects, err := db.store.List(ctx, "tables/")
	if err != nil {
		return ioErrorf(err, "listing %s", loc)
	}
	switch {
	case fresh && len(objects) > 0:
		return foreign("storage %s holds table data that no catalog claims, and the data directory %s is new; start with the data directory that wrote it, or give this one its own --storage prefix",
			loc, db.opts.Dir)
	case hasData && len(objects) == 0:
		return foreign("data directory %s holds tables whose data is not in %s; start it with the --storage it was created with",
			db.opts.Dir, loc)
	}
	// Claim the location: of several servers doing so at once, one wins.
	var id [16]byte
	_, _ = rand.Read(id[:])
	ident = Identity{ID: hex.EncodeToString(id[:]), Created: time.Now().UTC()}
	data, err := json.Marshal(&ident)
	if err != nil {
		return assertf("encoding the storage identity: %v", err)
	}
	if err := db.store.PutIfAbsent(ctx, identityKey, data); err != nil {
		if errors.Is(err, ErrExists) {
			return foreign("storage %s was claimed by another catalog while this one started", loc)
		}
		return ioErrorf(err, "writing %s to %s", identityKey, loc)
	}
	return db.putJSON(storageKey, &storageRecord{Location: loc, Identity: ident.ID})
}

// readIdentity returns the identity of store, if it has one.
func readIdentity(ctx context.Context, store ObjectStore) (Identity, bool, error) {
	data, err := store.Get(ctx, identityKey)
	if errors.Is(err, ErrNotFound) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, ioErrorf(err, "reading %s", identityKey)
	}
	var ident Identity
	if err := json.Unmarshal(data, &ident); err != nil || ident.ID == "" {
		return Identity{}, false, corruptionf("%s: %q", identityKey, data)
	}
	return ident, true, nil
}

// catalogState tells whether the catalog is new (no key at all) and
// whether it has fragments, whose objects its storage must hold.
func (db *DB) catalogState() (fresh, hasData bool, err error) {
	it, err := db.kv.NewIter(&pebble.IterOptions{})
	if err != nil {
		return false, false, err
	}
	defer it.Close()
	if !it.First() {
		return true, false, it.Error()
	}
	// Each table's keys start with t<id>; its fragments ('f') sort before
	// its keys, rows and versions, so one seek a table answers.
	for ok := it.SeekGE([]byte{'t'}); ok; {
		k := it.Key()
		if len(k) < 10 || k[0] != 't' {
			break
		}
		if k[9] == tagFragment {
			return false, true, nil
		}
		next := append([]byte(nil), k[:10]...)
		next[9] = tagFragment
		if k[9] < tagFragment {
			ok = it.SeekGE(next)
			continue
		}
		// Past this table's fragments: on to the next table id.
		id := binary.BigEndian.Uint64(k[1:9])
		if id == math.MaxUint64 {
			break
		}
		ok = it.SeekGE(binary.BigEndian.AppendUint64([]byte{'t'}, id+1))
	}
	return false, false, it.Error()
}

// flagValue is how --storage names loc.
func flagValue(loc string) string {
	if loc == "" || loc == "the data directory's objects" {
		return "'' (the data directory's own objects)"
	}
	return loc
}
