package service

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/api"
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
	all := append([]Image{{Name: c.ImageName, Digest: c.ImageDigest, Runtime: c.Runtime, Hints: c.Hints, Contents: c.Contents}}, c.Images...)
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
