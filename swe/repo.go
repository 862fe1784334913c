package swe

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Signatures of the formats a Repo's bytes are detected by.
var (
	bundleV2  = []byte("# v2 git bundle\n")
	bundleV3  = []byte("# v3 git bundle\n")
	gzipMagic = []byte{0x1f, 0x8b}
)

// detectFormat says how archive is packed from its first bytes: a git
// bundle's signature line, else a tar (gzip'd or not). It answers "" for
// bytes that are none of them.
func detectFormat(archive []byte) RepoFormat {
	switch {
	case bytes.HasPrefix(archive, bundleV2) || bytes.HasPrefix(archive, bundleV3):
		return RepoBundle
	case bytes.HasPrefix(archive, gzipMagic):
		return RepoTar
	case isTar(archive):
		return RepoTar
	}
	return ""
}

// isTar says whether archive starts with a tar header whose checksum
// holds (archive/tar reads only that first header block; an empty tar,
// two zero blocks, counts too). The members themselves are read inside
// the sandbox, never here.
func isTar(archive []byte) bool {
	_, err := tar.NewReader(bytes.NewReader(archive)).Next()
	return err == nil || (err == io.EOF && len(archive) >= 1024)
}

// repoFormat is the repository's format: Format, or the detected one.
func repoFormat(r Repo) RepoFormat {
	if r.Format != "" {
		return r.Format
	}
	return detectFormat(r.Archive)
}

// validateRepo checks the repository before anything runs: bytes present,
// within MaxRepoBytes, and a format known (and, when Format names one,
// that the bytes are of it, so that the unpacking never guesses). The
// archive's members are checked later, inside the sandbox that unpacks
// it: the host never reads them.
func validateRepo(r Repo) error {
	if len(r.Archive) == 0 {
		return &sandbox.InputError{Field: "repo.archive", Rule: "is required: a tar, a gzip'd tar or a git bundle of the repository"}
	}
	if len(r.Archive) > MaxRepoBytes {
		return &sandbox.InputError{Field: "repo.archive", Rule: fmt.Sprintf("must be at most %d bytes, got %d", MaxRepoBytes, len(r.Archive))}
	}
	detected := detectFormat(r.Archive)
	switch r.Format {
	case "":
		if detected == "" {
			return &sandbox.InputError{Field: "repo.archive", Rule: "must be a tar, a gzip'd tar or a git bundle (it starts with none of their signatures)"}
		}
	case RepoTar, RepoBundle:
		if detected != r.Format {
			return &sandbox.InputError{Field: "repo.format", Rule: fmt.Sprintf("says %q but the archive's first bytes are not a %s", r.Format, describeFormat(r.Format))}
		}
	default:
		return &sandbox.InputError{Field: "repo.format", Rule: fmt.Sprintf("must be %q, %q or empty (detected), got %q", RepoTar, RepoBundle, r.Format)}
	}
	return nil
}

// describeFormat names a format in words.
func describeFormat(f RepoFormat) string {
	if f == RepoBundle {
		return "git bundle (\"# v2 git bundle\" or \"# v3 git bundle\")"
	}
	return "tar or gzip'd tar"
}
