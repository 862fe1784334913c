package sandboxinit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSyntheticMeminfo(t *testing.T) {
	for _, tc := range []struct {
		memory int64
		want   string
	}{
		{256 << 20, "MemTotal:         262144 kB"},
		{8 << 20, "MemTotal:           8192 kB"},
		{0, "MemTotal:              0 kB"},
	} {
		got := SyntheticMeminfo(tc.memory)
		if first, _, _ := strings.Cut(got, "\n"); first != tc.want {
			t.Errorf("memory %d: first line %q, want %q", tc.memory, first, tc.want)
		}
		if !strings.Contains(got, "SwapTotal:") || !strings.Contains(got, "MemAvailable:") {
			t.Errorf("memory %d: lacks SwapTotal or MemAvailable:\n%s", tc.memory, got)
		}
	}
}

func TestSyntheticStat(t *testing.T) {
	host := filepath.Join(t.TempDir(), "stat")
	hostStat := "cpu  10 2 3 4000 5 0 6 0 0 0\ncpu0 5 1 1 2000 2 0 3 0 0 0\nintr 123 4 5\nctxt 98765\nbtime 1700000000\nprocesses 4242\n"
	if err := os.WriteFile(host, []byte(hostStat), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cpus := range []int{1, 2, 8} {
		got, err := syntheticStat(host, cpus)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(regexp.MustCompile(`(?m)^cpu\d+ `).FindAllString(got, -1)); n != cpus {
			t.Errorf("%d processors: %d cpuN lines in\n%s", cpus, n, got)
		}
		if !strings.Contains(got, "\nbtime 1700000000\n") {
			t.Errorf("the host's btime is not kept:\n%s", got)
		}
		for _, hidden := range []string{"4000", "98765", "4242", "123"} {
			if strings.Contains(got, hidden) {
				t.Errorf("the host's counter %s shows:\n%s", hidden, got)
			}
		}
	}
}

func TestRandomUUID(t *testing.T) {
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, errA := randomUUID()
	b, errB := randomUUID()
	if errA != nil || errB != nil || !v4.MatchString(a) || !v4.MatchString(b) || a == b {
		t.Fatalf("randomUUID: %q (%v), %q (%v)", a, errA, b, errB)
	}
}
