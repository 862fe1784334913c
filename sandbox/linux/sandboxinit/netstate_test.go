package sandboxinit

import (
	"strings"
	"testing"
)

// TestNetStateChangedSince checks that any difference in a file of
// netFiles, a file appearing or going included, is an error naming the
// files, and that the same state is none.
func TestNetStateChangedSince(t *testing.T) {
	base := netState{"dev": "lo: 0 0", "unix": "Num RefCount\n", "snmp": "Tcp: 0 0"}
	for _, tc := range []struct {
		name string
		now  netState
		want string // the names the error lists, "" for no error
	}{
		{"unchanged", netState{"dev": "lo: 0 0", "unix": "Num RefCount\n", "snmp": "Tcp: 0 0"}, ""},
		{"loopback counters", netState{"dev": "lo: 472 9", "unix": "Num RefCount\n", "snmp": "Tcp: 0 0"}, "{dev}"},
		{"a socket and protocol counters", netState{"dev": "lo: 0 0", "unix": "Num RefCount\n0: 2 @covert\n", "snmp": "Tcp: 1 1"}, "{unix,snmp}"},
		{"a file gone", netState{"dev": "lo: 0 0", "snmp": "Tcp: 0 0"}, "{unix}"},
		{"a file new", netState{"dev": "lo: 0 0", "unix": "Num RefCount\n", "snmp": "Tcp: 0 0", "raw": "sl\n"}, "{raw}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.now.changedSince(base)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "/proc/net/"+tc.want+" changed")):
				t.Errorf("got %v, want an error naming /proc/net/%s", err, tc.want)
			}
		})
	}
}

// TestReadNetState checks that the state of this process's network
// namespace reads, loopback's counters and the unix table among it.
func TestReadNetState(t *testing.T) {
	a, err := readNetState()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a["dev"], "lo:") || a["unix"] == "" {
		t.Fatalf("want loopback's counters and the unix table, got %q and %q", a["dev"], a["unix"])
	}
}
