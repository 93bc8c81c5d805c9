package storage

import (
	"errors"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

// TestExportSnapshot shares one transaction's snapshot with others: they
// see its view (not rows committed since), keep reading it after the
// exporter ends, and cannot import it once the exporter has ended or
// after reading.
func TestExportSnapshot(t *testing.T) {
	db := openMem(t, 1<<30)
	tbl := createTable(t, db, intTable("snap", 1<<20))
	insert(t, db, tbl, intRows(0, 100))

	a := db.Begin()
	id, err := a.ExportSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	insert(t, db, tbl, intRows(100, 50)) // committed after the export
	b := db.Begin()
	if err := b.ImportSnapshot(id); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, b, tbl); n != 100 {
		t.Fatalf("the importer sees %d rows, want the exporter's 100", n)
	}
	if err := b.ImportSnapshot(id); !isCode(err, pgerror.ActiveSQLTransaction) {
		t.Fatalf("import after reading: %v", err)
	}
	c := db.Begin()
	if n := countRows(t, db, c, tbl); n != 150 { // read: too late to import
		t.Fatalf("a new transaction sees %d rows", n)
	}
	if err := c.ImportSnapshot(id); !isCode(err, pgerror.ActiveSQLTransaction) {
		t.Fatalf("import after a read: %v", err)
	}
	c.Rollback()
	a.Rollback()
	// The importer reads on after the exporter's end.
	if n := countRows(t, db, b, tbl); n != 100 {
		t.Fatalf("after the exporter's end the importer sees %d rows", n)
	}
	b.Rollback()
	d := db.Begin()
	defer d.Rollback()
	if err := d.ImportSnapshot(id); !isCode(err, pgerror.InvalidParameterValue) {
		t.Fatalf("import of an ended export: %v", err)
	}
	if err := d.ImportSnapshot("nonsense"); !isCode(err, pgerror.InvalidParameterValue) {
		t.Fatalf("import of an unknown identifier: %v", err)
	}
	if n := countRows(t, db, d, tbl); n != 150 {
		t.Fatalf("a new transaction sees %d rows", n)
	}
}

func isCode(err error, code pgerror.Code) bool {
	var pe *pgerror.Error
	return errors.As(err, &pe) && pe.Code == code
}
