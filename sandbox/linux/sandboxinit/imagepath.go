package sandboxinit

import (
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"
)

// hideImagePath returns base.Root with the bind sources that lie in the
// root filesystem image moved onto a read-only overlay of the image,
// mounted on the staging tmpfs, and the file entries (the runtime's
// generated /etc files) written into the overlay's top layer.
//
// A bind mount shows, in the sandbox's /proc/self/mountinfo, its path
// inside the filesystem it comes from: binding the image's usr directory
// directly would tell the program the image's host path
// (/var/lib/crucible/images/<name>/rootfs/usr). An overlay is a
// filesystem of its own, so binds from it show /usr; its options name its
// layers as they were given, here relative to the staging directory
// ("lowerdir=gen:lower"). The overlay adds no copy: every file is the
// image's own, read-only, but for those of the layer gen above it.
//
// gen holds the file entries at their targets: an image's /etc is one
// read-only bind, in which no file can be written or bound over a file it
// lacks (the image may have no /etc/hosts). On top of the image they
// replace its copies (the build machine's hostname, its resolv.conf, its
// users) for this sandbox alone, and for an image built before they were
// generated. An entry whose top directory is not the image's stays in the
// list, written on the root's tmpfs as on the host's directories.
func hideImagePath(base *BaseConfig) ([]RootEntry, error) {
	dir := path.Join(base.StageDir, "image")
	for _, d := range []string{dir, path.Join(dir, "lower"), path.Join(dir, "gen"), path.Join(dir, "root")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mount(base.Image, path.Join(dir, "lower"), "", syscall.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("bind image %s: %w", base.Image, err)
	}
	root := make([]RootEntry, 0, len(base.Root))
	fromImage := map[string]bool{} // the top directories bound from the image
	// The image's own path ends in one slash, also when it is "/" (a
	// root filesystem given as --rootfs /).
	prefix := strings.TrimSuffix(base.Image, "/") + "/"
	for _, e := range base.Root {
		if rel, ok := strings.CutPrefix(e.Source, prefix); ok {
			if sameInode(e.Source, path.Join(dir, "lower", rel)) {
				e.Source = path.Join(dir, "root", rel)
				fromImage[topDir(e.Target)] = true
			}
		}
		root = append(root, e)
	}
	kept := root[:0]
	for _, e := range root {
		if e.Source == "" && e.Link == "" && fromImage[topDir(e.Target)] {
			if err := writeFile(path.Join(dir, "gen", e.Target), e.Content, 0o644); err != nil {
				return nil, fmt.Errorf("generated file %s: %w", e.Target, err)
			}
			continue
		}
		kept = append(kept, e)
	}
	if err := syscall.Chdir(dir); err != nil {
		return nil, err
	}
	if err := syscall.Mount("overlay", "root", "overlay", roFlags, "lowerdir=gen:lower"); err != nil {
		return nil, fmt.Errorf("mount the image's overlay: %w", err)
	}
	return kept, nil
}

// topDir is the first component of an absolute path: "/etc" of
// "/etc/hosts".
func topDir(p string) string {
	if i := strings.IndexByte(p[1:], '/'); i >= 0 {
		return p[:i+1]
	}
	return p
}

// sameInode reports whether a and b are the same file. The overlay, like
// the plain bind of the image below it, shows the image's own files, not
// what is mounted on them: an entry that is a mount point of its own (a
// different file through the plain bind) keeps its direct bind, whose
// mountinfo line names a path inside that other filesystem, not the
// image's.
func sameInode(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
