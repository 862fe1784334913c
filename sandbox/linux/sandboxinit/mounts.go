package sandboxinit

import (
	"fmt"
	"io"
	"os"
	"path"
	"syscall"
)

// This file runs inside the sandbox's init, as root in fresh mount, PID,
// network, IPC and UTS namespaces, before anything of the user's runs.

// Mount flags for the pieces of the sandbox. Nothing is ever mounted with
// set-uid or device semantics: a set-uid binary in a bound directory runs
// without its privileges, and no device node outside /dev's fixed list can
// be opened.
const (
	roFlags      = syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV
	scratchFlags = syscall.MS_NOSUID | syscall.MS_NODEV
)

// devNodes are the only devices a program sees, bound from the host's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// devLinks are the conventional /dev symbolic links.
var devLinks = map[string]string{
	"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
	"stderr": "/proc/self/fd/2",
}

// buildRoot builds everything of the sandbox's root that does not depend
// on the request and switches into it: read-only binds on an empty tmpfs,
// /dev, /proc with the host's figures hidden (kernelview.go), and the
// writable tmpfs behind /work, /tmp and /dev/shm.
// Afterwards the host's root is detached; the new root stays writable (to
// init alone: the program is not running yet) until finishRoot.
func buildRoot(base *BaseConfig) error {
	// Mounts made in this namespace must never reach the host's: turn off
	// propagation for the whole tree before the first mount.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("tmpfs", base.StageDir, "tmpfs", scratchFlags, "size=64k,mode=0700"); err != nil {
		return fmt.Errorf("mount staging tmpfs on %s: %w", base.StageDir, err)
	}
	newRoot, scratch := path.Join(base.StageDir, "root"), path.Join(base.StageDir, "scratch")
	for _, d := range []string{newRoot, scratch} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("tmpfs", newRoot, "tmpfs", scratchFlags, "size=16m,mode=0755"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	// One tmpfs holds /work, /tmp and /dev/shm, so the disk limit caps them
	// together. Its pages are also charged to the run's memory cgroup. It is
	// sized for the request by finishRoot.
	if err := syscall.Mount("tmpfs", scratch, "tmpfs", scratchFlags, "size=64k,nr_inodes=65536,mode=0755"); err != nil {
		return fmt.Errorf("mount working tmpfs: %w", err)
	}
	if err := makeScratchDirs(base, scratch); err != nil {
		return err
	}
	root := base.Root
	if base.Image != "" {
		var err error
		if root, err = hideImagePath(base); err != nil {
			return err
		}
	}
	for _, e := range root {
		if err := placeEntry(newRoot, e); err != nil {
			return fmt.Errorf("root entry %s: %w", e.Target, err)
		}
	}
	for _, b := range [][2]string{{"work", "/work"}, {"tmp", "/tmp"}} {
		if err := bindInto(newRoot, path.Join(scratch, b[0]), b[1], scratchFlags, false); err != nil {
			return err
		}
	}
	if err := buildDev(newRoot, path.Join(scratch, "shm")); err != nil {
		return err
	}
	if base.TmpSeed != "" {
		if err := seedDir(path.Join(newRoot, base.TmpSeed), path.Join(scratch, "tmp"), base.UID, base.GID, 0); err != nil {
			return fmt.Errorf("seed /tmp from %s: %w", base.TmpSeed, err)
		}
	}
	// The program file lives on a tmpfs of its own, writable by root
	// alone: the program cannot change it, and the host can still place a
	// warm sandbox's program there after the root became read-only.
	codeDir := path.Join(newRoot, CodeDir)
	if err := os.MkdirAll(codeDir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", codeDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, codeTmpfsOptions); err != nil {
		return fmt.Errorf("mount %s: %w", CodeDir, err)
	}
	procDir := path.Join(newRoot, "proc")
	if err := os.Mkdir(procDir, 0o555); err != nil {
		return err
	}
	// This /proc shows only the sandbox's own PID namespace.
	if err := syscall.Mount("proc", procDir, "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// Before /proc/sys turns read-only.
	if err := limitSocketBuffers(procDir); err != nil {
		return err
	}
	if err := maskKernelView(procDir, path.Join(base.StageDir, "kernelview")); err != nil {
		return err
	}
	return switchRoot(newRoot)
}

// finishRoot adds the request's program and files to the root built by
// buildRoot, sizes the tmpfs mounts, and makes the root read-only.
func finishRoot(base *BaseConfig, run *RunConfig, files io.Reader) error {
	// A remount without MS_BIND changes the filesystem itself, reachable
	// through any of its mount points.
	diskSize := fmt.Sprintf("size=%d", run.DiskBytes)
	if err := syscall.Mount("tmpfs", run.Dir, "", syscall.MS_REMOUNT|scratchFlags, diskSize); err != nil {
		return fmt.Errorf("size working tmpfs: %w", err)
	}
	for _, f := range run.Files {
		if err := writeInputFile(base, run.Dir, f, files); err != nil {
			return fmt.Errorf("input file %s: %w", f.Name, err)
		}
	}
	if err := sealReadOnly(run.Dir, run.Files); err != nil {
		return err
	}
	if err := writeFile(run.MainPath, run.Code, 0o644); err != nil {
		return err
	}
	if err := setMeminfo(run.MemoryBytes); err != nil {
		return err
	}
	if !run.Channel { // a kernel's /code stays writable for the host, by root alone
		if err := syscall.Mount("", CodeDir, "", syscall.MS_BIND|syscall.MS_REMOUNT|roFlags|syscall.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", CodeDir, err)
		}
	}
	if err := syscall.Mount("", "/", "", syscall.MS_BIND|syscall.MS_REMOUNT|roFlags, ""); err != nil {
		return fmt.Errorf("remount root read-only: %w", err)
	}
	return nil
}

// makeScratchDirs creates the writable directories, owned by the sandbox
// user.
func makeScratchDirs(base *BaseConfig, scratch string) error {
	dirs := []struct {
		name string
		mode os.FileMode
	}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}}
	for _, d := range dirs {
		p := path.Join(scratch, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil { // umask-free mode
			return err
		}
		if err := os.Lchown(p, base.UID, base.GID); err != nil {
			return err
		}
	}
	return nil
}

// writeInputFile streams one input file from the config pipe. The names
// were validated by the host (relative, no ".."), and the working directory
// is a fresh tmpfs holding no symlinks yet, so every path stays inside it.
func writeInputFile(base *BaseConfig, work string, f FileHeader, src io.Reader) error {
	dst := path.Join(work, f.Name)
	var parents []string
	for dir := path.Dir(dst); dir != work; dir = path.Dir(dir) {
		parents = append(parents, dir)
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if err := os.Mkdir(parents[i], 0o755); err == nil {
			if err := os.Lchown(parents[i], base.UID, base.GID); err != nil {
				return err
			}
		}
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode(f))
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, src, f.Size); err != nil {
		out.Close()
		return err
	}
	if !f.ReadOnly { // a read-only file stays root's (readonly.go)
		if err := out.Chown(base.UID, base.GID); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// placeEntry adds one RootEntry to the new root.
func placeEntry(newRoot string, e RootEntry) error {
	dst := path.Join(newRoot, e.Target)
	if err := os.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case e.Link != "":
		return os.Symlink(e.Link, dst)
	case e.Source != "":
		return bindInto(newRoot, e.Source, e.Target, roFlags, e.IsFile)
	default:
		return writeFile(dst, e.Content, 0o644)
	}
}

// bindInto bind-mounts src at target inside newRoot and applies flags. A
// bind mount takes its source's flags; read-only and nosuid must be set by
// a second, remounting call.
func bindInto(newRoot, src, target string, flags uintptr, isFile bool) error {
	dst := path.Join(newRoot, target)
	if isFile {
		if err := writeFile(dst, "", 0o644); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", target, err)
	}
	return nil
}

// buildDev makes /dev a small tmpfs holding only the harmless character
// devices, the usual links, and /dev/shm on the working tmpfs.
func buildDev(newRoot, shm string) error {
	dev := path.Join(newRoot, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dev, "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		if err := bindInto(newRoot, "/dev/"+n, "/dev/"+n, syscall.MS_NOSUID|syscall.MS_NOEXEC, true); err != nil {
			return err
		}
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, path.Join(dev, name)); err != nil {
			return err
		}
	}
	return bindInto(newRoot, shm, "/dev/shm", scratchFlags, false)
}

// switchRoot makes newRoot the root and detaches the old one. pivot_root
// with the same directory twice stacks the old root under the new one,
// where a lazy unmount removes it: afterwards no mount of the host's
// remains reachable from the sandbox.
func switchRoot(newRoot string) error {
	if err := syscall.Chdir(newRoot); err != nil {
		return err
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return syscall.Chdir("/")
}

func writeFile(p, content string, mode os.FileMode) error {
	if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), mode)
}

// seedDir copies the regular files and directories under src into dst,
// owned by uid and gid. Links and special files are not copied: the seed
// comes from the image, but nothing in it needs them.
func seedDir(src, dst string, uid, gid, depth int) error {
	if depth > 16 {
		return nil
	}
	entries, err := os.ReadDir(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := path.Join(src, e.Name()), path.Join(dst, e.Name())
		switch {
		case e.IsDir():
			if err := os.Mkdir(to, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
			if err := os.Lchown(to, uid, gid); err != nil {
				return err
			}
			if err := seedDir(from, to, uid, gid, depth+1); err != nil {
				return err
			}
		case e.Type().IsRegular():
			b, err := os.ReadFile(from)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				return err
			}
			if err := os.Lchown(to, uid, gid); err != nil {
				return err
			}
		}
	}
	return nil
}
