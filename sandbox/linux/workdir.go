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
// or to the host through /proc) is refused, never followed. Special files
// (FIFOs, sockets) are never opened for reading.

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
	}
	return err
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
	f, err := openBeneath(int(cur.Fd()), base, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, uint64(mode.Perm()))
	if err != nil {
		return fileError(name, err)
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
	f, err := openBeneath(w.fd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileError(name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is not a regular file", name)}
	}
	if st.Size() > max {
		return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is %d bytes, over the %d-byte limit", name, st.Size(), max)}
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
		d, err := openBeneath(w.fd, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
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
