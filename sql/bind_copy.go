package sql

import (
	"slices"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
)

// BindCopy binds COPY table [(cols)] FROM STDIN: the target columns (all
// columns when none are listed), the defaults of the others, and the
// options, checked as PostgreSQL checks them, in its order (table, then
// columns, then options).
func BindCopy(cat Catalog, s *Copy) (*plan.CopyFrom, error) {
	t, err := writableTable(cat, s.Table)
	if err != nil {
		return nil, err
	}
	n := &plan.CopyFrom{Table: t, Defaults: make([]plan.Expr, len(t.Columns))}
	isTarget := make([]bool, len(t.Columns))
	if len(s.Columns) == 0 {
		for i := range t.Columns {
			n.Target = append(n.Target, i)
			isTarget[i] = true
		}
	}
	for _, name := range s.Columns {
		idx := columnIndex(t, name)
		if idx < 0 {
			return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
		}
		if isTarget[idx] {
			return nil, pgerror.Newf(pgerror.DuplicateColumn, "column \"%s\" specified more than once", name)
		}
		isTarget[idx] = true
		n.Target = append(n.Target, idx)
	}
	if n.Options, err = copyOptions(s.Options, true); err != nil {
		return nil, err
	}
	for i := range t.Columns {
		if !isTarget[i] {
			if n.Defaults[i], err = columnDefault(cat, t, i); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// copyOptions validates the options of COPY FROM (from set) or COPY TO
// with PostgreSQL's rules and messages (ProcessCopyOptions).
func copyOptions(list []Option, from bool) (plan.CopyOptions, error) {
	opts := plan.CopyOptions{Format: plan.CopyText, Header: plan.HeaderNone}
	seen := make(map[string]bool, len(list))
	var delim, null, quote, escape *string
	forceQuote := false
	var tensorOpts []Option
	for _, o := range list {
		if seen[o.Name] {
			return opts, pgerror.New(pgerror.SyntaxError, "conflicting or redundant options")
		}
		seen[o.Name] = true
		switch o.Name {
		case "format":
			switch o.Value {
			case "text":
				opts.Format = plan.CopyText
			case "csv":
				opts.Format = plan.CopyCSV
			case "binary":
				opts.Format = plan.CopyBinary
			case "tensor":
				if from {
					return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY format \"tensor\" is only available with COPY TO")
				}
				opts.Format = plan.CopyTensor
			default:
				return opts, pgerror.Newf(pgerror.InvalidParameterValue, "COPY format \"%s\" not recognized", o.Value)
			}
		case "header":
			h, ok := copyHeader(o)
			if !ok {
				return opts, pgerror.Newf(pgerror.SyntaxError, "%s requires a Boolean value or \"match\"", o.Name)
			}
			if h == plan.HeaderMatch && !from {
				return opts, pgerror.Newf(pgerror.FeatureNotSupported, "cannot use \"%s\" with HEADER in COPY TO", o.Value)
			}
			opts.Header = h
		case "delimiter":
			delim = &o.Value
		case "null":
			null = &o.Value
		case "quote":
			quote = &o.Value
		case "escape":
			escape = &o.Value
		case "encoding":
			if !strings.EqualFold(strings.ReplaceAll(o.Value, "-", ""), "utf8") && !strings.EqualFold(o.Value, "unicode") {
				return opts, pgerror.Newf(pgerror.FeatureNotSupported, "COPY encoding \"%s\" is not supported; data must be UTF8", o.Value)
			}
		case "force_quote":
			if from {
				return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY force quote only available using COPY TO")
			}
			forceQuote = true
		case "batch_size", "drop_last", "shuffle", "seed", "shuffle_buffer", "shard", "start_batch", "version", "epoch", "shared_memory":
			tensorOpts = append(tensorOpts, o)
		case "freeze", "force_not_null", "force_null", "default", "on_error", "log_verbosity":
			return opts, unsupported("COPY option " + strings.ToUpper(o.Name))
		default:
			return opts, pgerror.Newf(pgerror.SyntaxError, "option \"%s\" not recognized", o.Name)
		}
	}

	if opts.Format == plan.CopyTensor {
		return tensorOptions(opts, tensorOpts, seen)
	}
	if len(tensorOpts) > 0 {
		return opts, pgerror.Newf(pgerror.FeatureNotSupported, "COPY %s available only with FORMAT tensor", strings.ToUpper(tensorOpts[0].Name))
	}
	csv, binary := opts.Format == plan.CopyCSV, opts.Format == plan.CopyBinary
	if binary && delim != nil {
		return opts, pgerror.New(pgerror.SyntaxError, "cannot specify DELIMITER in BINARY mode")
	}
	if binary && null != nil {
		return opts, pgerror.New(pgerror.SyntaxError, "cannot specify NULL in BINARY mode")
	}
	d, nl, q, e := "\t", `\N`, `"`, ""
	if csv {
		d, nl = ",", ""
	}
	if delim != nil {
		d = *delim
	}
	if null != nil {
		nl = *null
	}
	if quote != nil {
		q = *quote
	}
	if escape != nil {
		e = *escape
	}
	if len(d) != 1 {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY delimiter must be a single one-byte character")
	}
	if d[0] == '\n' || d[0] == '\r' {
		return opts, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter cannot be newline or carriage return")
	}
	if strings.ContainsAny(nl, "\r\n") {
		return opts, pgerror.New(pgerror.InvalidParameterValue, "COPY null representation cannot use newline or carriage return")
	}
	if !csv && strings.Contains(`\.abcdefghijklmnopqrstuvwxyz0123456789`, d) {
		return opts, pgerror.Newf(pgerror.InvalidParameterValue, "COPY delimiter cannot be \"%s\"", d)
	}
	if binary && opts.Header != plan.HeaderNone {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "cannot specify HEADER in BINARY mode")
	}
	if !csv && quote != nil {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY quote available only in CSV mode")
	}
	if csv && len(q) != 1 {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY quote must be a single one-byte character")
	}
	if csv && d[0] == q[0] {
		return opts, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter and quote must be different")
	}
	if !csv && escape != nil {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY escape available only in CSV mode")
	}
	if e == "" {
		e = q
	}
	if csv && len(e) != 1 {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY escape must be a single one-byte character")
	}
	if !csv && forceQuote {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY force quote available only in CSV mode")
	}
	if strings.Contains(nl, d) {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "COPY delimiter must not appear in the NULL specification")
	}
	if csv && strings.Contains(nl, q) {
		return opts, pgerror.New(pgerror.FeatureNotSupported, "CSV quote character must not appear in the NULL specification")
	}
	opts.Delimiter, opts.Null = d[0], nl
	if csv {
		opts.Quote, opts.Escape = q[0], e[0]
	}
	return opts, nil
}

// copyHeader reads HEADER's argument as PostgreSQL does: none, 0/1,
// true/false/on/off (any case) or match.
func copyHeader(o Option) (plan.CopyHeader, bool) {
	if !o.HasValue {
		return plan.HeaderSkip, true
	}
	switch strings.ToLower(o.Value) {
	case "1", "true", "on":
		return plan.HeaderSkip, true
	case "0", "false", "off":
		return plan.HeaderNone, true
	case "match":
		return plan.HeaderMatch, true
	}
	return 0, false
}

// BindCopyTo binds COPY table [(cols)] TO STDOUT and COPY (query) TO
// STDOUT: the query whose rows are copied, the options and FORCE_QUOTE's
// columns, checked as PostgreSQL checks them (table, options, columns).
func BindCopyTo(cat Catalog, s *CopyTo) (*plan.CopyTo, error) {
	n := &plan.CopyTo{}
	var t *storage.TableDesc
	if s.Query == nil {
		var err error
		if t, err = cat.Table(s.Table); err != nil {
			return nil, err
		}
		if t.View != "" {
			return nil, pgerror.Newf(pgerror.WrongObjectType, "cannot copy from view %q", t.Name).
				WithHint("Try the COPY (SELECT ...) TO variant.")
		}
	}
	var err error
	if n.Options, err = copyOptions(s.Options, false); err != nil {
		return nil, err
	}
	if t != nil {
		scan := &plan.Scan{Table: t}
		seen := make([]bool, len(t.Columns))
		for _, name := range s.Columns {
			idx := columnIndex(t, name)
			if idx < 0 {
				return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
			}
			if seen[idx] {
				return nil, pgerror.Newf(pgerror.DuplicateColumn, "column \"%s\" specified more than once", name)
			}
			seen[idx] = true
			scan.Cols = append(scan.Cols, idx)
		}
		if len(s.Columns) == 0 {
			for i := range t.Columns {
				scan.Cols = append(scan.Cols, i)
			}
		}
		n.Query = scan
	} else if n.Query, err = BindSelect(cat, s.Query); err != nil {
		return nil, err
	}
	cols := n.Query.Columns()
	if s.ForceQuoteAll {
		n.ForceQuote = make([]bool, len(cols))
		for i := range n.ForceQuote {
			n.ForceQuote[i] = true
		}
	}
	for _, name := range s.ForceQuote {
		if n.ForceQuote == nil {
			n.ForceQuote = make([]bool, len(cols))
		}
		i := slices.IndexFunc(cols, func(c plan.Column) bool { return c.Name == name })
		switch {
		case i >= 0:
			n.ForceQuote[i] = true
		case t == nil:
			return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" does not exist", name)
		case columnIndex(t, name) < 0:
			return nil, pgerror.Newf(pgerror.UndefinedColumn, "column \"%s\" of relation \"%s\" does not exist", name, t.Name)
		default:
			return nil, pgerror.Newf(pgerror.InvalidColumnReference, "FORCE_QUOTE column \"%s\" not referenced by COPY", name)
		}
	}
	return n, nil
}
