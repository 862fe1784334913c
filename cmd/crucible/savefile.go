package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxSameName bounds the numbered names tried for one file.
const maxSameName = 1000

// saveNew writes content to a new file in dir, named cleanName(name), or
// name-2.ext, name-3.ext... when that exists, and returns its path. dir is
// created if missing.
//
// Security: the name is a sandboxed program's choice and dir may hold
// anything, so the file is created through an os.Root of dir (nothing
// outside dir is reached, whatever the name) with O_CREATE|O_EXCL, which
// never follows a symlink and never opens an existing file: nothing already
// in dir is replaced or written through.
func saveNew(dir, name string, content []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	clean := cleanName(name)
	for i := 1; i <= maxSameName; i++ {
		candidate := numberedName(clean, i)
		f, err := root.OpenFile(candidate, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = root.Remove(candidate)
			return "", err
		}
		return filepath.Join(dir, candidate), nil
	}
	return "", fmt.Errorf("%s: %d files named like %s exist already; not saved", dir, maxSameName, clean)
}

// numberedName returns name for i = 1, else name with -i before its
// extension.
func numberedName(name string, i int) string {
	if i == 1 {
		return name
	}
	ext := path.Ext(name)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i, ext)
}

// createNew writes content to the new file p, a path the operator chose; it
// never replaces an existing file nor writes through a symlink.
func createNew(p string, content []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
