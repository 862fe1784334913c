package sandboxinit

import (
	"slices"
	"testing"
)

// TestZygoteStart checks how init starts a program, a zygote or not: a
// zygote as root (it takes its ids itself), from a thread that keeps only
// the capabilities it needs for that in its bounding set, with seccomp on
// that thread alone (init mounts between runs); any other program as the
// sandbox user, with every capability dropped and every thread filtered.
func TestZygoteStart(t *testing.T) {
	base := &BaseConfig{UID: 2000000003, GID: 2000000003}
	argv := []string{"/usr/bin/python3", "/code/kernel.py"}
	for _, tc := range []struct {
		name       string
		zygote     int
		asRoot     bool
		kept       []int
		allThreads bool
	}{
		{"program", 0, false, nil, true},
		{"zygote", 2000000002, true, []int{capSetgid, capSetuid, capSetpcap}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &RunConfig{Argv: argv, ZygoteUID: tc.zygote}
			exe, gotArgv, cred := programCommand(base, cfg)
			if exe != argv[0] || !slices.Equal(gotArgv, argv) {
				t.Errorf("command %s %v, want %s %v", exe, gotArgv, argv[0], argv)
			}
			if asRoot := cred == nil; asRoot != tc.asRoot {
				t.Errorf("started as root: %v, want %v", asRoot, tc.asRoot)
			}
			if cred != nil && (cred.Uid != uint32(base.UID) || cred.Gid != uint32(base.GID) || len(cred.Groups) != 0) {
				t.Errorf("credential %+v, want the sandbox user's, no groups", cred)
			}
			if got := boundsKept(cfg); !slices.Equal(got, tc.kept) {
				t.Errorf("bounding set kept %v, want %v", got, tc.kept)
			}
			if got := seccompAllThreads(cfg); got != tc.allThreads {
				t.Errorf("seccomp on all threads: %v, want %v", got, tc.allThreads)
			}
		})
	}
}
