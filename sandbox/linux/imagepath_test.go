package linux_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// A program in a root filesystem image reads its mount table: no line may
// name where the image lives on the host (the image store's path, the
// image's name), only the sandbox's own paths.
func TestImageHostPathHidden(t *testing.T) {
	needRoot(t)
	// A small image: its own /etc, the host's /usr bound in (for bash),
	// and the merged-/usr links.
	image := filepath.Join(t.TempDir(), "secret-store-name", "rootfs")
	for _, d := range []string{"usr", "etc"} {
		if err := os.MkdirAll(filepath.Join(image, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(image, "etc", "motd"), []byte("from the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(image, l)); err != nil {
			t.Fatal(err)
		}
	}
	usr := filepath.Join(image, "usr")
	if err := syscall.Mount("/usr", usr, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind /usr into the test image: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(usr, syscall.MNT_DETACH) })

	rt := newRuntime(t, linux.Options{RootFS: image})
	res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Bash,
		Code: "cat /etc/motd\ncat /proc/self/mountinfo\n"})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("run: %v, status %s, stderr %q", err, res.Status, res.Stderr)
	}
	out := string(res.Stdout)
	if !strings.HasPrefix(out, "from the image\n") {
		t.Fatalf("the image's /etc is not the sandbox's: stdout %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		for _, secret := range []string{image, "secret-store-name", filepath.Dir(filepath.Dir(image))} {
			if strings.Contains(line, secret) {
				t.Errorf("the sandbox's mountinfo names the image's host path (%s): %s", secret, line)
				break
			}
		}
	}
}
