package e2e

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// sdkBench turns TestSDKBench on: `go test -tags crucible_initexe ./e2e/
// -run TestSDKBench -sdk-bench -v`, or scripts/test.sh --bench.
var sdkBench = flag.Bool("sdk-bench", false, "time the Python and TypeScript SDKs against raw HTTP (TestSDKBench)")

// TestSDKBench runs each SDK's benchmark against one local server
// (startSDKServer): sdk/python/bench.py with Debian's python3 and
// sdk/typescript/bench.mjs with node each time runs of print(1) through
// the SDK and, interleaved in the same process, through raw HTTP of the
// same language (urllib, fetch), and print a line "sdk-bench: ..." with
// the medians, the difference (target: the SDK adds ≤ 0.5 ms) and the
// ratio. The lines are logged; the test fails only if a script fails or
// prints no such line, not on a missed target (the machine is shared).
func TestSDKBench(t *testing.T) {
	if !*sdkBench {
		t.Skip("runs only with -sdk-bench (scripts/test.sh --bench)")
	}
	python := testenv.Pytest(t)
	ts := testenv.TypeScriptSDK(t)
	env := startSDKServer(t)
	for _, bench := range []struct{ name, program, script string }{
		{"python", python, "sdk/python/bench.py"},
		{"typescript", "node", filepath.Join(ts, "bench.mjs")},
	} {
		out, err := runSuite(t, env, bench.program, bench.script)
		var lines []string
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "sdk-bench:") {
				lines = append(lines, line)
			}
		}
		if err != nil || len(lines) == 0 {
			t.Errorf("%s %s: %v, %d sdk-bench lines; its output:\n%s", bench.program, bench.script, err, len(lines), out)
			continue
		}
		t.Logf("%s SDK: %s", bench.name, strings.Join(lines, "\n"))
	}
}
