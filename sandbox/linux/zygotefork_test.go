package linux

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestForkReadyRun drives readyRun, the host's wait for a fork's word that
// it is ready, over a real gate and a real run cgroup (so root only), with
// the fork's end played by the test: the right byte readies the run, with
// its CPU base read; another byte, or a gate closed before a word, is an
// error that names what the fork said or did not say.
func TestForkReadyRun(t *testing.T) {
	testenv.Root(t)
	cases := []struct {
		name    string
		says    []byte // written on the fork's end, which is then closed
		wantErr string
	}{
		{"ready", []byte{forkReady}, ""},
		{"another byte", []byte("x"), `the fork said 'x', not that it was ready`},
		{"closed before a word", nil, "the fork did not say it was ready: EOF"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cg, err := newRunCgroup(fmt.Sprintf("test-ready-%d-%d", os.Getpid(), i), cgroupLimits{MemoryBytes: 64 << 20, Pids: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = removeRunCgroup(cg) })
			gate, err := newGatePair()
			if err != nil {
				t.Fatal(err)
			}
			f := &forked{cg: cg, gate: gate.w}
			defer f.gate.Close()
			if _, err := gate.r.Write(tc.says); err != nil {
				t.Fatal(err)
			}
			gate.r.Close()
			err = f.readyRun()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("readyRun: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("readyRun: got %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && f.cpuBase < 0:
				t.Fatalf("cpuBase %v", f.cpuBase)
			}
		})
	}
}
