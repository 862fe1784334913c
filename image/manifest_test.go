package image

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultManifest(t *testing.T) {
	m, err := ParseManifest(DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"python3-pandas", "python3-matplotlib", "python3-sklearn", "nodejs", "bash", "coreutils"} {
		found := false
		for _, p := range m.Packages {
			found = found || p == want
		}
		if !found {
			t.Errorf("default manifest lacks %s", want)
		}
	}
	again, err := ParseManifest(DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest() != again.Digest() || !strings.HasPrefix(m.Digest(), "sha256:") {
		t.Errorf("digest %q", m.Digest())
	}
	m2 := *m
	m2.Packages = append([]string{"less"}, m.Packages...)
	if m2.Digest() == m.Digest() {
		t.Error("a changed package list must change the digest")
	}
}

func TestParseManifestErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"unknown field", `{"name":"x","suite":"bookworm","packages":["a1"],"pakages":[]}`, "unknown field"},
		{"bad name", `{"name":"../x","suite":"bookworm","packages":["a1"]}`, "name must match"},
		{"no packages", `{"name":"x","suite":"bookworm","packages":[]}`, "packages must not be empty"},
		{"bad package", `{"name":"x","suite":"bookworm","packages":["a b"]}`, "packages[0]"},
		{"bad env", `{"name":"x","suite":"bookworm","packages":["aa"],"env":["NOVALUE"]}`, "env[0]"},
		{"empty prepare", `{"name":"x","suite":"bookworm","packages":["aa"],"prepare":[[]]}`, "prepare[0]"},
		{"not json", `{`, "manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestFirstURI(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	os.WriteFile(deb822, []byte("Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\nTypes: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n"), 0o644)
	if got := firstURI(deb822, "URIs:"); got != "http://mirror.example/debian" {
		t.Errorf("deb822: %q", got)
	}
	oneLine := filepath.Join(dir, "sources.list")
	os.WriteFile(oneLine, []byte("# comment\ndeb [arch=amd64] https://mirror.example/debian bookworm main\n"), 0o644)
	if got := firstURI(oneLine, "deb"); got != "https://mirror.example/debian" {
		t.Errorf("one-line: %q", got)
	}
}

func TestTreeDigest(t *testing.T) {
	mk := func() string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755)
		os.Symlink("usr/bin", filepath.Join(dir, "bin"))
		return dir
	}
	a, b := mk(), mk()
	da, err := treeDigest(a, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := treeDigest(b, func(int) {})
	if da.digest != db.digest || da.files != 5 || da.bytes != 10 {
		t.Fatalf("same trees: %+v vs %+v", da, db)
	}
	os.WriteFile(filepath.Join(b, "usr/bin/tool"), []byte("#!/bin/bash\n"), 0o755)
	if dc, _ := treeDigest(b, func(int) {}); dc.digest == da.digest {
		t.Error("changed content, same digest")
	}
	os.Chmod(filepath.Join(a, "usr/bin/tool"), 0o700)
	if dd, _ := treeDigest(a, func(int) {}); dd.digest == da.digest {
		t.Error("changed mode, same digest")
	}
}

func TestListAndOpen(t *testing.T) {
	store := t.TempDir()
	if imgs, err := List(filepath.Join(store, "missing")); err != nil || len(imgs) != 0 {
		t.Fatalf("missing store: %v %v", imgs, err)
	}
	os.MkdirAll(filepath.Join(store, "ds"), 0o755)
	os.WriteFile(filepath.Join(store, "ds", metadataFile), []byte(`{"name":"ds","rootfs":"/x","digest":"sha256:ab"}`), 0o644)
	os.MkdirAll(filepath.Join(store, ".ds.building-1"), 0o755)
	imgs, err := List(store)
	if err != nil || len(imgs) != 1 || imgs[0].Digest != "sha256:ab" {
		t.Fatalf("List = %+v, %v", imgs, err)
	}
	if _, err := Open(store, "other"); err == nil || !strings.Contains(err.Error(), "crucible image build") {
		t.Fatalf("Open missing: %v", err)
	}
}

// The name "host" stands for the host's directories wherever an image is
// named, so no manifest may build an image under it.
func TestManifestNameHostReserved(t *testing.T) {
	_, err := ParseManifest([]byte(`{"name":"host","suite":"bookworm","packages":["python3"]}`))
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("ParseManifest(name host) = %v, want a reserved-name error", err)
	}
}

func TestForModels(t *testing.T) {
	store := t.TempDir()
	if got := ForModels(store); got != Host {
		t.Errorf("ForModels(empty store) = %q, want %q", got, Host)
	}
	m, err := ParseManifest(DefaultManifest())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(store, m.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, m.Name, metadataFile), []byte(`{"name":"`+m.Name+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ForModels(store); got != m.Name {
		t.Errorf("ForModels(store with %s built) = %q", m.Name, got)
	}
}

// TestRecordDocker: RecordDocker adds the Docker image to an image's
// metadata, which Open and List then return, the rest unchanged.
func TestRecordDocker(t *testing.T) {
	store := t.TempDir()
	if err := os.MkdirAll(filepath.Join(store, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"name": "img", "rootfs": "/x/rootfs", "digest": "sha256:ab", "files": 3}`
	if err := os.WriteFile(filepath.Join(store, "img", metadataFile), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	d := DockerImage{Ref: "crucible/img:ab", ID: "sha256:cd"}
	if err := RecordDocker(store, "img", d); err != nil {
		t.Fatal(err)
	}
	img, err := Open(store, "img")
	if err != nil || img.Docker == nil || *img.Docker != d || img.Digest != "sha256:ab" || img.Files != 3 || img.RootFS != "/x/rootfs" {
		t.Fatalf("Open after RecordDocker = %+v, %v", img, err)
	}
	if list, err := List(store); err != nil || len(list) != 1 || list[0].Docker == nil || *list[0].Docker != d {
		t.Errorf("List after RecordDocker = %+v, %v", list, err)
	}
	if err := RecordDocker(store, "none", d); !errors.Is(err, ErrNotFound) {
		t.Errorf("RecordDocker of an image not built: %v, want ErrNotFound", err)
	}
}
