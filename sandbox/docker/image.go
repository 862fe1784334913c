package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// ImageRef returns the Docker image reference ImportImage gives a Crucible
// image: crucible/NAME:HEX-LAYOUT, HEX its content digest's, so that the
// Docker image runs the same bytes as the native runtime and a rebuilt
// image gets a new tag, and LAYOUT importLayout, so that an image
// imported before ImportImage added what it adds now is imported again,
// not reused without it.
func ImageRef(name, digest string) string {
	return "crucible/" + name + ":" + strings.TrimPrefix(digest, "sha256:") + "-" + importLayout
}

// importLayout names what ImportImage adds to an image's tree: "home1",
// the /home/user link (homeEntries). Change it with what is added.
const importLayout = "home1"

// ImportImage makes the root filesystem rootfs of the Crucible image name
// with content digest digest a Docker image (as `tar -C rootfs -c . |
// docker import - REF` does) unless the daemon has it already, and returns
// its reference (ImageRef). The archive stores links as links and never
// follows one. Its /home is the sandbox's, not the image's (homeEntries):
// /home/user a link to the working directory, as in the native sandbox.
func ImportImage(ctx context.Context, cli *client.Client, name, digest, rootfs string) (string, error) {
	ref := ImageRef(name, digest)
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTree(pw, rootfs)) }()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		pr.CloseWithError(err)
		return "", fmt.Errorf("import %s into Docker as %s: %w", rootfs, ref, err)
	}
	defer rc.Close()
	// The daemon reports progress as JSON messages; an error is one of them.
	msg, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return "", fmt.Errorf("import %s into Docker as %s: %w", rootfs, ref, err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return "", fmt.Errorf("import %s into Docker as %s: the daemon said %s", rootfs, ref, strings.TrimSpace(string(msg)))
	}
	return ref, nil
}

// homeEntries are the /home of every container of an imported image: a
// directory of root's holding only the link lang.HomeUser to lang.WorkDir
// (where E2B's SDKs and the code written for them keep their files), as
// the native runtime places it in every root (sandbox/linux's homeLink);
// the image's own /home is left out, as the native runtime leaves it.
//
// Why in the image and not at run time: a container's root is the
// image's, read-only, and Docker can mount directories and files but not
// a symbolic link; a mount at /home would take a host directory (the
// containers mount none), or a tmpfs volume filled by an archive upload
// on every container's start (a cost on each run's path). A link in the
// image costs nothing per run, is read-only as the rest of the root,
// and leads into the container's own /work (it is resolved inside the
// container), so it is no second writable place. A Docker image given as
// it is (Options.Image not made by ImportImage) has the /home it has.
func homeEntries() []*tar.Header {
	return []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755},
		{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(lang.HomeUser, "/"), Linkname: lang.WorkDir, Mode: 0o777},
	}
}

// writeTree writes the tree at root to w as a tar, with owners and modes,
// links as links; its /home is homeEntries.
func writeTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	for _, h := range homeEntries() {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		if rel == "home" { // the image's /home: homeEntries is the sandbox's
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil // SkipDir from a file would skip the rest of the root
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		// FileInfoHeader took the owner's uid and gid from fi (on Unix
		// systems; the image is built on Linux); the names are the
		// host's, not the image's.
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, io.LimitReader(f, h.Size))
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
