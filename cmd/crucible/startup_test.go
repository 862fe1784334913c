package main

import (
	"regexp"
	"strconv"
	"testing"
)

// initTrace matches a line of GODEBUG=inittrace=1 for one of Crucible's
// own packages: its name and the bytes its initialisation allocated.
var initTrace = regexp.MustCompile(`(?m)^init (github\.com/crucible-sandbox/crucible/\S+) @.* ([0-9]+) bytes, [0-9]+ allocs$`)

// maxInitBytes is the most one of Crucible's packages may allocate as the
// command starts. Every command pays every package's initialisation
// (`crucible run` included, whose budget is twice a bare interpreter's
// start), so work only some paths need, such as compiling the redaction
// patterns, is done when first needed.
const maxInitBytes = 128 << 10

// TestStartupInitLight starts the command (its --help) with the Go
// runtime's init trace and checks that none of Crucible's packages does
// much work at initialisation. Allocation is the measure: deterministic,
// unlike time.
func TestStartupInitLight(t *testing.T) {
	cmd := cli{}.command("--help")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := initTrace.FindAllStringSubmatch(string(out), -1)
	if len(lines) == 0 {
		t.Fatalf("no init trace of Crucible's packages in:\n%s", out)
	}
	for _, m := range lines {
		if n, _ := strconv.Atoi(m[2]); n > maxInitBytes {
			t.Errorf("%s allocates %d bytes as it initialises, want at most %d", m[1], n, maxInitBytes)
		}
	}
}
