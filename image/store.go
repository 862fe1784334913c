package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultStore is where images are built and found.
const DefaultStore = "/var/lib/crucible/images"

// metadataFile, beside an image's rootfs/, describes it.
const metadataFile = "image.json"

// Image is a built image in a store.
type Image struct {
	// Name is the manifest's name; the image lives in <store>/<name>.
	Name string `json:"name"`
	// RootFS is the root filesystem directory a runtime runs in.
	RootFS string `json:"rootfs"`
	// Digest identifies the tree's content: every run reports it.
	Digest string `json:"digest"`
	// ManifestDigest identifies the manifest the image was built from.
	ManifestDigest string `json:"manifest_digest"`
	// Manifest is that manifest.
	Manifest Manifest `json:"manifest"`
	// SizeBytes is the total size of the tree's files.
	SizeBytes int64 `json:"size_bytes"`
	// Files counts the tree's entries.
	Files int `json:"files"`
	// BuiltAt is when the build finished.
	BuiltAt time.Time `json:"built_at"`
	// Docker, when set, is the Docker image the tree was imported as
	// (RecordDocker), which the docker and gvisor runtimes run.
	Docker *DockerImage `json:"docker,omitempty"`
}

// DockerImage is a Docker image made of an image's tree.
type DockerImage struct {
	// Ref is its reference, crucible/NAME:HEX (HEX the tree's digest's).
	Ref string `json:"ref"`
	// ID is the Docker image's id, sha256:..., its configuration's digest.
	ID string `json:"id"`
}

// RecordDocker records in the metadata of the image name in store that
// its tree was imported into Docker as d, replacing the metadata file
// whole (written beside it, then renamed), so that a reader sees the old
// or the new one. A rebuilt image has a new tree and records anew.
func RecordDocker(store, name string, d DockerImage) error {
	img, err := Open(store, name)
	if err != nil {
		return err
	}
	img.Docker = &d
	meta, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(store, name, metadataFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(meta, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ErrNotFound reports an image that is not in the store.
var ErrNotFound = errors.New("image not found")

// Open returns the image called name in store.
func Open(store, name string) (*Image, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("image name must match %s, got %q", nameRE, name)
	}
	b, err := os.ReadFile(filepath.Join(store, name, metadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q in %s (build it with `crucible image build`)", ErrNotFound, name, store)
	}
	if err != nil {
		return nil, err
	}
	var img Image
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(store, name, metadataFile), err)
	}
	return &img, nil
}

// List returns the images in store, by name. A missing store holds none.
func List(store string) ([]Image, error) {
	entries, err := os.ReadDir(store)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var images []Image
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // builds in progress and their leftovers start with "."
		}
		img, err := Open(store, e.Name())
		if err != nil {
			continue // not an image directory
		}
		images = append(images, *img)
	}
	sort.Slice(images, func(i, j int) bool { return images[i].Name < images[j].Name })
	return images, nil
}
