package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// A session's files go through the daemon's archive API, with the
// container paused: no process of the sandbox runs while the host checks
// a path and then uses it, so none can swap a directory for a symbolic
// link in between. The API resolves a path's directories itself (within
// the container's root, never the host's), so every directory on the way
// is checked first to be a directory, not a link; an archive lists a link
// as a link and never follows it. The daemon writes as root, past the
// permissions that keep the program from the read-only input files: the
// session refuses those itself, as the native runtime's immutable files
// refuse the host.

// maxListEntries bounds ListFiles, as the native walk is bounded.
const maxListEntries = 10_000

// codeFiles is the tar of files for /code, root's and read-only.
func codeFiles(files map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o444, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

// files holds the session for a file operation: no cell runs and the
// container is paused until done is called.
func (s *Session) files(ctx context.Context) (done func(), err error) {
	release, err := s.use()
	if err != nil {
		return nil, err
	}
	s.cellMu.Lock()
	if err := s.pause(ctx); err != nil {
		s.cellMu.Unlock()
		release()
		return nil, err
	}
	return func() { s.cellMu.Unlock(); release() }, nil
}

// checkName refuses a name that is not a plain relative path.
func checkName(name string) error {
	if rule := sandbox.CheckFileName(name); rule != "" {
		return &sandbox.InputError{Field: "name", Rule: rule + fmt.Sprintf(", got %q", name)}
	}
	return nil
}

// stat returns what is at name in /work, without following a link there;
// ok false when nothing is.
func (s *Session) stat(ctx context.Context, name string) (st container.PathStat, ok bool, err error) {
	st, err = s.rt.cli.ContainerStatPath(ctx, s.cid, lang.WorkDir+"/"+name)
	if cerrdefs.IsNotFound(err) {
		return st, false, nil
	}
	return st, err == nil, err
}

// checkDirs checks that every directory on the way to name is one, not a
// link, and returns those that do not exist yet.
func (s *Session) checkDirs(ctx context.Context, name string) (missing []string, err error) {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		if len(missing) > 0 {
			missing = append(missing, dir)
			continue
		}
		st, ok, err := s.stat(ctx, dir)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			missing = append(missing, dir)
		case st.Mode&fs.ModeSymlink != 0:
			return nil, linkError(name)
		case !st.Mode.IsDir():
			return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q: %s is not a directory", name, dir)}
		}
	}
	return missing, nil
}

func linkError(name string) error {
	return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is or passes through a symbolic link; links are not followed", name)}
}

// WriteFile creates or replaces a regular file in the working directory,
// the sandbox user's, with the directories it needs. A read-only input
// file, or a file in a directory holding one, is refused with an
// *sandbox.InputError.
func (s *Session) WriteFile(ctx context.Context, name string, content []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if s.readOnly[name] || s.locked[path.Dir(name)] || s.locked[name] {
		return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is a read-only input file or lies in a read-only directory; it cannot be written or replaced", name)}
	}
	if int64(len(content)) > s.lim.DiskBytes {
		return &sandbox.InputError{Field: "content", Rule: fmt.Sprintf("%d bytes is over the session's disk limit of %d", len(content), s.lim.DiskBytes)}
	}
	done, err := s.files(ctx)
	if err != nil {
		return err
	}
	defer done()
	missing, err := s.checkDirs(ctx, name)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		st, ok, err := s.stat(ctx, name)
		switch {
		case err != nil:
			return err
		case ok && st.Mode&fs.ModeSymlink != 0:
			return linkError(name)
		case ok && !st.Mode.IsRegular():
			return &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is not a regular file", name)}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range missing {
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755, Uid: s.uid, Gid: s.uid, ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content)), Uid: s.uid, Gid: s.uid, ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(content); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := s.rt.cli.CopyToContainer(ctx, s.cid, lang.WorkDir, &buf, container.CopyToContainerOptions{}); err != nil {
		s.work = nil
		return &sandbox.PlatformError{Op: "write file", Err: err}
	}
	// The host's file is no cell's artifact.
	if s.work != nil {
		s.work[name] = sha256.Sum256(content)
	}
	return nil
}

// ReadFile returns a regular file of the working directory.
func (s *Session) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	done, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	missing, err := s.checkDirs(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	rc, _, err := s.rt.cli.CopyFromContainer(ctx, s.cid, lang.WorkDir+"/"+name)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "read file", Err: err}
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "read file", Err: err}
	}
	switch {
	case h.Typeflag == tar.TypeSymlink:
		return nil, linkError(name)
	case h.Typeflag != tar.TypeReg:
		return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is not a regular file", name)}
	case h.Size > s.lim.DiskBytes:
		return nil, &sandbox.InputError{Field: "name", Rule: fmt.Sprintf("%q is %d bytes, over the %d-byte limit", name, h.Size, s.lim.DiskBytes)}
	}
	return io.ReadAll(io.LimitReader(tr, h.Size))
}

// ListFiles lists the working directory, recursively: its directories and
// regular files (not links), in name order.
func (s *Session) ListFiles(ctx context.Context) ([]sandbox.FileInfo, error) {
	done, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rc, _, err := s.rt.cli.CopyFromContainer(ctx, s.cid, lang.WorkDir+"/.")
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "list files", Err: err}
	}
	defer rc.Close()
	// Only the headers are needed: each file's content is skipped, which
	// reads it from the stream (the daemon sends the whole tree).
	var files []sandbox.FileInfo
	tr := tar.NewReader(rc)
	for len(files) < maxListEntries {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return files, &sandbox.PlatformError{Op: "list files", Err: err}
		}
		name := strings.TrimSuffix(strings.TrimPrefix(path.Clean(h.Name), "./"), "/")
		if name == "." || name == "" || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir) {
			continue
		}
		files = append(files, sandbox.FileInfo{Name: name, Size: h.Size, Dir: h.Typeflag == tar.TypeDir, ModTime: h.ModTime.UTC()})
		if h.Typeflag == tar.TypeDir {
			files[len(files)-1].Size = 0
		}
	}
	slices.SortFunc(files, func(a, b sandbox.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}
