package sandboxinit

import (
	"fmt"
	"os"
	"path"
	"syscall"
)

// Read-only input files (FileHeader.ReadOnly). The program runs as a uid
// of its own, without capabilities, and owns the working directory: a
// root-owned file there would still be its to rename or remove, and a
// directory holding one its to rename and replace by another holding
// other bytes under the same name. So a read-only file is root's, mode
// 0444, and immutable (FS_IMMUTABLE_FL, which tmpfs keeps since Linux
// 6.0), as is every directory between it and the working directory:
// nothing can then be written, renamed, linked or removed there, and
// clearing the flag takes CAP_LINUX_IMMUTABLE, which the program lacks.
// The bytes count against the working tmpfs's size, the disk limit, like
// any input file's.
//
// Two places seal: this init, for a sandbox built for its request, and
// the host, for a warm sandbox whose init is past that point (the host
// places its files through the sandbox's /proc/<pid>/root, beneath the
// working directory, see the host's readonly.go). Both take the modes,
// the order and the flag from here: FileMode, ReadOnlyDirs, SealedDirMode
// and SetImmutable.

// SealedDirMode is the mode of a directory holding a read-only file, once
// it is root's: anyone may list and traverse it, no one add to it.
const SealedDirMode os.FileMode = 0o755

// FileMode is the permission bits an input file is created with.
func FileMode(f FileHeader) os.FileMode {
	mode := os.FileMode(0o644)
	if f.Executable {
		mode = 0o755
	}
	if f.ReadOnly {
		mode &^= 0o222
	}
	return mode
}

// ReadOnlyDirs lists the directories, relative to the working directory,
// that hold a read-only file among files: each once, a directory before
// its parent, the working directory itself never.
func ReadOnlyDirs(files []FileHeader) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, f := range files {
		if !f.ReadOnly {
			continue
		}
		for dir := path.Dir(path.Clean(f.Name)); dir != "." && dir != "/" && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// sealReadOnly makes each read-only file among files, and the directories
// holding it below work, root's and immutable, once every input file is
// in place (nothing can be created in an immutable directory). Files are
// sealed before directories, each directory once.
func sealReadOnly(work string, files []FileHeader) error {
	for _, f := range files {
		if !f.ReadOnly {
			continue
		}
		if err := seal(path.Join(work, f.Name)); err != nil {
			return fmt.Errorf("read-only file %s: %w", f.Name, err)
		}
	}
	for _, rel := range ReadOnlyDirs(files) {
		dir := path.Join(work, rel)
		if err := os.Lchown(dir, 0, 0); err != nil {
			return err
		}
		if err := os.Chmod(dir, SealedDirMode); err != nil {
			return err
		}
		if err := seal(dir); err != nil {
			return fmt.Errorf("read-only directory %s: %w", dir, err)
		}
	}
	return nil
}

// seal makes p immutable.
func seal(p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return SetImmutable(f.Fd())
}
