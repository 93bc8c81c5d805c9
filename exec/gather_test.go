package exec

import (
	"testing"

	"github.com/deeplaked/deeplaked/storage"
)

// TestMorselsOf: runs of row groups of one fragment join into morsels of
// about a share of the table each; fragments, buffered and own rows stay
// apart, and every row is in exactly one morsel.
func TestMorselsOf(t *testing.T) {
	const g = storage.RowGroupRows
	var groups []storage.RowGroup
	for lo := int64(0); lo < 40*g; lo += g {
		groups = append(groups, storage.RowGroup{Kind: storage.GroupFragment, Fragment: 1, Start: lo, End: lo + g})
	}
	for lo := int64(0); lo < 3*g; lo += g {
		groups = append(groups, storage.RowGroup{Kind: storage.GroupFragment, Fragment: 2, Start: lo, End: lo + g})
	}
	groups = append(groups, storage.RowGroup{Kind: storage.GroupBuffered})
	ms := morselsOf(groups, 2)
	// 43 groups of rows, a share of 43/4 groups: fragment 1 in 4 morsels
	// (11, 11, 11, 7 groups), fragment 2 in one, the buffered rows in one.
	want := []storage.RowGroup{
		{Kind: storage.GroupFragment, Fragment: 1, Start: 0, End: 11 * g},
		{Kind: storage.GroupFragment, Fragment: 1, Start: 11 * g, End: 22 * g},
		{Kind: storage.GroupFragment, Fragment: 1, Start: 22 * g, End: 33 * g},
		{Kind: storage.GroupFragment, Fragment: 1, Start: 33 * g, End: 40 * g},
		{Kind: storage.GroupFragment, Fragment: 2, Start: 0, End: 3 * g},
		{Kind: storage.GroupBuffered},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d morsels: %+v", len(ms), ms)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("morsel %d: %+v, want %+v", i, ms[i], want[i])
		}
	}
	// Small tables keep a row group a morsel.
	if ms := morselsOf(groups[:3], 8); len(ms) != 3 {
		t.Errorf("small table: %+v", ms)
	}
}
