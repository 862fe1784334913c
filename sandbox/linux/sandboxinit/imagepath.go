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
// mounted on the staging tmpfs.
//
// A bind mount shows, in the sandbox's /proc/self/mountinfo, its path
// inside the filesystem it comes from: binding the image's usr directory
// directly would tell the program the image's host path
// (/var/lib/crucible/images/<name>/rootfs/usr). An overlay is a
// filesystem of its own, so binds from it show /usr; its options name its
// layers as they were given, here relative to the staging directory
// ("lowerdir=lower:empty"; without an upper layer overlayfs wants two).
// The overlay adds no copy: every file is the image's own, read-only.
func hideImagePath(base *BaseConfig) ([]RootEntry, error) {
	dir := path.Join(base.StageDir, "image")
	for _, d := range []string{dir, path.Join(dir, "lower"), path.Join(dir, "empty"), path.Join(dir, "root")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mount(base.Image, path.Join(dir, "lower"), "", syscall.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("bind image %s: %w", base.Image, err)
	}
	if err := syscall.Chdir(dir); err != nil {
		return nil, err
	}
	if err := syscall.Mount("overlay", "root", "overlay", roFlags, "lowerdir=lower:empty"); err != nil {
		return nil, fmt.Errorf("mount the image's overlay: %w", err)
	}
	root := make([]RootEntry, len(base.Root))
	for i, e := range base.Root {
		if rel, ok := strings.CutPrefix(e.Source, base.Image+"/"); ok {
			if sameInode(e.Source, path.Join(dir, "lower", rel)) {
				e.Source = path.Join(dir, "root", rel)
			}
		}
		root[i] = e
	}
	return root, nil
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
