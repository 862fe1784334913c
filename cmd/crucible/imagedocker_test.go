package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"

	cimage "github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// TestImportImageRecorded: importImage makes a built image's tree a
// Docker image, records its reference and id with the image, and
// `crucible image ls` shows them; a second import finds it there.
func TestImportImageRecorded(t *testing.T) {
	testenv.Docker(t)
	ctx := context.Background()
	store := t.TempDir()
	root := filepath.Join(store, "tiny", "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hello"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	salt := make([]byte, 32) // a digest no other run of the test used: a fresh import
	_, _ = rand.Read(salt)
	meta, _ := json.Marshal(cimage.Image{Name: "tiny", RootFS: root, Digest: "sha256:" + hex.EncodeToString(salt), Files: 2})
	if err := os.WriteFile(filepath.Join(store, "tiny", "image.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := cimage.Open(store, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	d, recordErr, err := importImage(ctx, cli, img, store)
	if err != nil || recordErr != nil {
		t.Fatalf("importImage: %v, %v", err, recordErr)
	}
	t.Cleanup(func() { _, _ = cli.ImageRemove(ctx, d.Ref, image.RemoveOptions{Force: true}) })
	info, err := cli.ImageInspect(ctx, d.Ref)
	if err != nil || info.ID != d.ID || d.Ref != docker.ImageRef("tiny", img.Digest) {
		t.Fatalf("Docker has %s as %v, %v; importImage said %+v", d.Ref, info.ID, err, d)
	}
	got, err := cimage.Open(store, "tiny")
	if err != nil || got.Docker == nil || *got.Docker != d {
		t.Fatalf("the image's record after the import: %+v, %v; want %+v", got.Docker, err, d)
	}
	out, stderr, code := runCrucible(t, "image", "ls", "--store", store)
	if code != 0 || !strings.Contains(string(out), "DOCKER") || !strings.Contains(string(out), d.Ref+" "+d.ID) {
		t.Errorf("crucible image ls: exit %d, %s%s; want the Docker image %s %s", code, out, stderr, d.Ref, d.ID)
	}
	again, recordErr, err := importImage(ctx, cli, got, store)
	if err != nil || recordErr != nil || again != d {
		t.Errorf("a second import: %+v, %v, %v; want %+v", again, err, recordErr, d)
	}
}
