package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// hostSystemDirs are the host directories a sandbox sees when no root
// filesystem image is given: programs and libraries, nothing else. /home,
// /root, /run, /var, /srv, /opt, /mnt, /media, /sys and the host's /tmp are
// left out on purpose: they hold users' data, sockets and secrets.
var hostSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// hostEtcAllowlist is the part of the host's /etc a program may need to run:
// the dynamic loader's cache, alternatives symlinks, time zone, TLS roots,
// MIME and font configuration, the interpreters' own settings. Everything
// else in /etc stays hidden: shadow and gshadow, ssh keys, sudoers,
// credentials that packages and administrators keep there.
var hostEtcAllowlist = []string{
	"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
	"ssl", "ca-certificates", "ca-certificates.conf", "fonts", "mime.types", "magic", "magic.mime",
	"matplotlibrc", "protocols", "services", "nsswitch.conf", "os-release", "debian_version",
	"python3", "python3.11", "python3.12", "python3.13", "nodejs",
}

// maxCopiedEtcFile is the largest /etc file copied rather than bound.
const maxCopiedEtcFile = 256 << 10

// rootfsSkipped are top-level entries of a root filesystem image that the
// sandbox never binds: it provides its own /proc, /dev, /tmp, /work and
// /code, and an image's /home, /root, /run, /mnt, /media and /boot have no
// business in a run.
var rootfsSkipped = map[string]bool{
	"proc": true, "sys": true, "dev": true, "tmp": true, "run": true, "work": true, "code": true,
	"home": true, "root": true, "mnt": true, "media": true, "boot": true, "lost+found": true,
}

// identityEntries are the /etc/passwd and /etc/group of a sandbox, on the
// host's directories or in an image, which give its user, uid and gid id,
// a name: programs asking "who am I" (getpass.getuser, os.getlogin's
// fallbacks, `id`) get an answer instead of an error. Each sandbox has a
// uid of its own, so each gets its own two entries, appended to the
// shared root's. In an image they replace the image's own, whose users
// are the build's (and name no sandbox uid).
func identityEntries(id int) []sandboxinit.RootEntry {
	return []sandboxinit.RootEntry{
		{Target: "/etc/passwd", Content: fmt.Sprintf("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:%d:%d:sandbox:/tmp:/usr/sbin/nologin\n", id, id)},
		{Target: "/etc/group", Content: fmt.Sprintf("root:x:0:\nsandbox:x:%d:\n", id)},
	}
}

// hostLayout describes a root made of the host's system directories,
// bound read-only, as bubblewrap does, the allowlisted /etc files,
// generatedEtc and homeLink.
func hostLayout() ([]sandboxinit.RootEntry, error) {
	var root []sandboxinit.RootEntry
	for _, dir := range hostSystemDirs {
		e, ok, err := entryFor(dir, dir)
		if err != nil {
			return nil, err
		}
		if ok {
			root = append(root, e)
		}
	}
	for _, name := range hostEtcAllowlist {
		e, ok, err := entryFor(filepath.Join("/etc", name), filepath.Join("/etc", name))
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		// Small configuration files are copied into the root once, here,
		// rather than bind-mounted: every mount costs each sandbox time to
		// make and to tear down. The loader's cache stays a bind, so that
		// libraries installed later are found.
		if e.IsFile && name != "ld.so.cache" {
			if b, err := os.ReadFile(e.Source); err == nil && len(b) <= maxCopiedEtcFile {
				e = sandboxinit.RootEntry{Target: e.Target, Content: string(b)}
			}
		}
		root = append(root, e)
	}
	root = append(root, generatedEtc()...)
	return append(root, homeLink()), nil
}

// homeLink makes lang.HomeUser, in every sandbox, a symbolic link to the
// working directory, so that both paths reach the same writable files.
// It is a link in the sandbox's own root, to the sandbox's own /work: it
// exposes nothing of the host's /home (left out of every root, on the
// host's directories and in an image alike) and is no second writable
// place (the root stays read-only, /home holds nothing else).
func homeLink() sandboxinit.RootEntry {
	return sandboxinit.RootEntry{Target: lang.HomeUser, Link: lang.WorkDir}
}

// generatedEtc are the /etc files every sandbox gets from the runtime,
// on the host's directories and in an image alike: the name the UTS
// namespace gives it (uname -n, socket.gethostname()) in /etc/hostname,
// /etc/hosts resolving localhost and that name, and an /etc/resolv.conf
// naming no server (a sandbox has no DNS of its own; the egress proxy
// resolves). An image's own copies came from the machine that built it:
// debootstrap copies the build host's hostname and resolv.conf into the
// image, and would tell a program the build machine's name and network.
// In an image they lie on top of its /etc (sandboxinit.hideImagePath),
// so images built before are covered without a rebuild.
func generatedEtc() []sandboxinit.RootEntry {
	return []sandboxinit.RootEntry{
		{Target: "/etc/hostname", Content: sandboxinit.Hostname + "\n"},
		{Target: "/etc/hosts", Content: "127.0.0.1 localhost " + sandboxinit.Hostname + "\n::1 localhost\n"},
		{Target: "/etc/resolv.conf", Content: "# no name server: the sandbox has no network of its own\n"},
	}
}

// imageLayout describes a root made of a root filesystem image directory:
// each top-level entry bound read-only, except those in rootfsSkipped,
// generatedEtc over the image's /etc, homeLink, and buildHostEntries.
func imageLayout(dir string) ([]sandboxinit.RootEntry, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("root filesystem %s is not a directory", dir)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	var root []sandboxinit.RootEntry
	for _, n := range names {
		if rootfsSkipped[n.Name()] {
			continue
		}
		e, ok, err := entryFor(filepath.Join(dir, n.Name()), "/"+n.Name())
		if err != nil {
			return nil, err
		}
		if ok {
			root = append(root, e)
		}
	}
	sort.Slice(root, func(i, j int) bool { return root[i].Target < root[j].Target })
	if _, err := os.Stat(filepath.Join(dir, "usr")); err != nil {
		return nil, fmt.Errorf("root filesystem %s has no /usr: is it a root filesystem?", dir)
	}
	root = append(root, generatedEtc()...)
	root = append(root, homeLink())
	return append(root, buildHostEntries(dir, root)...), nil
}

// buildHostEntries are empty files over those of image.BuildHostFiles
// that the image at dir holds and generatedEtc does not replace: an image
// built before its build scrubbed them keeps the build machine's machine
// id, mail name, and debootstrap's log naming the image store's path on
// the build host (which the overlay of sandboxinit.hideImagePath keeps
// out of the mount table). An empty file says nothing of them.
func buildHostEntries(dir string, root []sandboxinit.RootEntry) []sandboxinit.RootEntry {
	placed := map[string]bool{}
	for _, e := range root {
		placed[e.Target] = true
	}
	var entries []sandboxinit.RootEntry
	for _, f := range image.BuildHostFiles() {
		target := "/" + f
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil && !placed[target] {
			entries = append(entries, sandboxinit.RootEntry{Target: target, Content: ""})
		}
	}
	return entries
}

// entryFor describes host path src placed at target: a symlink stays a
// symlink (merged-/usr systems make /bin a link to usr/bin), a directory or
// a regular file becomes a read-only bind. Missing paths and other file
// types (sockets, devices) are skipped.
func entryFor(src, target string) (sandboxinit.RootEntry, bool, error) {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return sandboxinit.RootEntry{}, false, nil
	}
	if err != nil {
		return sandboxinit.RootEntry{}, false, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		link, err := os.Readlink(src)
		if err != nil {
			return sandboxinit.RootEntry{}, false, err
		}
		return sandboxinit.RootEntry{Target: target, Link: link}, true, nil
	case fi.IsDir():
		return sandboxinit.RootEntry{Target: target, Source: src}, true, nil
	case fi.Mode().IsRegular():
		return sandboxinit.RootEntry{Target: target, Source: src, IsFile: true}, true, nil
	}
	return sandboxinit.RootEntry{}, false, nil
}
