package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// BuildHostFiles are the files of a freshly built root filesystem that
// describe the machine that built it, not a sandbox, as paths relative to
// the root: debootstrap copies the build host's /etc/hostname and
// /etc/resolv.conf into the target and leaves its log, which names every
// file it fetched by its path on the build host (the image store's), an
// MTA's package writes the build host's name into /etc/mailname, and
// systemd or dbus write a machine id made at build time, the same in
// every sandbox of the image. Whatever a sandbox needs of these the
// runtime generates for it at run time (sandbox/linux), and covers them
// in images built before this list existed; a build keeps none of them.
var BuildHostFiles = []string{
	"etc/hostname", "etc/resolv.conf", "etc/mailname", "etc/machine-id",
	"var/lib/dbus/machine-id", "var/log/bootstrap.log",
}

// emptiedFiles are the BuildHostFiles a build empties rather than
// removes: an empty machine-id is the "not yet set" state the packages
// that read it expect.
var emptiedFiles = map[string]bool{"etc/machine-id": true, "var/lib/dbus/machine-id": true}

// scrubBuildHost removes what rootfs holds of the build machine
// (BuildHostFiles). A path that is a symbolic link is removed, never
// followed: its target may be the build host's own file.
func scrubBuildHost(rootfs string) error {
	for _, f := range BuildHostFiles {
		p := filepath.Join(rootfs, f)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("scrub %s: %w", f, err)
		}
		if emptiedFiles[f] && fi.Mode().IsRegular() {
			err = os.Truncate(p, 0)
		} else {
			err = os.Remove(p)
		}
		if err != nil {
			return fmt.Errorf("scrub %s: %w", f, err)
		}
	}
	return nil
}
