package e2e

import (
	"reflect"
	"testing"
)

// TestTapCases checks how the TypeScript SDK's results are read from
// Node's TAP reporter: top-level tests only, skips with their reason,
// failures with their details, so that a skipped or failed SDK test
// cannot pass as a subtest.
func TestTapCases(t *testing.T) {
	out := `TAP version 13
# Subtest: one
ok 1 - one
  ---
  duration_ms: 1.9
  ...
# Subtest: two
    # Subtest: sub
    not ok 1 - sub
    1..1
ok 2 - two
ok 3 - skipme # SKIP no server
not ok 4 - bad
  ---
  error: 'boom'
  ...
1..4
# pass 2
`
	want := []suiteCase{
		{name: "f/one", outcome: "passed"},
		{name: "f/two", outcome: "passed"},
		{name: "f/skipme", outcome: "skipped", detail: "no server"},
		{name: "f/bad", outcome: "failed", detail: "  ---\n  error: 'boom'\n  ...\n"},
	}
	if got := tapCases("f", []byte(out)); !reflect.DeepEqual(got, want) {
		t.Errorf("tapCases:\n got %+v\nwant %+v", got, want)
	}
}
