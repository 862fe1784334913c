// Package image builds sandbox root filesystems from Debian packages. A
// manifest names the Debian suite and the packages; Build runs
// debootstrap, prepares the tree (caches a program would otherwise build
// at every start), and records a digest of the manifest, which decides
// whether a rebuild is needed, and a digest of the tree's content, which
// every run in the image reports.
package image

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// DefaultManifest returns the curated data-science image kept in the
// repository, in bytes of the caller's own: python3 with numpy, pandas,
// matplotlib, scipy, scikit-learn, statsmodels, seaborn, sympy, networkx,
// openpyxl, pillow, pytest and pytest-timeout; nodejs; bash, coreutils,
// git and patch.
func DefaultManifest() []byte { return bytes.Clone(defaultManifest) }

// defaultManifest is what DefaultManifest returns.
//
//go:embed manifests/datascience.json
var defaultManifest []byte

// Manifest describes an image.
type Manifest struct {
	// Name names the image in the store ("datascience").
	Name string `json:"name"`
	// Description says what the image is for.
	Description string `json:"description,omitempty"`
	// Suite is the Debian release, such as "bookworm".
	Suite string `json:"suite"`
	// Variant is debootstrap's variant; "minbase" keeps the image small.
	Variant string `json:"variant,omitempty"`
	// Packages are installed with their dependencies (not recommends).
	Packages []string `json:"packages"`
	// Prepare lists commands run inside the finished tree (chroot) to warm
	// caches, such as matplotlib's font list.
	Prepare [][]string `json:"prepare,omitempty"`
	// Env is added to every sandboxed program's environment in this
	// image.
	Env []string `json:"env,omitempty"`
	// TmpSeed is a directory of the image whose contents every sandbox
	// gets in its fresh, writable /tmp, such as caches that their programs
	// insist on finding in a writable place (matplotlib's font list).
	TmpSeed string `json:"tmp_seed,omitempty"`
}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	packageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	envRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// ParseManifest decodes and checks a manifest; unknown fields are errors,
// so a typo does not silently build another image.
func ParseManifest(b []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// LoadManifest reads a manifest file.
func LoadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func (m *Manifest) validate() error {
	if m.Variant == "" {
		m.Variant = "minbase"
	}
	switch {
	case !nameRE.MatchString(m.Name):
		return fmt.Errorf("manifest: name must match %s, got %q", nameRE, m.Name)
	case m.Name == Host:
		return fmt.Errorf("manifest: name %q is reserved for the host's directories", Host)
	case !nameRE.MatchString(m.Suite):
		return fmt.Errorf("manifest: suite must be a Debian release name, got %q", m.Suite)
	case !nameRE.MatchString(m.Variant):
		return fmt.Errorf("manifest: variant must be a debootstrap variant, got %q", m.Variant)
	case len(m.Packages) == 0:
		return fmt.Errorf("manifest: packages must not be empty")
	}
	for i, p := range m.Packages {
		if !packageRE.MatchString(p) {
			return fmt.Errorf("manifest: packages[%d] must be a Debian package name, got %q", i, p)
		}
	}
	for i, c := range m.Prepare {
		if len(c) == 0 {
			return fmt.Errorf("manifest: prepare[%d] must not be empty", i)
		}
	}
	if m.TmpSeed != "" && (!strings.HasPrefix(m.TmpSeed, "/") || strings.Contains(m.TmpSeed, "..")) {
		return fmt.Errorf("manifest: tmp_seed must be an absolute path without .., got %q", m.TmpSeed)
	}
	for i, e := range m.Env {
		if !envRE.MatchString(e) {
			return fmt.Errorf("manifest: env[%d] must be NAME=VALUE, got %q", i, e)
		}
	}
	return nil
}

// Digest identifies the manifest's content: an image is rebuilt only when
// it changes.
func (m *Manifest) Digest() string {
	b, _ := json.Marshal(m) // fields in declaration order: canonical
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
