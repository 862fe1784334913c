package image

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScrubBuildHost builds a root as debootstrap and the packages leave
// it and checks that nothing of the build machine stays: its name, name
// server and mail name gone, the machine ids emptied, a link removed
// without touching its target, the rest of /etc untouched.
func TestScrubBuildHost(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "host-machine-id")
	files := map[string]string{
		"etc/hostname": "vm\n", "etc/resolv.conf": "nameserver 10.0.2.3\n", "etc/mailname": "vm.example\n",
		"etc/machine-id": "0123456789abcdef0123456789abcdef\n", "etc/os-release": "ID=debian\n", outside: "host's\n",
		"var/log/bootstrap.log": "URL:http://deb.debian.org/... -> \"/var/lib/crucible/images/.x.building-1/rootfs/...\"\n",
		"var/log/dpkg.log":      "status installed python3\n",
	}
	for p, content := range files {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "var/lib/dbus"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "var/lib/dbus/machine-id")); err != nil {
		t.Fatal(err)
	}
	if err := scrubBuildHost(root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // the content left, when not gone
		gone bool   // removed
	}{
		{"etc/hostname", "", true},
		{"etc/resolv.conf", "", true},
		{"etc/mailname", "", true},
		{"etc/machine-id", "", false},
		{"var/lib/dbus/machine-id", "", true},
		{"var/log/bootstrap.log", "", true},
		{"var/log/dpkg.log", "status installed python3\n", false},
		{"etc/os-release", "ID=debian\n", false},
		{outside, "host's\n", false},
	} {
		p := tc.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		b, err := os.ReadFile(p)
		if gone := os.IsNotExist(err); gone != tc.gone || (!gone && string(b) != tc.want) {
			t.Errorf("%s: content %q, err %v; want gone %v, content %q", tc.path, b, err, tc.gone, tc.want)
		}
	}
	if err := scrubBuildHost(root); err != nil { // nothing left to scrub is no error
		t.Errorf("second scrub: %v", err)
	}
}
