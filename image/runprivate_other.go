//go:build !linux

package image

import (
	"context"
	"errors"
	"io"
)

// errBuildNeedsLinux is why Build refuses on this system: an image is
// built on Linux (debootstrap and the packages' scripts in a private mount
// namespace). Elsewhere the images come from a Linux host, or the docker
// runtime runs a local Docker image (--docker-image).
var errBuildNeedsLinux = errors.New("building an image needs Linux (debootstrap in a private mount namespace); on this system run code with --runtime docker --docker-image REF")

// runPrivate refuses: see errBuildNeedsLinux.
func runPrivate(context.Context, io.Writer, []string) error { return errBuildNeedsLinux }
