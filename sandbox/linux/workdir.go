package linux

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// The host reaches a sandbox's working directory through
// /proc/<init>/root while the sandbox lives. It acts there as root in a
// directory the program controls, so every path is resolved with openat2
// beneath the working directory, refusing "..", absolute paths, symbolic
// links and mount crossings: a link the program planted (to /etc/shadow,
// or to the host through /proc) is refused, never followed.
//
// Nor may the program make the host wait. A file is opened non-blocking
// (an open for writing of a FIFO with no reader would wait for one for
// ever, one of a file the program holds a lease on for the 45 s
// lease-break time) and without becoming a controlling terminal, and then
// used only if it is a regular file: a FIFO, socket or device is refused
// before a byte moves. Regular files on the sandbox's tmpfs never block.

// resolveBeneath confines a path to the working directory.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Bounds on a walk of the working directory, whatever the program left.
const (
	maxWalkEntries = 10_000
	maxWalkDepth   = 32
)

// workDir is an open handle on a live sandbox's working directory.
type workDir struct{ fd int }

func openWorkDir(initPid int) (*workDir, error) { return openSandboxDir(initPid, lang.WorkDir) }

// openSandboxDir opens dir, an absolute path inside the live sandbox.
func openSandboxDir(initPid int, dir string) (*workDir, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/root%s", initPid, dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the sandbox's %s: %w", dir, err)
	}
	return &workDir{fd: fd}, nil
}

func (w *workDir) close() { unix.Close(w.fd) }

// dup returns a handle of its own on the same directory, which the caller
// closes.
func (w *workDir) dup() (*workDir, error) {
	fd, err := unix.FcntlInt(uintptr(w.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &workDir{fd: fd}, nil
}

// openBeneath opens rel (slash-separated, relative) beneath dirfd.
func openBeneath(dirfd int, rel string, flags uint64, mode uint64) (*os.File, error) {
	if rel == "" {
		rel = "."
	}
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: mode, Resolve: resolveBeneath})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// fileError turns an openat2 failure on a user-given name into the error
// the caller should see.
func fileError(name string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is or passes through a symbolic link or another filesystem; links are not followed", name)}
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: %w", name, os.ErrNotExist)
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR):
		return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q: %v", name, err)}
	case errors.Is(err, unix.ENXIO):
		// A socket, or a FIFO opened for writing while nothing reads it.
		return notRegular(name, "a socket or a FIFO")
	case errors.Is(err, unix.EPERM):
		// Only the immutable flag refuses root (the host) a write.
		return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is a read-only input file or lies in a read-only directory; it cannot be written or replaced", name)}
	case errors.Is(err, unix.EWOULDBLOCK):
		return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is held by a lease of the program; it cannot be read or written until the program releases it", name)}
	}
	return err
}

func notRegular(name, kind string) error {
	return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is %s, not a regular file; only regular files can be read or written", name, kind)}
}

// fileKinds name the kinds of file that are not regular.
var fileKinds = map[uint32]string{
	unix.S_IFDIR: "a directory", unix.S_IFIFO: "a FIFO", unix.S_IFSOCK: "a socket",
	unix.S_IFCHR: "a character device", unix.S_IFBLK: "a block device", unix.S_IFLNK: "a symbolic link",
}

// openRegular opens rel beneath dirfd with flags, without blocking, and
// returns it with its metadata if it is a regular file; anything else is
// closed again and refused with an input error naming name.
func openRegular(dirfd int, rel, name string, flags uint64, mode uint64) (*os.File, *unix.Stat_t, error) {
	f, err := openBeneath(dirfd, rel, flags|unix.O_NONBLOCK|unix.O_NOCTTY, mode)
	if err != nil {
		return nil, nil, fileError(name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nil, err
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFREG {
		f.Close()
		return nil, nil, notRegular(name, fileKinds[kind])
	}
	return f, &st, nil
}

func checkName(name string) error {
	if rule := sandbox.CheckFileName(name); rule != "" {
		return &sandbox.InputError{Field: "name", Rule: rule + fmt.Sprintf(", got %q", name)}
	}
	return nil
}

// writeFile creates or replaces name with content and mode, creating its
// parent directories, all owned by uid and gid.
func (w *workDir) writeFile(name string, content []byte, uid, gid int, mode os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, base := path.Split(name)
	cur, err := openBeneath(w.fd, ".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	for _, part := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if part == "" {
			continue
		}
		next, err := openBeneath(int(cur.Fd()), part, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(int(cur.Fd()), part, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				_ = unix.Fchownat(int(cur.Fd()), part, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
				next, err = openBeneath(int(cur.Fd()), part, unix.O_PATH|unix.O_DIRECTORY, 0)
			}
		}
		cur.Close()
		if err != nil {
			return fileError(name, err)
		}
		cur = next
	}
	defer cur.Close()
	// Truncated only once known to be a regular file.
	f, _, err := openRegular(int(cur.Fd()), base, name, unix.O_WRONLY|unix.O_CREAT, uint64(mode.Perm()))
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode.Perm()); err != nil { // umask-free
		f.Close()
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Chown(uid, gid); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readFile returns name's content if it is a regular file of at most max
// bytes.
func (w *workDir) readFile(name string, max int64) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, st, err := openRegular(w.fd, name, name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > max {
		return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is %d bytes, over the %d-byte limit", name, st.Size, max)}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// entry is one item of a walk.
type entry struct {
	name string
	stat unix.Stat_t
}

// walk lists the tree in name order, without following links, within the
// walk bounds.
func (w *workDir) walk() []entry {
	var out []entry
	count := 0
	var visit func(dir string, depth int)
	visit = func(dir string, depth int) {
		if depth > maxWalkDepth {
			return
		}
		d, err := openBeneath(w.fd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		sort.Strings(names)
		for _, n := range names {
			if count++; count > maxWalkEntries {
				return
			}
			rel := path.Join(dir, n)
			var st unix.Stat_t
			if unix.Fstatat(w.fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			out = append(out, entry{rel, st})
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				visit(rel, depth+1)
			}
		}
	}
	visit("", 0)
	return out
}

// list describes the tree's directories and regular files.
func (w *workDir) list() []sandbox.FileInfo {
	var files []sandbox.FileInfo
	for _, e := range w.walk() {
		kind := e.stat.Mode & unix.S_IFMT
		if kind != unix.S_IFDIR && kind != unix.S_IFREG {
			continue
		}
		files = append(files, sandbox.FileInfo{
			Name: e.name, Size: e.stat.Size, Dir: kind == unix.S_IFDIR,
			ModTime: time.Unix(e.stat.Mtim.Sec, e.stat.Mtim.Nsec).UTC(),
		})
	}
	return files
}
