package service

import (
	"fmt"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Contents says what an image holds, as far as the service must know
// before it runs anything there; *hint.Hinter is one (it reads the
// image's directories of Python modules, once per image digest).
type Contents interface {
	// Has reports whether a program in language l finds module installed.
	Has(l sandbox.Language, module string) bool
}

// analysisModules are the Python modules an analysis cannot start
// without: the analyst's profiler loads every dataset into a pandas
// DataFrame and its statistics are numpy's.
var analysisModules = []string{"numpy", "pandas"}

// BuildDataImage is how a user gets an image with analysisModules: the
// manifest `crucible image build` builds by default is the data-science
// image's, and a server offers it, once built, when it starts without
// --image.
const BuildDataImage = "build the data-science image with `crucible image build` and restart the server, which offers it once built without --image (or offer another image with pandas: --image NAME)"

// analysable reports whether img holds analysisModules. An image whose
// contents are unknown is taken to: its analysis fails as a platform
// error if it does not.
func analysable(img *Image) bool {
	if img.Contents == nil {
		return true
	}
	for _, m := range analysisModules {
		if !img.Contents.Has(sandbox.Python, m) {
			return false
		}
	}
	return true
}

// defaultSessionImage returns the index in images (the default first) of
// the image of sessions and analyses whose request names none: the first
// that holds analysisModules, since sessions are where data is explored
// (the web UI's notebook, the analyst, agents), or else the default.
// Stateless runs keep the default image.
func defaultSessionImage(images []Image) int {
	for i := range images {
		if analysable(&images[i]) {
			return i
		}
	}
	return 0
}

// sessionImageNamed returns the image of a session or analysis whose
// request names name: the session default for "", else as for a run
// (Service.image).
func (s *Service) sessionImageNamed(name string) (*Image, error) {
	if name == "" {
		return &s.images[s.sessionImage], nil
	}
	return s.image(name)
}

// analysisImage returns the image an analysis whose request names name
// runs in. One without analysisModules is refused before any session
// starts (KindUnsuitableImage, Field "image"): the message names the
// images offered that have them, or says how to build one.
func (s *Service) analysisImage(name string) (*Image, error) {
	img, err := s.sessionImageNamed(name)
	if err != nil || analysable(img) {
		return img, err
	}
	var with []string
	for i := range s.images {
		if analysable(&s.images[i]) {
			with = append(with, s.images[i].Name)
		}
	}
	msg := fmt.Sprintf("the %s image has no pandas and numpy, which an analysis needs to load and profile its data", img.Name)
	if len(with) > 0 {
		msg += fmt.Sprintf(": name an image that has them (\"image\": %q; this server offers %s)", with[0], strings.Join(with, ", "))
	} else {
		msg += ", and no image this server offers has them: " + BuildDataImage
	}
	return nil, &Error{Kind: KindUnsuitableImage, Message: msg, Field: "image",
		Rule: "must have the Python modules " + strings.Join(analysisModules, " and ")}
}

// CanAnalyse reports whether an image the service offers holds what an
// analysis needs (as far as the images' contents are known).
func (s *Service) CanAnalyse() bool { return analysable(&s.images[s.sessionImage]) }
