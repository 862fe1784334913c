package image

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
}

// Build builds m into the store, unless an image built from the same
// manifest is already there. It reports whether it built. The new image
// replaces the old one only once it is complete.
func Build(ctx context.Context, m *Manifest, opts BuildOptions) (*Image, bool, error) {
	store := opts.Store
	if store == "" {
		store = DefaultStore
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if old, err := Open(store, m.Name); err == nil && old.ManifestDigest == m.Digest() && !opts.Force {
		return old, false, nil
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
	if err := runPrivate(ctx, log, debootstrap); err != nil {
		return nil, false, fmt.Errorf("debootstrap: %w", err)
	}
	for _, cmd := range m.Prepare {
		if err := runPrivate(ctx, log, append([]string{"chroot", rootfs}, cmd...)); err != nil {
			return nil, false, fmt.Errorf("prepare %v: %w", cmd, err)
		}
	}
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		if err := clearDir(filepath.Join(rootfs, junk)); err != nil {
			return nil, false, err
		}
	}
	fmt.Fprintln(log, "computing the image digest")
	sum, err := treeDigest(rootfs)
	if err != nil {
		return nil, false, fmt.Errorf("digest: %w", err)
	}
	final := filepath.Join(store, m.Name)
	img := &Image{
		Name: m.Name, RootFS: filepath.Join(final, "rootfs"), Digest: sum.digest, ManifestDigest: m.Digest(),
		Manifest: *m, SizeBytes: sum.bytes, Files: sum.files, BuiltAt: time.Now().UTC(),
	}
	meta, _ := json.MarshalIndent(img, "", "  ")
	if err := os.WriteFile(filepath.Join(tmp, metadataFile), append(meta, '\n'), 0o644); err != nil {
		return nil, false, err
	}
	if err := replaceDir(tmp, final); err != nil {
		return nil, false, err
	}
	return img, true, nil
}

// runPrivate runs a build command in a private mount namespace: the mounts
// debootstrap and package scripts make (/proc, /sys in the target) vanish
// with the command, even when it fails half-way, and never reach the host.
func runPrivate(ctx context.Context, log io.Writer, argv []string) error {
	fmt.Fprintln(log, "+", strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive"}
	cmd.Stdout, cmd.Stderr = log, log
	// Go makes the new mount namespace's propagation private.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd.Run()
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
