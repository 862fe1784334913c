package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxArtifacts bounds how many artifacts one run returns, as in the native
// runtime.
const maxArtifacts = 1_000

// The rules are the native runtime's (sandbox/linux/artifacts.go): only
// regular files are artifacts (links are listed by the archive as links
// and never followed), input files left as given are not, content is
// returned while the artifact-bytes budget lasts, and the host reads at
// most the artifact bytes plus the disk size in all. The archive does not
// say which files are mostly holes, so a file whose content is not
// returned is still read for its digest while the read budget lasts; once
// it is spent, the download stops and the files not yet listed are left
// out (the Result's Reason says so).

// artifactBudget is what is left to spend on one run's artifacts.
type artifactBudget struct {
	content int64 // bytes of content the Result may still carry
	read    int64 // bytes the host may still read
}

// errReadBudget stops a download whose read budget is spent.
var errReadBudget = errors.New("the artifact read budget (artifact bytes plus disk size) is spent")

// readArtifacts reads the archive of the working directory (the download
// of /work/.) into artifacts, in the archive's order sorted by name.
func readArtifacts(ctx context.Context, r io.Reader, inputs []sandbox.File, budget artifactBudget) ([]sandbox.Artifact, error) {
	original := make(map[string][32]byte, len(inputs))
	for _, f := range inputs {
		original[f.Name] = sha256.Sum256(f.Content)
	}
	var found []sandbox.Artifact
	tr := tar.NewReader(r)
	for len(found) < maxArtifacts {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return found, err
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		if h.Typeflag != tar.TypeReg || name == "." || sandbox.CheckFileName(name) != "" {
			continue
		}
		a := sandbox.Artifact{Name: name, Size: h.Size, ContentOmitted: true}
		if h.Size > budget.read {
			a.MIME = mimeType(name, nil)
			found = append(found, a)
			return found, errReadBudget
		}
		keep := h.Size <= budget.content
		sum := sha256.New()
		var content bytes.Buffer
		dst := io.Writer(sum)
		if keep {
			dst = io.MultiWriter(sum, &content)
		}
		n, err := io.Copy(dst, io.LimitReader(tr, h.Size))
		budget.read -= n
		if err != nil {
			return found, err
		}
		var digest [32]byte
		copy(digest[:], sum.Sum(nil))
		if orig, ok := original[name]; ok && orig == digest {
			continue
		}
		a.Size, a.SHA256 = n, hex.EncodeToString(digest[:])
		if keep {
			a.Content, a.ContentOmitted = content.Bytes(), false
			budget.content -= n
		}
		a.MIME = mimeType(name, content.Bytes())
		found = append(found, a)
	}
	// In name order, as a Result lists them.
	slices.SortFunc(found, func(a, b sandbox.Artifact) int { return strings.Compare(a.Name, b.Name) })
	return found, nil
}

// mimeType names a file's media type from its extension, else from its
// first bytes, as the native runtime does.
func mimeType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(head)
}
