package main

import (
	"github.com/crucible-sandbox/crucible/hint"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// errorHints returns the hints of the errors of programs run as --rootfs,
// --image and --store say (startRuntime's arguments, already checked by
// it): what their root filesystem lacks, and which images of the store
// have it.
func errorHints(rootfs, imageName, store string) service.Hinter {
	if imageName == "" || imageName == image.Host {
		return hint.New(hint.Config{RootFS: rootfs, Store: store})
	}
	img, err := image.Open(store, imageName)
	if err != nil {
		return nil // startRuntime refused it: nothing runs
	}
	return hint.New(hint.Config{RootFS: img.RootFS, Image: img.Name, Digest: img.Digest, Store: store})
}

// showHint prints the hint of a cell's error, if it has one.
func showHint(d *display, e *sandbox.ExecError) {
	if e != nil && e.Hint != "" {
		d.say("hint: %s", e.Hint)
	}
}
