package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// workSnapshot is the content digest of each regular file of /work, by
// name: what a cell's artifacts are compared with. The archive API says
// nothing cheaper that tells a changed file (its times have a second's
// grain in the archive), so the whole working directory is read after a
// cell, within the read budget (the artifact bytes plus the disk size, as
// for a run's artifacts: artifacts.go); links are listed as links and
// never followed.
type workSnapshot map[string][32]byte

// scanWork reads /work and returns its snapshot and, when budget is not
// nil, the regular files whose content differs from before (new or
// changed) as artifacts, their content while budget.content lasts.
// Files past the read budget are left out of both.
func (s *Session) scanWork(ctx context.Context, before workSnapshot, budget *artifactBudget) (workSnapshot, []sandbox.Artifact, error) {
	read := s.lim.ArtifactBytes + s.lim.DiskBytes
	rc, _, err := s.rt.cli.CopyFromContainer(ctx, s.cid, lang.WorkDir+"/.")
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	after := workSnapshot{}
	var arts []sandbox.Artifact
	tr := tar.NewReader(rc)
	for len(arts) < maxArtifacts {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return after, arts, err
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		if h.Typeflag != tar.TypeReg || name == "." || sandbox.CheckFileName(name) != "" {
			continue
		}
		if h.Size > read {
			return after, arts, errReadBudget
		}
		keep := budget != nil && h.Size <= budget.content
		sum := sha256.New()
		var content bytes.Buffer
		dst := io.Writer(sum)
		if keep {
			dst = io.MultiWriter(sum, &content)
		}
		n, err := io.Copy(dst, io.LimitReader(tr, h.Size))
		read -= n
		if err != nil {
			return after, arts, err
		}
		var digest [32]byte
		copy(digest[:], sum.Sum(nil))
		after[name] = digest
		if old, ok := before[name]; budget == nil || (ok && old == digest) {
			continue
		}
		a := sandbox.Artifact{Name: name, Size: n, SHA256: hex.EncodeToString(digest[:]), ContentOmitted: true}
		if keep {
			a.Content, a.ContentOmitted = content.Bytes(), false
			budget.content -= n
		}
		a.MIME = mimeType(name, content.Bytes())
		arts = append(arts, a)
	}
	return after, arts, nil
}
