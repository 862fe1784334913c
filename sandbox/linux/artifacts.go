package linux

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// Bounds on what collectArtifacts looks at, whatever the program left.
const (
	maxArtifactEntries = 10_000 // directory entries walked
	maxArtifacts       = 1_000  // artifacts returned
	maxArtifactDepth   = 32     // directory nesting
)

// collectArtifacts returns the regular files under the sandbox's working
// directory that are not input files with their original content, in name
// order. Their contents fill up to budget bytes; the rest are listed with
// ContentOmitted.
//
// The host reads as root from a directory the program controlled, so every
// path is resolved with openat2 beneath the working directory, refusing
// symlinks and mount crossings: a link the program planted (to /etc/shadow
// or the host's files through /proc) is skipped, never followed. Special
// files (FIFOs, sockets) are skipped without being opened for reading.
func collectArtifacts(initPid int, inputs []sandbox.File, budget int64) ([]sandbox.Artifact, error) {
	work, err := unix.Open(fmt.Sprintf("/proc/%d/root%s", initPid, lang.WorkDir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the sandbox's working directory: %w", err)
	}
	defer unix.Close(work)
	original := make(map[string][32]byte, len(inputs))
	for _, f := range inputs {
		original[f.Name] = sha256.Sum256(f.Content)
	}
	c := &collector{work: work, original: original, budget: budget}
	if err := c.walk("", 0); err != nil {
		return nil, err
	}
	sort.Slice(c.found, func(i, j int) bool { return c.found[i].Name < c.found[j].Name })
	return c.found, nil
}

type collector struct {
	work     int
	original map[string][32]byte
	budget   int64
	entries  int
	found    []sandbox.Artifact
}

// resolveBeneath confines a path to the working directory: no "..", no
// absolute path, no symlink, no mount crossing.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

func (c *collector) open(rel string, flags uint64) (int, error) {
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(c.work, rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: resolveBeneath})
}

func (c *collector) walk(dir string, depth int) error {
	if depth > maxArtifactDepth {
		return nil
	}
	fd, err := c.open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil // replaced or made unreadable: nothing to collect
	}
	d := os.NewFile(uintptr(fd), dir)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil
	}
	sort.Strings(names)
	for _, name := range names {
		c.entries++
		if c.entries > maxArtifactEntries || len(c.found) >= maxArtifacts {
			return nil
		}
		rel := path.Join(dir, name)
		var st unix.Stat_t
		if err := unix.Fstatat(c.work, rel, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := c.walk(rel, depth+1); err != nil {
				return err
			}
		case unix.S_IFREG:
			if a, ok := c.read(rel); ok {
				c.found = append(c.found, a)
			}
		}
	}
	return nil
}

// read returns rel as an artifact, or false if it is an unchanged input or
// cannot be read as a regular file.
func (c *collector) read(rel string) (sandbox.Artifact, bool) {
	fd, err := c.open(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return sandbox.Artifact{}, false
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return sandbox.Artifact{}, false
	}
	h := sha256.New()
	var content bytes.Buffer
	keep := st.Size() <= c.budget
	w := io.Writer(h)
	if keep {
		w = io.MultiWriter(h, &content)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return sandbox.Artifact{}, false
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if orig, ok := c.original[rel]; ok && orig == sum {
		return sandbox.Artifact{}, false
	}
	a := sandbox.Artifact{Name: rel, MIME: mimeType(rel, content.Bytes()), Size: n, SHA256: hex.EncodeToString(sum[:])}
	if keep && n <= c.budget {
		a.Content = content.Bytes()
		c.budget -= n
	} else {
		a.ContentOmitted = true
	}
	return a, true
}

// mimeType names a file's media type from its extension, else from its
// first bytes.
func mimeType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(head)
}
