package linux_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// A program in a root filesystem image reads its mount table: no line may
// name where the image lives on the host (the image store's path, the
// image's name), only the sandbox's own paths.
func TestImageHostPathHidden(t *testing.T) {
	testenv.Root(t)
	// A small image: its own /etc, and copies of bash and cat with the
	// libraries they load under its own /usr (merged-/usr links beside).
	// Copies, not a bind of the host's /usr: a mount in the host's mount
	// table, even for a moment, would fail the host checks of tests that
	// run beside this one (the e2e package compares mount tables).
	image := filepath.Join(t.TempDir(), "secret-store-name", "rootfs")
	if err := os.MkdirAll(filepath.Join(image, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(image, "etc", "motd"), []byte("from the image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(image, l)); err != nil {
			t.Fatal(err)
		}
	}
	copyIntoImage(t, image, "/usr/bin/bash", "/usr/bin/cat")

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

// copyIntoImage copies programs, and the shared libraries ldd says they
// load, into image at their paths under /usr (the image's /lib and /lib64
// lead there).
func copyIntoImage(t *testing.T, image string, programs ...string) {
	t.Helper()
	out, err := exec.Command("ldd", programs...).Output()
	if err != nil {
		t.Fatalf("ldd %v: %v", programs, err)
	}
	files := append([]string{}, programs...)
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") && !strings.HasSuffix(f, ":") {
			files = append(files, f)
		}
	}
	for _, f := range files {
		dst := filepath.Join(image, "usr", strings.TrimPrefix(strings.TrimPrefix(f, "/usr"), "/"))
		content, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
