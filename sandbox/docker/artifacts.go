package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"mime"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
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
// of /work/.) into artifacts, in the archive's order sorted by name. seen,
// if not nil, gets the name of every regular file read, an unchanged input
// file's too.
func readArtifacts(ctx context.Context, r io.Reader, inputs []sandbox.File, budget artifactBudget, seen map[string]bool) ([]sandbox.Artifact, error) {
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
		if seen != nil {
			seen[name] = true
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

// maxListing bounds the listing of /work the host reads (listWork): room
// for maxArtifacts entries of long names.
const maxListing = 4 << 20

// listWork lists the regular files under /work as name and size, by an
// exec of find in the container as the program's uid (no link is followed:
// find -P), for the files the archive download could not reach once the
// read budget was spent. The listing stops at maxListing bytes.
func (x *execution) listWork(ctx context.Context, uid int) (map[string]int64, error) {
	ex, err := x.rt.cli.ContainerExecCreate(ctx, x.id, container.ExecOptions{
		User: strconv.Itoa(uid) + ":" + strconv.Itoa(uid), AttachStdout: true, AttachStderr: true,
		WorkingDir: lang.WorkDir,
		Cmd:        []string{"/usr/bin/env", "-i", "find", "-P", lang.WorkDir, "-xdev", "-mindepth", "1", "-type", "f", "-printf", `%s %P\0`},
	})
	if err != nil {
		return nil, err
	}
	conn, err := x.rt.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out captured
	if err := readOutput(conn.Reader, maxListing, nil, func() { conn.Close() }, &out); err != nil && !out.outTrunc {
		return nil, err
	}
	files := map[string]int64{}
	recs := bytes.Split(out.out.Bytes(), []byte{0})
	if len(recs) > 0 {
		recs = recs[:len(recs)-1] // the last is incomplete, or empty
	}
	for _, r := range recs {
		size, name, ok := strings.Cut(string(r), " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok || err != nil || sandbox.CheckFileName(name) != "" {
			continue
		}
		files[name] = n
	}
	return files, nil
}

// listRest adds to found the regular files of /work that neither it nor
// seen (the files the archive download read) holds, up to maxArtifacts,
// each with its size alone (neither read nor digested, as the native
// runtime lists a file it may not read). An input file is among them: its
// content was not read, so nothing says it is as given.
func listRest(found []sandbox.Artifact, seen map[string]bool, files map[string]int64) []sandbox.Artifact {
	have := maps.Clone(seen)
	for _, a := range found {
		have[a.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if len(found) >= maxArtifacts {
			break
		}
		if have[name] {
			continue
		}
		found = append(found, sandbox.Artifact{Name: name, Size: files[name], ContentOmitted: true, MIME: mimeType(name, nil)})
	}
	slices.SortFunc(found, func(a, b sandbox.Artifact) int { return strings.Compare(a.Name, b.Name) })
	return found
}
