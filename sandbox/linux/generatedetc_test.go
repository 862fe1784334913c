package linux_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// identityProgram prints what a program learns of the machine it runs on:
// the name in /etc/hostname, the kernel's (socket.gethostname, uname -n),
// what /etc/hosts resolves localhost and that name to, who it is, and
// /etc/resolv.conf. Each line must be the sandbox's, never the host's or
// the machine's that built an image.
const identityProgram = `import os, socket, getpass
print(open("/etc/hostname").read().strip())
print(socket.gethostname(), os.uname().nodename)
print(socket.gethostbyname("localhost"), socket.gethostbyname(socket.gethostname()))
uids = [int(l.split(":")[2]) for l in open("/etc/passwd") if l.startswith(getpass.getuser() + ":")]
print(getpass.getuser(), uids == [os.getuid()])
print(open("/etc/resolv.conf").read().strip())
left = ("/etc/mailname", "/etc/machine-id", "/var/lib/dbus/machine-id", "/var/log/bootstrap.log")
print([p for p in left if os.path.exists(p) and os.path.getsize(p)])
`

// identityWant is identityProgram's output in every root.
const identityWant = "sandbox\nsandbox sandbox\n127.0.0.1 127.0.0.1\nsandbox True\n# no name server: the sandbox has no network of its own\n[]\n"

// TestGeneratedEtc proves a sandbox gets the same generated /etc files on
// the host's directories and in an image (issue 23): /etc/hostname agrees
// with the UTS name, /etc/hosts resolves localhost and that name, the
// user has an entry, and nothing of the machine that built the image
// shows. leaky is an image built as debootstrap builds one: the build
// host's name and name server in its /etc, no /etc/hosts, its own users,
// a machine id and mail name, and debootstrap's log, which names the
// image store's path on the build host.
// The generated files lie over the image's, which stays unchanged.
func TestGeneratedEtc(t *testing.T) {
	testenv.Root(t)
	leaky := filepath.Join(t.TempDir(), "rootfs")
	buildEtc := map[string]string{
		"hostname": "buildhost-7\n", "resolv.conf": "nameserver 192.0.2.53\nsearch build.example\n",
		"passwd": "root:x:0:0:root:/root:/bin/bash\nbuilder:x:1000:1000::/home/builder:/bin/bash\n",
		"group":  "root:x:0:\nbuilder:x:1000:\n", "machine-id": "0123456789abcdef0123456789abcdef\n", "mailname": "buildhost-7.example\n",
		"../var/log/bootstrap.log": "URL:http://deb.debian.org/x.deb -> \"/srv/store/.img.building-1/rootfs/x.deb\"\n",
	}
	for name, content := range buildEtc {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(leaky, "etc", name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(leaky, "etc", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(leaky, l)); err != nil {
			t.Fatal(err)
		}
	}
	copyIntoImage(t, leaky, "/usr/bin/bash", "/usr/bin/cat", "/usr/bin/id")

	cases := []struct {
		name string
		opts func(t *testing.T) linux.Options
		req  sandbox.Request
		want string
	}{
		{"host's directories", func(*testing.T) linux.Options { return linux.Options{} },
			sandbox.Request{Language: sandbox.Python, Code: identityProgram}, identityWant},
		{"datascience image", func(t *testing.T) linux.Options { return imageOptions(testenv.Image(t, "datascience")) },
			sandbox.Request{Language: sandbox.Python, Code: identityProgram}, identityWant},
		// Bash and coreutils only: the files themselves, the kernel's name
		// as bash has it, and id's name for the uid (from /etc/passwd).
		{"an image with the build machine's /etc", func(*testing.T) linux.Options { return linux.Options{RootFS: leaky} },
			sandbox.Request{Language: sandbox.Bash, Code: "cat /etc/hostname /etc/hosts /etc/resolv.conf /etc/machine-id /etc/mailname /var/log/bootstrap.log; echo \"$HOSTNAME\"; id -un; cat /etc/group"},
			"sandbox\n127.0.0.1 localhost sandbox\n::1 localhost\n# no name server: the sandbox has no network of its own\nsandbox\nsandbox\nroot:x:0:\nsandbox:x:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, tc.opts(t))
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			res, err := rt.Run(ctx, tc.req)
			if err != nil || res.Status != sandbox.StatusOK {
				t.Fatalf("run: %v, status %s, stdout %q stderr %q", err, res.Status, res.Stdout, res.Stderr)
			}
			if out := string(res.Stdout); !strings.HasPrefix(out, tc.want) {
				t.Errorf("stdout %q, want it to begin %q", out, tc.want)
			}
		})
	}
	for name, content := range buildEtc { // the image itself is untouched
		if b, err := os.ReadFile(filepath.Join(leaky, "etc", name)); err != nil || string(b) != content {
			t.Errorf("the image's /etc/%s now reads %q (%v), want %q", name, b, err, content)
		}
	}
	if _, err := os.Lstat(filepath.Join(leaky, "etc", "hosts")); !os.IsNotExist(err) {
		t.Errorf("the image gained an /etc/hosts: %v", err)
	}
}
