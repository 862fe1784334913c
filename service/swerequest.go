package service

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/swe"
)

// checkMode refuses an agent run request whose mode is unknown, or that
// sets a field its mode does not use: a field that would be silently
// ignored is refused, naming it, so that a caller never believes a
// budget or a file applies when it does not.
func checkMode(req api.AgentRunRequest) error {
	switch req.Mode {
	case "", api.ModeCode:
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"repo", req.Repo != nil},
			{"test_command", req.TestCommand != ""},
			{"tests", req.Tests != nil},
			{"max_steps", req.MaxSteps != 0},
			{"max_wall_ms", req.MaxWallMS != 0},
		} {
			if f.set {
				return invalid(f.name, `applies to mode "swe" only; this run's mode is "code"`)
			}
		}
		return nil
	case api.ModeSWE:
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"files", req.Files != nil},
			{"test_driven", req.TestDriven},
			{"max_retries", req.MaxRetries != nil},
			{"max_exec_ms", req.MaxExecMS != 0},
			{"max_artifact_bytes", req.MaxArtifactBytes != 0},
		} {
			if f.set {
				return invalid(f.name, `does not apply to mode "swe" (the repository is its input; its budgets are max_steps, max_tokens, max_wall_ms and cell_timeout_ms)`)
			}
		}
		return nil
	default:
		return invalid("mode", `must be "code" (the default) or "swe", got %q`, req.Mode)
	}
}

// The size rules of a swe request's test command and named tests, as
// package swe checks them again.
const (
	maxTestCommandBytes = 16 << 10
	maxTestIDBytes      = 1024
)

// The first bytes of the repository formats.
var (
	gzipMagic     = []byte{0x1f, 0x8b}
	bundleHeaders = [][]byte{[]byte("# v2 git bundle\n"), []byte("# v3 git bundle\n")}
)

// sweTask validates the swe part of req and returns its task. Only the
// archive's size and its first bytes are checked here: it is unpacked in
// the sandbox, never on the server, so whatever else is wrong with it
// (a bad entry, a bomb) is the sandbox's problem and the run's failure.
func sweTask(req api.AgentRunRequest) (swe.Task, error) {
	r := req.Repo
	if r == nil {
		return swe.Task{}, invalid("repo", `is required in mode "swe": {"format": "tar" or "bundle", "archive": the repository as a (gzip'd) tar or a git bundle, base64}`)
	}
	if len(req.Task) > swe.MaxTaskBytes {
		return swe.Task{}, invalid("task", "must be at most %d bytes, got %d", swe.MaxTaskBytes, len(req.Task))
	}
	if strings.ContainsRune(req.Task, 0) || !utf8.ValidString(req.Task) {
		return swe.Task{}, invalid("task", "must be UTF-8 text without NUL bytes")
	}
	switch n := len(r.Archive); {
	case n == 0:
		return swe.Task{}, invalid("repo.archive", "is required: the repository as a (gzip'd) tar or a git bundle, base64")
	case n > swe.MaxRepoBytes:
		return swe.Task{}, invalid("repo.archive", "must be at most %d bytes, got %d", swe.MaxRepoBytes, n)
	}
	isBundle := bytesHasAnyPrefix(r.Archive, bundleHeaders)
	switch r.Format {
	case "":
	case swe.RepoBundle:
		if !isBundle {
			return swe.Task{}, invalid("repo.format", `says "bundle" but the archive does not start with a git bundle's header ("# v2 git bundle" or "# v3 git bundle")`)
		}
	case swe.RepoTar:
		if isBundle || !(bytes.HasPrefix(r.Archive, gzipMagic) || isTarHeader(r.Archive)) {
			return swe.Task{}, invalid("repo.format", `says "tar" but the archive's first bytes are neither a tar's header nor gzip's`)
		}
	default:
		return swe.Task{}, invalid("repo.format", `must be "tar", "bundle" or empty (detected from the archive), got %q`, r.Format)
	}
	if !isBundle && !bytes.HasPrefix(r.Archive, gzipMagic) && !isTarHeader(r.Archive) {
		return swe.Task{}, invalid("repo.archive", "must be a tar, a gzip'd tar or a git bundle: its first bytes are none of them")
	}
	if len(req.TestCommand) > maxTestCommandBytes || strings.ContainsRune(req.TestCommand, 0) || !utf8.ValidString(req.TestCommand) {
		return swe.Task{}, invalid("test_command", "must be UTF-8 text without NUL bytes, at most %d bytes", maxTestCommandBytes)
	}
	if len(req.Tests) > swe.MaxTests {
		return swe.Task{}, invalid("tests", "must name at most %d tests, got %d", swe.MaxTests, len(req.Tests))
	}
	for i, id := range req.Tests {
		file, _, _ := strings.Cut(id, "::")
		if file == "" || len(id) > maxTestIDBytes || strings.ContainsAny(id, "\x00\n\r") || !utf8.ValidString(id) ||
			path.IsAbs(file) || path.Clean(file) != file || file == ".." || strings.HasPrefix(file, "../") {
			return swe.Task{}, invalid(fmt.Sprintf("tests[%d]", i), "must be a test file's clean path relative to the repository's root, optionally followed by ::name (a pytest node ID), on one line, at most %d bytes", maxTestIDBytes)
		}
	}
	return swe.Task{Repo: *r, Prompt: req.Task, TestCommand: req.TestCommand, Tests: req.Tests}, nil
}

// bytesHasAnyPrefix reports whether b starts with one of prefixes.
func bytesHasAnyPrefix(b []byte, prefixes [][]byte) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// isTarHeader reports whether b starts with a tar header whose checksum
// holds (only that first block is read; an empty tar, two zero blocks,
// counts too). The members are read inside the sandbox, never here.
func isTarHeader(b []byte) bool {
	_, err := tar.NewReader(bytes.NewReader(b)).Next()
	return err == nil || (errors.Is(err, io.EOF) && len(b) >= 1024)
}
