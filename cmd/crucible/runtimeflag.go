package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// The runtimes --runtime names.
const (
	runtimeNative = "native"
	runtimeDocker = "docker"
	runtimeGVisor = "gvisor"
)

// addRuntimeFlag adds --runtime and --docker-image to fl.
func addRuntimeFlag(fl *pflag.FlagSet, name, dockerImage *string) {
	fl.StringVar(name, "runtime", runtimeNative, "sandbox `RUNTIME`: native (namespaces on this host's kernel, needs root), docker (a Docker container per run) or gvisor (a Docker container under gVisor's runsc, a second kernel)")
	fl.StringVar(dockerImage, "docker-image", "", "with --runtime docker or gvisor: run in the local Docker image `REF` (it must have the interpreters) instead of --image imported into Docker")
}

// checkRuntimeName rejects a --runtime no runtime has.
func checkRuntimeName(name string) error {
	switch name {
	case runtimeNative, runtimeDocker, runtimeGVisor:
		return nil
	}
	return fmt.Errorf("--runtime %q: want %s, %s or %s", name, runtimeNative, runtimeDocker, runtimeGVisor)
}

// startDockerRuntime returns the docker or gvisor runtime (name) on the
// image the flags name: dockerImage, a local Docker image, or the built
// Crucible image imageName in store, imported into Docker on first use
// (the native runtime's --rootfs and the host's directories cannot be).
// A host without the daemon, gVisor or the image gets an error naming what
// is missing.
func startDockerRuntime(ctx context.Context, name, imageName, dockerImage, store string) (*docker.Runtime, error) {
	opts := docker.Options{Image: dockerImage}
	if name == runtimeGVisor {
		opts.OCIRuntime = docker.GVisorRuntime
	}
	if dockerImage == "" {
		if imageName == "" || imageName == image.Host {
			return nil, usageError(fmt.Errorf("--runtime %s: give --image NAME (a built image, imported into Docker the first time; list them with: crucible image ls) or --docker-image REF: the host's own directories cannot be a container's root", name))
		}
		img, err := image.Open(store, imageName)
		if err != nil {
			return nil, usageError(err)
		}
		cli, err := docker.Connect(ctx, "")
		if err != nil {
			return nil, platformError(fmt.Errorf("--runtime %s is not available on this host: %w", name, err))
		}
		opts.Image, err = docker.ImportImage(ctx, cli, img.Name, img.Digest, img.RootFS)
		cli.Close()
		if err != nil {
			return nil, platformError(err)
		}
		opts.ImageDigest, opts.Env = img.Digest, img.Manifest.Env
	}
	rt, err := docker.New(ctx, opts)
	if errors.Is(err, docker.ErrUnavailable) {
		return nil, platformError(fmt.Errorf("--runtime %s is not available on this host: %w", name, err))
	}
	if err != nil {
		return nil, platformError(err)
	}
	return rt, nil
}
