package sandboxtest

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// testSessionMemoryRestart: a cell runs its interpreter out of memory.
// The cell ends as memory_limit with Restarted set and a reason saying
// what was lost, and the session lives on: the next cell runs in a fresh
// interpreter (the variables gone, the files kept) that is as locked
// down as the first: the same user, groups, capabilities (none), seccomp
// mode and no_new_privs, as its /proc/self/status shows before and after.
func testSessionMemoryRestart(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{MemoryBytes: 128 * sandbox.MiB})
	const status = "import os\nkeep = ('Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')\n" +
		"[l for l in open('/proc/self/status').read().splitlines() if l.split(':')[0] in keep]"
	res, err := execCell(t, ses, sandbox.Cell{Code: "x = 1\nopen('kept.txt', 'w').write('yes')"})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("first cell: %v, %s", err, describeCell(res))
	}
	before, err := execCell(t, ses, sandbox.Cell{Code: status})
	if err != nil || before.Status != sandbox.StatusOK || !strings.Contains(before.Value, "CapEff") {
		t.Fatalf("positive control, the interpreter's status: %v, %s", err, describeCell(before))
	}
	res, err = execCell(t, ses, sandbox.Cell{Code: "b = bytearray()\nwhile True:\n    b += bytes(1 << 20)", TimeoutMS: 60_000})
	if err != nil || res.Status != sandbox.StatusMemoryLimit || !res.Restarted || !strings.Contains(res.Reason, "every variable") {
		t.Fatalf("want memory_limit, restarted, a reason saying every variable was lost; got %v, %s, restarted %v", err, describeCell(res), res.Restarted)
	}
	res, err = execCell(t, ses, sandbox.Cell{Code: "'x' in globals(), open('kept.txt').read()"})
	if err != nil || res.Status != sandbox.StatusOK || res.Value != "(False, 'yes')" {
		t.Fatalf("after the restart, want a fresh interpreter and the files kept: %v, %s", err, describeCell(res))
	}
	after, err := execCell(t, ses, sandbox.Cell{Code: status})
	if err != nil || after.Value != before.Value {
		t.Fatalf("the restarted interpreter is not locked down as the first was (%v):\nbefore %s\nafter  %s", err, before.Value, after.Value)
	}
}
