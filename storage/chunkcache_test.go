package storage

import (
	"strconv"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

func TestChunkCacheEvictsLeastRecentlyUsed(t *testing.T) {
	vec := func() *types.Vec {
		v := types.NewVec(types.TypInt8, 100)
		for i := range 100 {
			v.AppendInt(int64(i))
		}
		return v
	}
	size := vecSize(vec())
	c := newChunkCache(4 * size)
	for i := range 4 {
		c.put(strconv.Itoa(i), vec())
	}
	if _, ok := c.get("0"); !ok { // 0 becomes the most recent
		t.Fatal("entry 0 missing")
	}
	c.put("4", vec()) // evicts 1, the least recent
	if _, ok := c.get("1"); ok {
		t.Fatal("entry 1 not evicted")
	}
	for _, k := range []string{"0", "2", "3", "4"} {
		if _, ok := c.get(k); !ok {
			t.Fatalf("entry %s evicted", k)
		}
	}
	if c.used != 4*size {
		t.Fatalf("used %d, want %d", c.used, 4*size)
	}
	// A chunk larger than a quarter of the budget is not kept.
	big := types.NewVec(types.TypInt8, 1000)
	c.put("big", big)
	if _, ok := c.get("big"); ok {
		t.Fatal("an oversized chunk was cached")
	}
}
