package sql

import (
	"math"
	"strconv"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/storage"
)

// tensorOptions validates the options of FORMAT tensor
// (docs/tensor-stream.md). The text-format options have no meaning for it
// and are refused, as PostgreSQL refuses them in BINARY mode.
func tensorOptions(opts plan.CopyOptions, list []Option, seen map[string]bool) (plan.CopyOptions, error) {
	for _, name := range []string{"header", "delimiter", "null", "quote", "escape", "force_quote"} {
		if seen[name] {
			return opts, pgerror.Newf(pgerror.FeatureNotSupported, "cannot specify %s with FORMAT tensor", strings.ToUpper(name))
		}
	}
	t := plan.TensorOptions{BatchSize: plan.DefaultTensorBatch, ShuffleBuffer: plan.DefaultShuffleBuffer, World: 1}
	for _, o := range list {
		var err error
		switch o.Name {
		case "batch_size":
			var n int64
			n, err = tensorInt(o, 1, plan.MaxTensorBatch)
			t.BatchSize = int(n)
		case "shuffle_buffer":
			var n int64
			n, err = tensorInt(o, 1, plan.MaxTensorBatch*16)
			t.ShuffleBuffer = int(n)
		case "start_batch":
			t.StartBatch, err = tensorInt(o, 0, 1<<62)
		case "seed":
			if !o.HasValue {
				return opts, pgerror.New(pgerror.SyntaxError, "seed requires a numeric value")
			}
			s, perr := strconv.ParseInt(o.Value, 10, 64)
			if perr != nil {
				u, uerr := strconv.ParseUint(o.Value, 10, 64)
				if uerr != nil {
					return opts, pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for SEED: \"%s\"", o.Value).
						WithHint("SEED takes a 64-bit integer.")
				}
				s = int64(u)
			}
			t.Seed, t.SeedSet = uint64(s), true
		case "drop_last":
			var ok bool
			if t.DropLast, ok = copyBool(o); !ok {
				return opts, pgerror.Newf(pgerror.SyntaxError, "%s requires a Boolean value", o.Name)
			}
		case "shuffle":
			if strings.EqualFold(o.Value, "exact") {
				t.Shuffle = plan.ShuffleExact
				break
			}
			on, ok := copyBool(o)
			if !ok {
				return opts, pgerror.Newf(pgerror.SyntaxError, "%s requires a Boolean value or \"exact\"", o.Name)
			}
			if on {
				t.Shuffle = plan.ShuffleBuffer
			}
		case "shard":
			t.Rank, t.World, err = tensorShard(o)
		case "epoch":
			if !o.HasValue || o.Value == "" || len(o.Value) > storage.MaxEpochKey {
				return opts, pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for EPOCH: \"%s\"", o.Value).
					WithHint("EPOCH takes a key of 1 to %d bytes that the statements of one epoch share.", storage.MaxEpochKey)
			}
			t.Epoch = o.Value
		case "shared_memory":
			if on, ok := copyBool(o); ok {
				t.SharedMemory = 0
				if on {
					t.SharedMemory = plan.DefaultSharedMemory
				}
				break
			}
			t.SharedMemory, err = tensorInt(o, plan.MinSharedMemory, plan.MaxSharedMemory)
		case "version":
			if _, perr := strconv.ParseInt(strings.TrimSpace(o.Value), 10, 64); perr != nil && o.HasValue && strings.TrimSpace(o.Value) != "" {
				// A commit id, a tag or a time (docs/versioning.md).
				t.VersionRef = strings.TrimSpace(o.Value)
				break
			}
			var v int64
			v, err = tensorInt(o, 1, math.MaxInt64)
			t.Version = uint64(v)
		}
		if err != nil {
			return opts, err
		}
	}
	opts.Tensor = t
	return opts, nil
}

// tensorInt reads an integer option in [lo, hi].
func tensorInt(o Option, lo, hi int64) (int64, error) {
	if !o.HasValue {
		return 0, pgerror.Newf(pgerror.SyntaxError, "%s requires a numeric value", o.Name)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(o.Value), 10, 64)
	if err != nil {
		return 0, pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for %s: \"%s\"", strings.ToUpper(o.Name), o.Value)
	}
	if n < lo || n > hi {
		return 0, pgerror.Newf(pgerror.InvalidParameterValue, "%s %d is out of range (%d to %d)", strings.ToUpper(o.Name), n, lo, hi)
	}
	return n, nil
}

// tensorShard reads SHARD 'rank/world'.
func tensorShard(o Option) (rank, world int, err error) {
	bad := pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for SHARD: \"%s\"", o.Value).
		WithHint("SHARD takes 'rank/world' with 0 <= rank < world, such as '0/4'.")
	r, w, ok := strings.Cut(o.Value, "/")
	if !ok {
		return 0, 0, bad
	}
	ri, err1 := strconv.Atoi(strings.TrimSpace(r))
	wi, err2 := strconv.Atoi(strings.TrimSpace(w))
	if err1 != nil || err2 != nil || wi < 1 || wi > 1<<20 || ri < 0 || ri >= wi {
		return 0, 0, bad
	}
	return ri, wi, nil
}

// copyBool reads a Boolean option as PostgreSQL's defGetBoolean does; no
// value means true.
func copyBool(o Option) (v, ok bool) {
	if !o.HasValue {
		return true, true
	}
	switch strings.ToLower(o.Value) {
	case "1", "true", "on":
		return true, true
	case "0", "false", "off":
		return false, true
	}
	return false, false
}
