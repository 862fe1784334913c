package linux

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// This file runs inside the sandbox's init, as root in fresh mount, PID,
// network, IPC and UTS namespaces, before anything of the user's runs.

// Mount flags for the pieces of the sandbox. Nothing is ever mounted with
// set-uid or device semantics: a set-uid binary in a bound directory runs
// without its privileges, and no device node outside /dev's fixed list can
// be opened.
const (
	roFlags      = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
	scratchFlags = unix.MS_NOSUID | unix.MS_NODEV
)

// devNodes are the only devices a program sees, bound from the host's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// devLinks are the conventional /dev symbolic links.
var devLinks = map[string]string{
	"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
	"stderr": "/proc/self/fd/2",
}

// buildRoot assembles the sandbox's root filesystem and switches into it.
// The new root is an empty tmpfs holding read-only binds, a writable
// size-capped tmpfs for /work and /tmp, a private /proc and a minimal /dev;
// the host's root is then detached entirely, so no path leads back to it.
func buildRoot(cfg *initConfig, files io.Reader) error {
	// Mounts made in this namespace must never reach the host's: turn off
	// propagation for the whole tree before the first mount.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	stage := cfg.StageDir
	if err := unix.Mount("tmpfs", stage, "tmpfs", scratchFlags, "size=64k,mode=0700"); err != nil {
		return fmt.Errorf("mount staging tmpfs on %s: %w", stage, err)
	}
	newRoot := filepath.Join(stage, "root")
	scratch := filepath.Join(stage, "scratch")
	for _, d := range []string{newRoot, scratch} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	rootSize := len(cfg.Code) + 1<<20
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", scratchFlags, fmt.Sprintf("size=%d,mode=0755", rootSize)); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	// One tmpfs holds /work, /tmp and /dev/shm, so the disk limit caps them
	// together. Its pages are also charged to the run's memory cgroup.
	opts := fmt.Sprintf("size=%d,nr_inodes=65536,mode=0755", cfg.DiskBytes)
	if err := unix.Mount("tmpfs", scratch, "tmpfs", scratchFlags, opts); err != nil {
		return fmt.Errorf("mount working tmpfs: %w", err)
	}
	if err := prepareScratch(cfg, scratch, files); err != nil {
		return err
	}
	for _, e := range cfg.Root {
		if err := placeEntry(newRoot, e); err != nil {
			return fmt.Errorf("root entry %s: %w", e.Target, err)
		}
	}
	binds := [][2]string{{"work", "/work"}, {"tmp", "/tmp"}}
	for _, b := range binds {
		if err := bindInto(newRoot, filepath.Join(scratch, b[0]), b[1], scratchFlags, false); err != nil {
			return err
		}
	}
	if err := buildDev(newRoot, filepath.Join(scratch, "shm")); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(newRoot, cfg.MainPath), cfg.Code, 0o644); err != nil {
		return err
	}
	procDir := filepath.Join(newRoot, "proc")
	if err := os.Mkdir(procDir, 0o555); err != nil {
		return err
	}
	// This /proc shows only the sandbox's own PID namespace.
	if err := unix.Mount("proc", procDir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return switchRoot(newRoot)
}

// prepareScratch creates the writable directories and writes the input
// files, owned by the sandbox user.
func prepareScratch(cfg *initConfig, scratch string, files io.Reader) error {
	dirs := []struct {
		name string
		mode os.FileMode
	}{{"work", 0o755}, {"tmp", 0o1777}, {"shm", 0o1777}}
	for _, d := range dirs {
		p := filepath.Join(scratch, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil { // umask-free mode
			return err
		}
		if err := os.Lchown(p, cfg.UID, cfg.GID); err != nil {
			return err
		}
	}
	work := filepath.Join(scratch, "work")
	for _, f := range cfg.Files {
		if err := writeInputFile(cfg, work, f, files); err != nil {
			return fmt.Errorf("input file %s: %w", f.Name, err)
		}
	}
	return nil
}

// writeInputFile streams one input file from the config pipe. The names
// were validated by the host (relative, no ".."), and the working directory
// is a fresh tmpfs holding no symlinks yet, so every path stays inside it.
func writeInputFile(cfg *initConfig, work string, f fileHeader, src io.Reader) error {
	dst := filepath.Join(work, filepath.FromSlash(f.Name))
	for dir := filepath.Dir(dst); dir != work; dir = filepath.Dir(dir) {
		if err := os.Mkdir(dir, 0o755); err == nil {
			if err := os.Lchown(dir, cfg.UID, cfg.GID); err != nil {
				return err
			}
		}
	}
	mode := os.FileMode(0o644)
	if f.Executable {
		mode = 0o755
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, src, f.Size); err != nil {
		out.Close()
		return err
	}
	if err := out.Chown(cfg.UID, cfg.GID); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// placeEntry adds one rootEntry to the new root.
func placeEntry(newRoot string, e rootEntry) error {
	dst := filepath.Join(newRoot, e.Target)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
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
	dst := filepath.Join(newRoot, target)
	if isFile {
		if err := writeFile(dst, "", 0o644); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", target, err)
	}
	return nil
}

// buildDev makes /dev a small tmpfs holding only the harmless character
// devices, the usual links, and /dev/shm on the working tmpfs.
func buildDev(newRoot, shm string) error {
	dev := filepath.Join(newRoot, "dev")
	if err := os.Mkdir(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range devNodes {
		if err := bindInto(newRoot, "/dev/"+n, "/dev/"+n, unix.MS_NOSUID|unix.MS_NOEXEC, true); err != nil {
			return err
		}
	}
	for name, target := range devLinks {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return bindInto(newRoot, shm, "/dev/shm", scratchFlags, false)
}

// switchRoot makes newRoot the root and detaches the old one. pivot_root
// with the same directory twice stacks the old root under the new one,
// where a lazy unmount removes it: afterwards no mount of the host's
// remains reachable from the sandbox. The root tmpfs is then made
// read-only.
func switchRoot(newRoot string) error {
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|roFlags, ""); err != nil {
		return fmt.Errorf("remount root read-only: %w", err)
	}
	return nil
}

func writeFile(p, content string, mode os.FileMode) error {
	if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), mode)
}
