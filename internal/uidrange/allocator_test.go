//go:build linux

package uidrange

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// newTestAllocator returns an allocator of count uids from 100000 whose
// lock file is in dir.
func newTestAllocator(t *testing.T, dir string, count int) *Allocator {
	t.Helper()
	a, err := New(100000, count, filepath.Join(dir, "uids.lock"), "the test's count")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestConcurrent takes every uid of a range at once from many
// goroutines: each gets a different one, in the range, and the next take
// fails with an error that says why and what to raise.
func TestConcurrent(t *testing.T) {
	const n = 64
	a := newTestAllocator(t, t.TempDir(), n)
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = a.Take() })
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
	_, err := a.Take()
	if err == nil || !strings.Contains(err.Error(), "all 64 sandbox uids [100000, 100064) are in use") || !strings.Contains(err.Error(), "raise it") {
		t.Fatalf("take from a range in full use: %v, want the exhaustion error", err)
	}
	a.Give(got[7])
	if uid, err := a.Take(); err != nil || uid != got[7] {
		t.Errorf("take after giving %d back: %d, %v; want %d", got[7], uid, err, got[7])
	}
}

// TestNoReuseWhileHeld checks that a held uid is never handed
// out again, that a uid given back is the last to be taken again, and
// that giving a uid twice, or one never taken, frees nothing.
func TestNoReuseWhileHeld(t *testing.T) {
	a := newTestAllocator(t, t.TempDir(), 4)
	first, _ := a.Take()
	second, _ := a.Take()
	a.Give(second)
	a.Give(second)
	a.Give(100003) // never taken
	var order []int
	for range 3 {
		uid, err := a.Take()
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
	if _, err := a.Take(); err == nil {
		t.Errorf("a fifth take from a range of four succeeded")
	}
}

// TestAllocatorsShareTheHost stands for two Runtimes, in one process or
// two, on the same range: a uid one holds, the other skips, until it is
// given back.
func TestAllocatorsShareTheHost(t *testing.T) {
	dir := t.TempDir()
	a, b := newTestAllocator(t, dir, 2), newTestAllocator(t, dir, 2)
	ua, err := a.Take()
	if err != nil {
		t.Fatal(err)
	}
	ub, err := b.Take()
	if err != nil || ub == ua {
		t.Fatalf("b took %d, %v while a holds %d", ub, err, ua)
	}
	if uid, err := b.Take(); err == nil {
		t.Fatalf("b took %d while a holds %d and b %d", uid, ua, ub)
	}
	a.Give(ua)
	if uid, err := b.Take(); err != nil || uid != ua {
		t.Errorf("b's take after a gave %d back: %d, %v", ua, uid, err)
	}
}
