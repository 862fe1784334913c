package linux

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"path"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxArtifacts bounds how many artifacts one run or cell returns; the walk
// bounds (maxWalkEntries) how many files are visited to find them.
const maxArtifacts = 1_000

// Collecting artifacts must cost the host in proportion to what the
// program actually wrote, within the run's own limits, however it shaped
// its files: a file's apparent size is not what it wrote. ftruncate makes
// a 64 MiB file of holes in microseconds, and reading and hashing 200 of
// them took the host 7 s. So a file's content is read only
//
//   - to return it, when its apparent size fits what is left of the
//     artifact-bytes budget (which bounds those reads), or
//   - to give the digest of content too large to return, when its blocks
//     cover its size: it holds data the program wrote, which the disk limit
//     bounds; a file mostly of holes is listed with its size only.
//
// Every read also counts against readBudget (artifact bytes plus disk), in
// case the program, still alive in a session, writes as the host reads.
// The walk stops when ctx is done.

// artifactBudget is what is left to spend on one run's or cell's artifacts.
type artifactBudget struct {
	content int64 // bytes of content the Result may still carry
	read    int64 // bytes the host may still read
}

// budgetFor returns the artifact budget of a run or cell with limits lim.
func budgetFor(lim sandbox.Limits) artifactBudget {
	return artifactBudget{content: lim.ArtifactBytes, read: lim.ArtifactBytes + lim.DiskBytes}
}

// artifactFilter says which regular files are not artifacts: skip decides
// from the file's metadata alone (a session's files unchanged since the
// cell began), same from its content digest (an input file left as it was
// given). Either may be nil.
type artifactFilter struct {
	skip func(e entry) bool
	same func(name string, sum [32]byte) bool
}

// artifacts returns the regular files of the working directory that the
// filter lets through, in name order, within budget (see above). When ctx
// is done it stops and returns what it found with ctx's error.
func (w *workDir) artifacts(ctx context.Context, filter artifactFilter, budget *artifactBudget) ([]sandbox.Artifact, error) {
	var found []sandbox.Artifact
	for _, e := range w.walk() {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		if len(found) >= maxArtifacts {
			break
		}
		if e.stat.Mode&unix.S_IFMT != unix.S_IFREG || (filter.skip != nil && filter.skip(e)) {
			continue
		}
		a, sum, err := w.readArtifact(ctx, e.name, budget)
		if err != nil {
			if ctx.Err() != nil {
				return found, ctx.Err()
			}
			continue // gone, or no longer a regular file
		}
		if a.SHA256 != "" && filter.same != nil && filter.same(e.name, sum) {
			continue
		}
		found = append(found, a)
	}
	return found, nil
}

// readArtifact describes one file, reading it only as the budget allows.
// SHA256 is left empty when it was not read.
func (w *workDir) readArtifact(ctx context.Context, name string, budget *artifactBudget) (sandbox.Artifact, [32]byte, error) {
	var sum [32]byte
	f, st, err := openRegular(w.fd, name, name, unix.O_RDONLY, 0)
	if err != nil {
		return sandbox.Artifact{}, sum, err
	}
	defer f.Close()
	a := sandbox.Artifact{Name: name, Size: st.Size, ContentOmitted: true}
	keep := st.Size <= budget.content
	written := st.Blocks*512 >= st.Size // no holes: the program wrote it all
	if (!keep && !written) || st.Size > budget.read {
		a.MIME = mimeType(name, nil)
		return a, sum, nil
	}
	h := sha256.New()
	var content bytes.Buffer
	dst := io.Writer(h)
	if keep {
		dst = io.MultiWriter(h, &content)
	}
	n, err := io.Copy(dst, ctxReader{ctx, io.LimitReader(f, st.Size)})
	budget.read -= n
	if err != nil {
		return sandbox.Artifact{}, sum, err
	}
	copy(sum[:], h.Sum(nil))
	a.Size, a.SHA256 = n, hex.EncodeToString(sum[:])
	if keep {
		a.Content, a.ContentOmitted = content.Bytes(), false
		budget.content -= n
	}
	a.MIME = mimeType(name, content.Bytes())
	return a, sum, nil
}

// ctxReader reads from r until ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
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
