package exec

import (
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
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
	if f.null(0, i) || f.null(1, i) {
		// deeplake_merge is not strict in its last two arguments.
		f.out.AppendNull()
		return nil
	}
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
	case "deeplake_merge":
		// deeplake_merge(t, from [, into [, 'ours' | 'theirs']]): into is
		// the session's branch of t when NULL or left out.
		into := t
		if !f.null(2, i) {
			if into, err = f.versionedTable(t.Name + "@" + f.str(2, i)); err != nil {
				return err
			}
		}
		if err := f.needWrite(into); err != nil {
			return err
		}
		from, err := f.versionedTable(t.Name + "@" + f.str(1, i))
		if err != nil {
			return err
		}
		strategy := storage.MergeFail
		if !f.null(3, i) {
			switch s := f.str(3, i); s {
			case "ours":
				strategy = storage.MergeOurs
			case "theirs":
				strategy = storage.MergeTheirs
			case "fail":
			default:
				return pgerror.Newf(pgerror.InvalidParameterValue, "unknown merge strategy %q", s).
					WithHint("The strategy is 'ours', 'theirs' or 'fail'.")
			}
		}
		mem := env.account("a merge's keys")
		defer mem.Close()
		id, _, err := env.DB.Merge(into, from, strategy, user, "", mem.Grow)
		if err != nil {
			return err
		}
		f.out.AppendString(id)
	case "deeplake_reset":
		if err := f.needWrite(t); err != nil {
			return err
		}
		to, err := f.versionedTable(t.Name + "@" + f.str(1, i))
		if err != nil {
			return err
		}
		mem := env.account("a reset's rows")
		defer mem.Close()
		id, _, err := env.DB.Reset(t, to, user, "", mem.Grow)
		if err != nil {
			return err
		}
		f.out.AppendString(id)
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

// historyOp runs deeplake_log (its rows made when it opens) and
// deeplake_diff (streamed from the storage's diff).
type historyOp struct {
	env  *Env
	n    *plan.History
	out  *types.Batch
	done bool
	diff *storage.DiffScanner
	// change and rowid are the diff's columns besides the table's.
	change, rowid *types.Vec
	// mem holds what the diff keeps of the rows that differ.
	mem *MemAccount
}

func newHistory(env *Env, n *plan.History) (Operator, error) {
	if env.Txn == nil {
		return nil, pgerror.New(pgerror.FeatureNotSupported, "deeplake_log and deeplake_diff need a database")
	}
	o := &historyOp{env: env, n: n}
	if n.Kind == plan.HistoryDiff {
		o.mem = env.account("a diff's rows")
		d, err := env.Txn.Diff(n.Table, n.B, o.mem.Grow)
		if err != nil {
			o.mem.Close()
			return nil, err
		}
		o.diff = d
		o.change = types.NewVec(types.TypText, types.BatchSize)
		o.rowid = types.NewVec(types.TypInt8, types.BatchSize)
		o.out = &types.Batch{}
		return o, nil
	}
	ts := make([]types.Type, len(n.Cols))
	for i, c := range n.Cols {
		ts[i] = c.Type
	}
	if n.Kind == plan.HistoryRefs {
		refs, err := env.DB.Refs(n.Table)
		if err != nil {
			return nil, err
		}
		refs = append(env.DB.Branches(n.Table)[:1], refs...) // main first
		o.out = types.NewBatch(ts, len(refs))
		kinds := map[storage.RefKind]string{storage.RefBranch: "branch", storage.RefTag: "tag", storage.RefCommit: "commit"}
		for _, r := range refs {
			c := o.out.Cols
			c[0].AppendString(kinds[r.Kind])
			c[1].AppendString(r.Name)
			if r.Kind == storage.RefBranch {
				// The branch it forked from.
				if r.Name == storage.MainBranch {
					c[2].AppendNull()
				} else {
					c[2].AppendString((&storage.Ref{Branch: r.Branch}).BranchName())
				}
			} else {
				c[2].AppendString(r.BranchName())
			}
			if r.Version == 0 {
				c[3].AppendNull()
			} else {
				c[3].AppendInt(int64(r.Version))
			}
			for j, s := range []string{r.Commit, r.Message, r.Author} {
				if r.Kind == storage.RefCommit && j == 0 {
					s = r.Name
				}
				if s == "" {
					c[4+j].AppendNull()
				} else {
					c[4+j].AppendString(s)
				}
			}
			if r.Time.IsZero() {
				c[7].AppendNull()
			} else {
				c[7].AppendInt(types.TimestampOf(r.Time))
			}
		}
		o.out.SetLen(len(refs))
		return o, nil
	}
	commits, err := env.Txn.Log(n.Table)
	if err != nil {
		return nil, err
	}
	o.out = types.NewBatch(ts, len(commits))
	for _, r := range commits {
		c := o.out.Cols
		c[0].AppendString(r.Name)
		for j := range 2 {
			if j < len(r.Parents) && r.Parents[j] != "" {
				c[1+j].AppendString(r.Parents[j])
			} else {
				c[1+j].AppendNull()
			}
		}
		c[3].AppendString(r.BranchName())
		c[4].AppendString(r.Message)
		c[5].AppendString(r.Author)
		c[6].AppendInt(types.TimestampOf(r.Time))
		c[7].AppendInt(r.Added)
		c[8].AppendInt(r.Deleted)
	}
	o.out.SetLen(len(commits))
	return o, nil
}

func (o *historyOp) Next() (*types.Batch, error) {
	if err := o.env.canceled(); err != nil {
		return nil, err
	}
	if o.diff == nil {
		if o.done || o.out.Len() == 0 {
			return nil, nil
		}
		o.done = true
		return o.out, nil
	}
	b, kinds, ids, err := o.diff.Next()
	if b == nil || err != nil {
		return nil, err
	}
	o.change.Reset()
	o.rowid.Reset()
	for i, k := range kinds {
		o.change.AppendString(k.String())
		o.rowid.AppendInt(int64(ids[i]))
	}
	o.out.Cols = append(append(o.out.Cols[:0], o.change), b.Cols...)
	if len(o.n.Cols) > len(b.Cols)+1 {
		o.out.Cols = append(o.out.Cols, o.rowid)
	}
	o.out.SetLen(len(ids))
	return o.out, nil
}

func (o *historyOp) Close() {
	if o.diff != nil {
		o.diff.Close()
		o.diff = nil
	}
	if o.mem != nil {
		o.mem.Close()
		o.mem = nil
	}
}
