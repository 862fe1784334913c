package docker

import (
	"archive/tar"
	"bytes"
	"path"
	"sort"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// codeArchive is the tar of /code's files (name, then content, in pairs):
// the program's file, owned by root and read-only, as the archive upload
// puts it in /code.
func codeArchive(pairs ...string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(pairs); i += 2 {
		name, content := pairs[i], pairs[i+1]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o444, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

// filesArchive is the tar of the input files for /work: each with the
// directories that hold it, owned by the sandbox's uid, except a ReadOnly
// file, which is root's and mode 0444 (0555 if executable), as in the
// native sandbox, and the directories that hold one. The daemon extracts it keeping these owners.
func filesArchive(files []sandbox.File, uid int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	dirs := map[string]bool{}
	var dirList []string
	for _, f := range files {
		for d := path.Dir(f.Name); d != "."; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				dirList = append(dirList, d)
			}
		}
	}
	// A directory that holds a read-only file, at any depth, is root's:
	// nothing can be added to it or removed from it, and it cannot be
	// renamed in /work, which is sticky.
	locked := map[string]bool{}
	for _, f := range files {
		if f.ReadOnly {
			for d := path.Dir(f.Name); d != "."; d = path.Dir(d) {
				locked[d] = true
			}
		}
	}
	sort.Strings(dirList) // a parent sorts before its children
	for _, d := range dirList {
		owner := uid
		if locked[d] {
			owner = 0
		}
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir, Uid: owner, Gid: owner, ModTime: now}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Typeflag: tar.TypeReg, Size: int64(len(f.Content)), Uid: uid, Gid: uid, Mode: 0o644, ModTime: now}
		if f.Executable {
			h.Mode = 0o755
		}
		if f.ReadOnly {
			h.Uid, h.Gid, h.Mode = 0, 0, 0o444
			if f.Executable {
				h.Mode = 0o555
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}
