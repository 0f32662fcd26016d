package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A build's hash table sized from the estimate takes its keys without
// growing; an estimate past maxReservedKeys reserves only that many; a
// reservation the budget refuses is skipped and the keys still go in.
func TestKeyTableReserve(t *testing.T) {
	keys := make([]uint64, 5000)
	hashes := make([]uint64, len(keys))
	for i := range keys {
		keys[i] = uint64(i * 7)
		hashes[i] = hash64(keys[i])
	}
	gids := make([]uint32, len(keys))
	none := func(int64) error { return nil }

	var ft fixedTable[uint64]
	ft.init(hash64)
	if err := ft.reserve(len(keys), none); err != nil {
		t.Fatal(err)
	}
	slots := len(ft.slots)
	if slots/4*3 < len(keys) {
		t.Fatalf("reserved %d slots for %d keys", slots, len(keys))
	}
	if err := ft.findOrInsert(keys, hashes, gids, none); err != nil {
		t.Fatal(err)
	}
	if len(ft.slots) != slots || len(ft.keys) != len(keys) {
		t.Errorf("after %d inserts: %d slots (reserved %d), %d keys", len(keys), len(ft.slots), slots, len(ft.keys))
	}
	// A second reserve of a table holding keys does nothing.
	if err := ft.reserve(1<<20, none); err != nil || len(ft.slots) != slots {
		t.Errorf("reserve of a filled table: %v, %d slots", err, len(ft.slots))
	}

	// The bound: a join spec estimating 2^40 rows reserves maxReservedKeys.
	s, err := newJoinShape(joinLeftSchema, joinRightSchema, HashJoinSpec{Type: JoinInner, LeftKeys: []int{0}, RightKeys: []int{0}, BuildRows: 1 << 40}, "hash join")
	if err != nil {
		t.Fatal(err)
	}
	if s.reserveKeys != maxReservedKeys {
		t.Errorf("reserveKeys %d, want %d", s.reserveKeys, maxReservedKeys)
	}

	// A budget too small for the reservation: skipped, the insert works.
	b := NewBudget(64 << 10)
	kt := newKeyTable(s.keyInfos, b.NewAccount("test"))
	kt.reserveKeys = maxReservedKeys
	rec := MakeRecord(t, memory.NewGoAllocator(), joinRightSchema, [][]any{{int64(1), "b", int32(1), true, "2000-01-02"}, {int64(2), "b", int32(2), true, "2000-01-02"}})
	defer rec.Release()
	g := make([]uint32, 2)
	if err := kt.findOrInsert(rec.Columns()[:1], nil, 2, g); err != nil {
		t.Fatalf("insert after a refused reservation: %v", err)
	}
	if kt.groups() != 2 || kt.reserveKeys != 0 {
		t.Errorf("groups %d, reserveKeys %d", kt.groups(), kt.reserveKeys)
	}
}
