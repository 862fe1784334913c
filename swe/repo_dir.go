package swe

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// errTooBig stops FromDir's walk when the archive passes MaxRepoBytes;
// errTooMuch when its files' sizes together pass maxRepoFileBytes.
var (
	errTooBig  = errors.New("too big")
	errTooMuch = errors.New("too much")
)

// maxRepoFileBytes caps the files FromDir packs, their sizes summed before
// any is read: a directory of a few huge files of zeros (or sparse ones)
// compresses under MaxRepoBytes, but would take long to pack and unpack to
// more than a session's default disk (1 GiB) holds.
const maxRepoFileBytes = 1 << 30

// FromDir packs the host directory dir as a gzip'd tar Repo, the form a
// task takes a local repository in (the CLI's `crucible swe ./repo`). The
// agent then works on a copy of these bytes in a sandbox, never on dir.
//
// It keeps regular files (with their permission bits: an executable stays
// executable), directories and symbolic links, as links: a link is never
// followed, so a link to /etc/shadow packs as a link, not as the file.
// Every other kind of file (a device, a FIFO, a socket) is skipped, as is
// every entry named .git (the agent's diff is against these bytes, not
// the repository's history). A file is opened with O_NOFOLLOW and read for
// the size it had when it was opened, so one swapped for a link, or grown,
// while it is packed is refused or cut to that size, never followed. The
// archive is bounded by MaxRepoBytes, and its files' sizes together by 1
// GiB (checked before a file is read): past either the walk stops with an
// *sandbox.InputError naming dir.
func FromDir(dir string) (Repo, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, err
	}
	fi, err := os.Stat(root) // the root itself may be a link to the repository
	if err != nil {
		return Repo{}, fmt.Errorf("repository %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return Repo{}, &sandbox.InputError{Field: "repo", Rule: fmt.Sprintf("%s must be a directory", dir)}
	}
	var buf bytes.Buffer
	lw := &limitWriter{w: &buf, left: MaxRepoBytes}
	zw := gzip.NewWriter(lw)
	tw := tar.NewWriter(zw)
	var total int64
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return packEntry(tw, path, filepath.ToSlash(rel), d, &total)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if errors.Is(err, errTooMuch) {
		return Repo{}, &sandbox.InputError{Field: "repo", Rule: fmt.Sprintf("the directory %s holds more than %d bytes of files (.git left out); pass a smaller repository", dir, maxRepoFileBytes)}
	}
	if errors.Is(err, errTooBig) {
		return Repo{}, &sandbox.InputError{Field: "repo", Rule: fmt.Sprintf("the directory %s packs to more than %d bytes (gzip'd tar, .git left out); pass a smaller repository", dir, MaxRepoBytes)}
	}
	if err != nil {
		return Repo{}, fmt.Errorf("repository %s: %w", dir, err)
	}
	return Repo{Format: RepoTar, Archive: buf.Bytes()}, nil
}

// packEntry writes one entry of the walk: a directory, a link (its target
// as it is written, never resolved) or a regular file; other kinds are
// skipped.
func packEntry(tw *tar.Writer, path, name string, d fs.DirEntry, total *int64) error {
	hdr := &tar.Header{Name: name, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	switch typ := d.Type(); {
	case d.IsDir():
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", int64(info.Mode().Perm())
		return tw.WriteHeader(hdr)
	case typ&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
		return tw.WriteHeader(hdr)
	case typ.IsRegular():
		return packFile(tw, path, hdr, total)
	}
	return nil // a device, a FIFO, a socket: not part of a repository
}

// packFile writes a regular file, opened without following a link (one
// swapped in since the walk saw the file is refused: ELOOP) and without
// blocking (a FIFO swapped in is not waited on, then skipped as not
// regular), once its size added to total stays within maxRepoFileBytes.
func packFile(tw *tar.Writer, path string, hdr *tar.Header, total *int64) error {
	f, err := os.OpenFile(path, os.O_RDONLY|packOpenFlags, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	if *total += info.Size(); *total > maxRepoFileBytes {
		return errTooMuch
	}
	hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, int64(info.Mode().Perm()), info.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, info.Size()))
	if err == nil && n < info.Size() {
		err = fmt.Errorf("%s shrank from %d to %d bytes while it was packed", path, info.Size(), n)
	}
	return err
}

// limitWriter writes to w until left bytes have been written, then fails
// with errTooBig.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errTooBig
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}
