package docker

import "testing"

// TestUIDsSharedAcrossRuntimes: the uid allocators of two runtimes in one
// process (a server's docker and gvisor runtimes) on the same range never
// hand out one uid to two live containers; a uid given back is taken again.
func TestUIDsSharedAcrossRuntimes(t *testing.T) {
	const base = DefaultUIDBase + DefaultUIDCount + 500 // apart from live runtimes' range
	a, err := newUIDs(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newUIDs(base, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	ua, err := a.Take()
	if err != nil {
		t.Fatal(err)
	}
	ub, err := b.Take()
	if err != nil || ub == ua {
		t.Fatalf("the second runtime took %d (%v) while the first holds %d", ub, err, ua)
	}
	if uid, err := b.Take(); err == nil {
		t.Fatalf("the second runtime took %d from a range of two both held", uid)
	}
	a.Give(ua)
	if uid, err := b.Take(); err != nil || uid != ua {
		t.Errorf("a take after %d was given back: %d, %v", ua, uid, err)
	}
}
