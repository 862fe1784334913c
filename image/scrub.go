package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// buildHostFiles are the files of a freshly built root filesystem that
// describe the machine that built it, not a sandbox: debootstrap copies
// the build host's /etc/hostname and /etc/resolv.conf into the target, an
// MTA's package writes the build host's name into /etc/mailname, and
// systemd or dbus write a machine id made at build time, the same in
// every sandbox of the image. Whatever a sandbox needs of these the
// runtime generates for it at run time (sandbox/linux generatedEtc), so
// the image keeps none: the machine ids are emptied (an empty machine-id
// is the "not yet set" state those packages expect), the rest removed.
var buildHostFiles = []struct {
	path  string
	empty bool // truncate rather than remove
}{
	{"etc/hostname", false},
	{"etc/resolv.conf", false},
	{"etc/mailname", false},
	{"etc/machine-id", true},
	{"var/lib/dbus/machine-id", true},
}

// scrubBuildHost removes what rootfs holds of the build machine
// (buildHostFiles). A path that is a symbolic link is removed, never
// followed: its target may be the build host's own file.
func scrubBuildHost(rootfs string) error {
	for _, f := range buildHostFiles {
		p := filepath.Join(rootfs, f.path)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("scrub %s: %w", f.path, err)
		}
		if f.empty && fi.Mode().IsRegular() {
			err = os.Truncate(p, 0)
		} else {
			err = os.Remove(p)
		}
		if err != nil {
			return fmt.Errorf("scrub %s: %w", f.path, err)
		}
	}
	return nil
}
