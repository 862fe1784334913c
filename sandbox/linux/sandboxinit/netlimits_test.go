package sandboxinit

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v669", true},
		{"4.15.0", true},
		{"4.15-rc1", true},
		{"4.14.300-generic", false},
		{"3.10.0-1160.el7.x86_64", false},
		{"5.0", true},
		{"", false},
		{"garbage", false},
	} {
		if got := kernelAtLeast(tc.release, [2]int{4, 15}); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 4.15) = %v, want %v", tc.release, got, tc.want)
		}
	}
}
