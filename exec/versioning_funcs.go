package exec

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// Named versions (docs/versioning.md): deeplake_commit, deeplake_tag and
// deeplake_drop_tag name a table's versions; the caller must be able to
// read the table.

// versionedTable returns the table name of the session's database, which
// the current role may read.
func (f *funcEval) versionedTable(name string) (*storage.TableDesc, error) {
	env := f.env
	if env.DB == nil || env.Txn == nil {
		return nil, pgerror.Newf(pgerror.FeatureNotSupported, "%s() needs a database", f.fn.Name)
	}
	var t *storage.TableDesc
	var err error
	if env.View != nil {
		t, err = env.View(name)
	} else {
		cat := env.Catalog
		if cat == nil {
			cat = env.DB.Catalog(storage.PostgresOID)
		}
		t, err = cat.Table(name)
	}
	if err != nil {
		return nil, err
	}
	p, err := env.privileges()
	if err != nil {
		return nil, err
	}
	if !p.auth.Superuser(p.role) {
		have, _ := p.auth.Mask(storage.ObjectTable, t.ACL, p.ownerName(t), p.role)
		if have&storage.PrivSelect == 0 {
			return nil, pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied for table %s", t.Name)
		}
	}
	return t, nil
}

// needWrite returns 42501 unless the current role may insert into,
// update and delete from t.
func (f *funcEval) needWrite(t *storage.TableDesc) error {
	p, err := f.env.privileges()
	if err != nil {
		return err
	}
	if p.auth.Superuser(p.role) {
		return nil
	}
	have, _ := p.auth.Mask(storage.ObjectTable, t.ACL, p.ownerName(t), p.role)
	if want := storage.PrivInsert | storage.PrivUpdate | storage.PrivDelete; have&want != want {
		return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied for table %s", t.Name)
	}
	return nil
}

// versionFunc appends the value of a named-version function for row i.
func (f *funcEval) versionFunc(i int) error {
	t, err := f.versionedTable(f.str(0, i))
	if err != nil {
		return err
	}
	env := f.env
	user := env.User
	if env.Role != "" {
		user = env.Role
	}
	switch f.fn.Name {
	case "deeplake_commit":
		id, err := env.Txn.CommitVersion(t, f.str(1, i), user)
		if err != nil {
			return err
		}
		f.out.AppendString(id)
	case "deeplake_tag":
		ref := ""
		if !f.null(2, i) {
			ref = f.str(2, i)
		}
		tag, err := env.Txn.Tag(t, f.str(1, i), ref)
		if err != nil {
			return err
		}
		f.out.AppendString(tag.Name)
	case "deeplake_drop_tag":
		dropped, err := env.DB.DropTag(t, f.str(1, i), false)
		if err != nil {
			return err
		}
		f.out.AppendBool(dropped)
	case "deeplake_branch":
		// Making a branch writes it: the role must be able to write
		// the table.
		if err := f.needWrite(t); err != nil {
			return err
		}
		from := ""
		if !f.null(2, i) {
			from = f.str(2, i)
		}
		b, err := env.Txn.CreateBranch(t, f.str(1, i), from, user)
		if err != nil {
			return err
		}
		f.out.AppendString(b.Name)
	case "deeplake_drop_branch":
		if err := f.needWrite(t); err != nil {
			return err
		}
		dropped, err := env.DB.DropBranch(t, f.str(1, i), false)
		if err != nil {
			return err
		}
		f.out.AppendBool(dropped)
	}
	return nil
}
