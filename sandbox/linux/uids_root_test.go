package linux_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// testUIDBase is a range of the tests' own, apart from the default one
// other runtimes on the host use.
const testUIDBase = linux.DefaultUIDBase + linux.DefaultUIDCount + 1000

// TestUIDCountBoundsLiveSandboxes gives a runtime one uid: a session holds
// it, so a run fails with an error that names the field to raise, and once
// the session is closed (its sandbox gone) the run gets the uid.
func TestUIDCountBoundsLiveSandboxes(t *testing.T) {
	rt := newRuntime(t, linux.Options{UIDBase: testUIDBase, UIDCount: 1})
	s := newSession(t, rt, sandbox.Limits{})
	if res := execCode(t, s, "import os\nos.getuid(), os.getgid()"); res.Value != fmt.Sprintf("(%d, %d)", testUIDBase, testUIDBase) {
		t.Errorf("the session runs as %s, want uid and gid %d", res.Value, testUIDBase)
	}
	req := sandbox.Request{Language: sandbox.Python, Code: "import os\nprint(os.getuid())"}
	res, err := rt.Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "all 1 sandbox uids") || !strings.Contains(err.Error(), "UIDCount") {
		t.Fatalf("a run while the only uid is held: err %v (%s), want the exhaustion error", err, describe(res))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if res := runProgram(t, rt, req); strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(testUIDBase) {
		t.Errorf("the run after the session closed: %s, want uid %d", describe(res), testUIDBase)
	}
}

// TestUIDOptionsRefused checks the errors of a bad range, which name the
// fields.
func TestUIDOptionsRefused(t *testing.T) {
	testenv.Root(t)
	for _, tc := range []struct {
		opts linux.Options
		err  string
	}{
		{linux.Options{UIDBase: 1000}, "linux.Options: UIDBase and UIDCount: uid base must be at least 65536"},
		{linux.Options{UIDCount: -1}, "linux.Options: UIDBase and UIDCount: uid count must be at least 1"},
		// A zygote slot (Warm) holds two uids, a single-run warm sandbox one.
		{linux.Options{UIDCount: 3, Prestart: 1, Warm: 1}, "linux.Options: UIDCount (3) must exceed Prestart+Warm+WarmSessions (3, a zygote slot of Warm counting twice)"},
		{linux.Options{UIDCount: 2, Prestart: 1, Warm: 1, SingleRunWarm: true}, "linux.Options: UIDCount (2) must exceed Prestart+Warm+WarmSessions (2, "},
		{linux.Options{UIDCount: 3, Warm: 1, WarmSessions: 1}, "linux.Options: UIDCount (3) must exceed Prestart+Warm+WarmSessions (3, "},
	} {
		if _, err := linux.New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("New(%+v): %v, want an error saying %q", tc.opts, err, tc.err)
		}
	}
}
