package linux

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

// placeFiles puts a request's input files in the working directory of a
// live sandbox whose init is past placing them (a warm one), as init
// places them in a sandbox built for the request (sandboxinit's
// finishRoot): each file with sandboxinit.FileMode, its directories
// created, all owned by uid; then each read-only file, and every
// directory holding one, made root's and immutable (see sandboxinit's
// readonly.go), once every file is in place. Every path is resolved
// beneath the working directory (workdir.go).
func (w *workDir) placeFiles(files []sandbox.File, uid int) error {
	headers, _ := inputFiles(files)
	for i, f := range files {
		if err := w.writeFile(f.Name, f.Content, uid, uid, sandboxinit.FileMode(headers[i])); err != nil {
			return fmt.Errorf("input file %s: %w", f.Name, err)
		}
	}
	return w.sealReadOnly(headers)
}

// sealReadOnly makes the read-only files among files, then the
// directories holding them, root's and immutable, as sandboxinit's
// sealReadOnly does inside the sandbox.
func (w *workDir) sealReadOnly(files []sandboxinit.FileHeader) error {
	for _, f := range files {
		if !f.ReadOnly {
			continue
		}
		if err := w.seal(f.Name, unix.O_RDONLY, uint32(sandboxinit.FileMode(f).Perm())); err != nil {
			return fmt.Errorf("read-only file %s: %w", f.Name, err)
		}
	}
	for _, dir := range sandboxinit.ReadOnlyDirs(files) {
		if err := w.seal(dir, unix.O_RDONLY|unix.O_DIRECTORY, uint32(sandboxinit.SealedDirMode)); err != nil {
			return fmt.Errorf("read-only directory %s: %w", dir, err)
		}
	}
	return nil
}

// seal makes rel root's, with mode, and immutable. It is opened without
// blocking and without following links (openBeneath); a file must be
// regular (flags without O_DIRECTORY), a directory a directory.
func (w *workDir) seal(rel string, flags uint64, mode uint32) error {
	f, err := openBeneath(w.fd, rel, flags|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if flags&unix.O_DIRECTORY == 0 && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return notRegular(rel, fileKinds[st.Mode&unix.S_IFMT])
	}
	if err := unix.Fchown(fd, 0, 0); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	return sandboxinit.SetImmutable(f.Fd())
}
