package sql

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// Bounds of the chunk_size storage parameter.
const (
	minChunkSize = 64 << 10
	maxChunkSize = 1 << 30
)

// tableOptions validates the storage parameters of CREATE TABLE ... WITH
// (chunk_size = '16MB', compression = zstd).
func tableOptions(list []Option) (storage.TableOptions, error) {
	var opts storage.TableOptions
	seen := make(map[string]bool, len(list))
	for _, o := range list {
		name := strings.ToLower(o.Name)
		if seen[name] {
			return opts, pgerror.Newf(pgerror.InvalidParameterValue, "parameter \"%s\" specified more than once", o.Name)
		}
		seen[name] = true
		switch name {
		case "chunk_size":
			n, ok := parseMemorySize(o.Value)
			if !o.HasValue || !ok {
				return opts, invalidParameter(o).WithHint("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
			}
			if n < minChunkSize || n > maxChunkSize {
				return opts, invalidParameter(o).WithDetail("Valid values are between \"64kB\" and \"1GB\".")
			}
			opts.ChunkSize = n
		case "compression":
			c := strings.ToLower(o.Value)
			if !o.HasValue || !slices.Contains(storage.Compressions, c) {
				return opts, invalidParameter(o).WithDetail("Valid values are %s.", quotedList(storage.Compressions))
			}
			opts.Compression = c
		default:
			return opts, pgerror.Newf(pgerror.InvalidParameterValue, "unrecognized parameter \"%s\"", o.Name)
		}
	}
	return opts, nil
}

func invalidParameter(o Option) *pgerror.Error {
	v := o.Value
	if !o.HasValue {
		v = "true" // a bare name, as PostgreSQL reads it
	}
	return pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for parameter \"%s\": \"%s\"", o.Name, v)
}

// columnCompression validates a column's COMPRESSION method; "default"
// means the table's default ("").
func columnCompression(method string) (string, error) {
	m := strings.ToLower(method)
	if m == "default" {
		return "", nil
	}
	if !slices.Contains(storage.Compressions, m) {
		return "", pgerror.Newf(pgerror.InvalidParameterValue, "invalid compression method \"%s\"", method).
			WithHint("Valid methods are %s.", quotedList(storage.Compressions))
	}
	return m, nil
}

// quotedList formats names as "a", "b", and "c".
func quotedList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		switch {
		case i > 0 && i == len(names)-1:
			b.WriteString(", and ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	return b.String()
}

// memoryUnits are PostgreSQL's memory units (case-sensitive, as there).
var memoryUnits = []struct {
	name string
	mult float64
}{
	{"B", 1}, {"kB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
}

// parseMemorySize reads a byte count the way PostgreSQL reads a memory
// setting: a number (fractions allowed), optional spaces, and an optional
// unit; without a unit the number is bytes. The result is rounded to a
// whole byte.
func parseMemorySize(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) && (t[end] >= '0' && t[end] <= '9' || t[end] == '.' || (end == 0 && (t[0] == '+' || t[0] == '-'))) {
		end++
	}
	num, unit := t[:end], strings.TrimSpace(t[end:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false
	}
	mult := 0.0
	if unit == "" {
		mult = 1
	}
	for _, u := range memoryUnits {
		if unit == u.name {
			mult = u.mult
		}
	}
	v := math.Round(f * mult)
	if mult == 0 || v > math.MaxInt64/2 || v < math.MinInt64/2 {
		return 0, false
	}
	return int64(v), true
}
