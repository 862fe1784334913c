package image

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// BuildOptions configure Build.
type BuildOptions struct {
	// Store is the image store; empty means DefaultStore.
	Store string
	// Mirror is the Debian mirror URL; empty means the one apt uses on
	// this host.
	Mirror string
	// Force rebuilds even when the manifest has not changed.
	Force bool
	// Log receives the build tools' output; nil discards it.
	Log io.Writer
	// Progress, when set, is told what the build is doing: as each step
	// starts, and as its tool says how far it got. It is not called when
	// the image is up to date, and from one goroutine at a time.
	Progress func(Progress)
}

// Build builds m into the store, unless an image built from the same
// manifest is already there. It reports whether it built. The new image
// replaces the old one only once it is complete. A build tool that fails
// is a *ToolError, which holds the tool's last lines of output.
func Build(ctx context.Context, m *Manifest, opts BuildOptions) (*Image, bool, error) {
	store := opts.Store
	if store == "" {
		store = DefaultStore
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	report := opts.Progress
	if report == nil {
		report = func(Progress) {}
	}
	if old, err := Open(store, m.Name); err == nil && old.ManifestDigest == m.Digest() && !opts.Force {
		return old, false, nil
	}
	if errBuildNeedsLinux != nil {
		return nil, false, errBuildNeedsLinux
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return nil, false, fmt.Errorf("debootstrap is not installed (apt-get install debootstrap)")
	}
	mirror := opts.Mirror
	if mirror == "" {
		var err error
		if mirror, err = HostMirror(); err != nil {
			return nil, false, err
		}
	}
	if err := os.MkdirAll(store, 0o755); err != nil {
		return nil, false, err
	}
	tmp := filepath.Join(store, fmt.Sprintf(".%s.building-%d", m.Name, os.Getpid()))
	if err := os.RemoveAll(tmp); err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs")
	debootstrap := []string{"debootstrap", "--variant=" + m.Variant, "--include=" + strings.Join(m.Packages, ","), m.Suite, rootfs, mirror}
	if err := runStep(ctx, log, report, "debootstrap", debootstrap); err != nil {
		return nil, false, withLogTail(err, filepath.Join(rootfs, "debootstrap", "debootstrap.log"))
	}
	for i, cmd := range m.Prepare {
		step := fmt.Sprintf("prepare %d/%d: %s", i+1, len(m.Prepare), strings.Join(cmd, " "))
		if err := runStep(ctx, log, report, step, append([]string{"chroot", rootfs}, cmd...)); err != nil {
			return nil, false, err
		}
	}
	if err := scrubBuildHost(rootfs); err != nil {
		return nil, false, err
	}
	report(Progress{Step: "digest", Stage: StageHash})
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		if err := clearDir(filepath.Join(rootfs, junk)); err != nil {
			return nil, false, err
		}
	}
	fmt.Fprintln(log, "computing the image digest")
	sum, err := treeDigest(rootfs, func(files int) {
		report(Progress{Step: "digest", Stage: StageHash, Done: files})
	})
	if err != nil {
		return nil, false, fmt.Errorf("digest: %w", err)
	}
	final := filepath.Join(store, m.Name)
	img := &Image{
		Name: m.Name, RootFS: filepath.Join(final, "rootfs"), Digest: sum.digest, ManifestDigest: m.Digest(),
		Manifest: *m, SizeBytes: sum.bytes, Files: sum.files, BuiltAt: time.Now().UTC(),
	}
	meta, _ := json.MarshalIndent(img, "", "  ")
	report(Progress{Step: "store"})
	if err := os.WriteFile(filepath.Join(tmp, metadataFile), append(meta, '\n'), 0o644); err != nil {
		return nil, false, err
	}
	if err := replaceDir(tmp, final); err != nil {
		return nil, false, err
	}
	return img, true, nil
}

// runStep runs a build step's tool with runPrivate: its output goes to
// log and, line by line, to report as the step's Progress. A tool that
// fails is a *ToolError with its last lines.
func runStep(ctx context.Context, log io.Writer, report func(Progress), step string, argv []string) error {
	report(Progress{Step: step})
	fmt.Fprintln(log, "+", strings.Join(argv, " "))
	lines := &lineWriter{fn: newToolProgress(step, report).line}
	err := runPrivate(ctx, io.MultiWriter(log, lines), argv)
	tail := lines.close()
	if err != nil {
		return &ToolError{Step: step, Err: err, Tail: tail}
	}
	return nil
}

// withLogTail adds the end of the tool's log file to a *ToolError whose
// tool points to it ("W: See .../debootstrap.log for details"): the file
// goes with the failed build.
func withLogTail(err error, log string) error {
	var te *ToolError
	if !errors.As(err, &te) || !slices.ContainsFunc(te.Tail, func(l string) bool { return strings.Contains(l, filepath.Base(log)) }) {
		return err
	}
	if end := logTail(log); len(end) > 0 {
		te.Tail = append(append(te.Tail, filepath.Base(log)+" ends:"), end...)
	}
	return err
}

// HostMirror returns the Debian archive this host's apt uses, from the
// deb822 sources in /etc/apt/sources.list.d or the one-line
// /etc/apt/sources.list. The security archive is skipped.
func HostMirror() (string, error) {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		if uri := firstURI(f, "URIs:"); uri != "" {
			return uri, nil
		}
	}
	if uri := firstURI("/etc/apt/sources.list", "deb"); uri != "" {
		return uri, nil
	}
	return "", fmt.Errorf("no Debian mirror found in /etc/apt; give one with --mirror")
}

// firstURI returns the first http(s) URI on a line starting with key that
// is not a security archive.
func firstURI(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || fields[0] != key {
			continue
		}
		for _, u := range fields[1:] {
			if (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) && !strings.Contains(u, "security") {
				return u
			}
		}
	}
	return ""
}

// clearDir empties dir, keeping it.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// replaceDir puts the finished build at final, removing what was there.
func replaceDir(tmp, final string) error {
	old := final + fmt.Sprintf(".old-%d", os.Getpid())
	if err := os.Rename(final, old); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
