package linux

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"path"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxArtifacts bounds how many artifacts one run or cell returns.
const maxArtifacts = 1_000

// artifactFilter says which regular files are not artifacts: skip decides
// from the file's metadata alone (a session's files unchanged since the
// cell began), same from its content digest (an input file left as it was
// given). Either may be nil.
type artifactFilter struct {
	skip func(e entry) bool
	same func(name string, sum [32]byte) bool
}

// artifacts returns the regular files of the working directory that the
// filter lets through, in name order, with contents filling up to budget
// bytes; the rest are listed with ContentOmitted.
func (w *workDir) artifacts(filter artifactFilter, budget int64) []sandbox.Artifact {
	var found []sandbox.Artifact
	for _, e := range w.walk() {
		if len(found) >= maxArtifacts {
			break
		}
		if e.stat.Mode&unix.S_IFMT != unix.S_IFREG || (filter.skip != nil && filter.skip(e)) {
			continue
		}
		a, sum, ok := w.readArtifact(e.name, &budget)
		if !ok || (filter.same != nil && filter.same(e.name, sum)) {
			continue
		}
		found = append(found, a)
	}
	return found
}

// readArtifact reads one file, taking its content out of budget when it
// fits.
func (w *workDir) readArtifact(name string, budget *int64) (sandbox.Artifact, [32]byte, bool) {
	var sum [32]byte
	f, err := openBeneath(w.fd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return sandbox.Artifact{}, sum, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return sandbox.Artifact{}, sum, false
	}
	h := sha256.New()
	var content bytes.Buffer
	keep := st.Size() <= *budget
	dst := io.Writer(h)
	if keep {
		dst = io.MultiWriter(h, &content)
	}
	n, err := io.Copy(dst, f)
	if err != nil {
		return sandbox.Artifact{}, sum, false
	}
	copy(sum[:], h.Sum(nil))
	a := sandbox.Artifact{Name: name, MIME: mimeType(name, content.Bytes()), Size: n, SHA256: hex.EncodeToString(sum[:])}
	if keep && n <= *budget {
		a.Content = content.Bytes()
		*budget -= n
	} else {
		a.ContentOmitted = true
	}
	return a, sum, true
}

// inputFilter leaves out input files whose content is as given.
func inputFilter(inputs []sandbox.File) artifactFilter {
	original := make(map[string][32]byte, len(inputs))
	for _, f := range inputs {
		original[f.Name] = sha256.Sum256(f.Content)
	}
	return artifactFilter{same: func(name string, sum [32]byte) bool {
		orig, ok := original[name]
		return ok && orig == sum
	}}
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
