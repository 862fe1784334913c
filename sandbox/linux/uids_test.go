package linux

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestCheckUIDRange(t *testing.T) {
	for _, tc := range []struct {
		base, count int
		err         string // a part of the error; "" for none
	}{
		{DefaultUIDBase, DefaultUIDCount, ""},
		{65536, 1, ""},
		{maxUID, 1, ""},
		{maxUID - 9, 10, ""},
		{0, 10, "uid base must be at least 65536"},
		{1000, 10, "uid base must be at least 65536"},
		{65534, 10, "uid base must be at least 65536"},
		{100000, 0, "uid count must be at least 1"},
		{100000, -5, "uid count must be at least 1"},
		{maxUID - 9, 11, "must end by 4294967295"},
		{maxUID + 1, 1, "must end by 4294967295"},
	} {
		err := CheckUIDRange(tc.base, tc.count)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CheckUIDRange(%d, %d) = %v, want nil", tc.base, tc.count, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CheckUIDRange(%d, %d) = %v, want an error saying %q", tc.base, tc.count, err, tc.err)
		}
	}
}

// newTestAllocator returns an allocator of count uids from 100000 whose
// lock file is in dir.
func newTestAllocator(t *testing.T, dir string, count int) *uidAllocator {
	t.Helper()
	a, err := newUIDAllocator(100000, count, filepath.Join(dir, "uids.lock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.lockFile.Close() })
	return a
}

// TestUIDAllocatorConcurrent takes every uid of a range at once from many
// goroutines: each gets a different one, in the range, and the next take
// fails with an error that says why and what to raise.
func TestUIDAllocatorConcurrent(t *testing.T) {
	const n = 64
	a := newTestAllocator(t, t.TempDir(), n)
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = a.take() })
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, uid := range got {
		switch {
		case errs[i] != nil:
			t.Errorf("take %d: %v", i, errs[i])
		case uid < 100000 || uid >= 100000+n:
			t.Errorf("take %d: uid %d outside [100000, %d)", i, uid, 100000+n)
		case seen[uid]:
			t.Errorf("take %d: uid %d handed out twice", i, uid)
		}
		seen[uid] = true
	}
	_, err := a.take()
	if err == nil || !strings.Contains(err.Error(), "all 64 sandbox uids [100000, 100064) are in use") || !strings.Contains(err.Error(), "raise it") {
		t.Fatalf("take from a range in full use: %v, want the exhaustion error", err)
	}
	a.give(got[7])
	if uid, err := a.take(); err != nil || uid != got[7] {
		t.Errorf("take after giving %d back: %d, %v; want %d", got[7], uid, err, got[7])
	}
}

// TestUIDAllocatorNoReuseWhileHeld checks that a held uid is never handed
// out again, that a uid given back is the last to be taken again, and
// that giving a uid twice, or one never taken, frees nothing.
func TestUIDAllocatorNoReuseWhileHeld(t *testing.T) {
	a := newTestAllocator(t, t.TempDir(), 4)
	first, _ := a.take()
	second, _ := a.take()
	a.give(second)
	a.give(second)
	a.give(100003) // never taken
	var order []int
	for range 3 {
		uid, err := a.take()
		if err != nil {
			t.Fatal(err)
		}
		if uid == first {
			t.Fatalf("uid %d handed out while held", first)
		}
		order = append(order, uid)
	}
	if want := []int{100002, 100003, 100001}; !slices.Equal(order, want) {
		t.Errorf("takes after giving %d back: %v, want %v (the uid given back last)", second, order, want)
	}
	if _, err := a.take(); err == nil {
		t.Errorf("a fifth take from a range of four succeeded")
	}
}

// TestUIDAllocatorsShareTheHost stands for two Runtimes, in one process or
// two, on the same range: a uid one holds, the other skips, until it is
// given back.
func TestUIDAllocatorsShareTheHost(t *testing.T) {
	dir := t.TempDir()
	a, b := newTestAllocator(t, dir, 2), newTestAllocator(t, dir, 2)
	ua, err := a.take()
	if err != nil {
		t.Fatal(err)
	}
	ub, err := b.take()
	if err != nil || ub == ua {
		t.Fatalf("b took %d, %v while a holds %d", ub, err, ua)
	}
	if uid, err := b.take(); err == nil {
		t.Fatalf("b took %d while a holds %d and b %d", uid, ua, ub)
	}
	a.give(ua)
	if uid, err := b.take(); err != nil || uid != ua {
		t.Errorf("b's take after a gave %d back: %d, %v", ua, uid, err)
	}
}
