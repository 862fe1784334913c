package service

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Image is a root filesystem the service offers, with the runtime that
// runs code in it: each image has its own runtime, and so its own pool of
// ready sandboxes.
type Image struct {
	// Name is what a request names it by (sandbox.Request.Image).
	Name string
	// Digest identifies its content, "" when it has none; it is recorded
	// with every run and is part of every cache key.
	Digest string
	// Runtime runs the image's requests and sessions.
	Runtime Runtime
	// Hints, if set, writes the hints of the errors of programs run in
	// the image (what the image lacks, which images have it).
	Hints Hinter
	// Contents, if set, says which modules the image holds (see
	// Config.Contents).
	Contents Contents
	// Lacks says what Runtime cannot do (see Lacks).
	Lacks Lacks
}

// Lacks says which parts of the contract an image's runtime cannot serve,
// each with the reason, for a runtime that implements the interfaces but
// not yet every feature (the docker runtime before its sessions or its
// network allowlists): a request that needs one is refused before
// anything runs, KindUnsuitableImage naming the field, instead of failing
// in the runtime as a platform error. The zero value lacks nothing.
type Lacks struct {
	// Sessions, if set, is why the runtime opens no sessions: sessions,
	// analyses and agent runs in the image are refused (Field "image").
	Sessions string
	// Network, if set, is why the runtime cannot run a program with a
	// network allowlist: such a run is refused (Field "network").
	Network string
}

// sessionsLacked refuses a session (or an analysis, or an agent run) in
// img when its runtime has none.
func (img *Image) sessionsLacked() error {
	if img.Lacks.Sessions == "" {
		return nil
	}
	rule := "must be an image whose runtime has sessions: " + img.Lacks.Sessions
	return &Error{Kind: KindUnsuitableImage, Field: "image", Rule: rule,
		Message: fmt.Sprintf("the %s image cannot hold a session: %s", img.Name, img.Lacks.Sessions)}
}

// networkLacked refuses a run with network n in img when its runtime
// cannot give one.
func (img *Image) networkLacked(n sandbox.Network) error {
	if n.IsZero() || img.Lacks.Network == "" {
		return nil
	}
	rule := fmt.Sprintf(`must be "none" in the %s image: %s`, img.Name, img.Lacks.Network)
	return &Error{Kind: KindUnsuitableImage, Field: "network", Rule: rule, Message: "network: " + rule}
}

// DefaultImageName names Config.Runtime's image when Config.ImageName is
// empty.
const DefaultImageName = "default"

// imageNameRE is the rule of an image's name: what `crucible image build`
// accepts, and "host".
var imageNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// offeredImages returns c's images, the default (Runtime's) first, and
// checks their names: valid and each once.
func (c Config) offeredImages() ([]Image, error) {
	all := append([]Image{{Name: c.ImageName, Digest: c.ImageDigest, Runtime: c.Runtime, Hints: c.Hints, Contents: c.Contents, Lacks: c.Lacks}}, c.Images...)
	if all[0].Name == "" {
		all[0].Name = DefaultImageName
	}
	seen := map[string]bool{}
	for i, img := range all {
		switch {
		case !imageNameRE.MatchString(img.Name):
			return nil, fmt.Errorf("service: Config: image name %q must match %s", img.Name, imageNameRE)
		case seen[img.Name]:
			return nil, fmt.Errorf("service: Config: image %q is offered twice", img.Name)
		case img.Runtime == nil:
			return nil, fmt.Errorf("service: Config.Images[%d] (%s) has no Runtime", i-1, img.Name)
		}
		seen[img.Name] = true
	}
	return all, nil
}

// image returns the image a request names, the default for "". An image
// the service does not offer is an input error naming "image" and listing
// those it does.
func (s *Service) image(name string) (*Image, error) {
	if name == "" {
		return &s.images[0], nil
	}
	for i := range s.images {
		if s.images[i].Name == name {
			return &s.images[i], nil
		}
	}
	names := make([]string, len(s.images))
	for i, img := range s.images {
		names[i] = img.Name
	}
	return nil, invalid("image", "must be one of the images this server offers (%s; the default is %s), got %q",
		strings.Join(names, ", "), s.images[0].Name, name)
}

// Images lists the images the service offers, the default first.
func (s *Service) Images() api.ImageList {
	list := api.ImageList{Default: s.images[0].Name, SessionDefault: s.images[s.sessionImage].Name, Images: make([]api.Image, len(s.images))}
	for i, img := range s.images {
		list.Images[i] = api.Image{Name: img.Name, Digest: img.Digest}
	}
	return list
}
