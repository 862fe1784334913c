package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
	"github.com/crucible-sandbox/crucible/service"
)

// The runtimes --runtime names.
const (
	runtimeNative = "native"
	runtimeDocker = "docker"
	runtimeGVisor = "gvisor"
)

// defaultRuntime is --runtime's default: native where this build has it
// (Linux), docker elsewhere.
func defaultRuntime() string {
	if nativeRuntimeAvailable {
		return runtimeNative
	}
	return runtimeDocker
}

// runtimesHelp says which runtimes --runtime names and which this build
// has.
func runtimesHelp() string {
	if nativeRuntimeAvailable {
		return "native (namespaces on this host's kernel, needs root), docker (a Docker container per run) or gvisor (a Docker container under gVisor's runsc, a second kernel)"
	}
	return "docker (a Docker container per run) or gvisor (a Docker container under gVisor's runsc, a second kernel); native, namespaces on the host's kernel, needs Linux"
}

// addRuntimeFlag adds --runtime and --docker-image to fl.
func addRuntimeFlag(fl *pflag.FlagSet, name, dockerImage *string) {
	fl.StringVar(name, "runtime", defaultRuntime(), "sandbox `RUNTIME`: "+runtimesHelp()+"; crucible doctor says which this host offers")
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

// startDockerImage starts the docker or gvisor runtime (c.name) on the
// image the flags name: c.dockerImage, a local Docker image, or the built
// Crucible image built in store (the data-science image when "" and it
// is built), imported into Docker on first use (the native runtime's
// --rootfs and the host's directories cannot be a container's root). The
// runs' records carry the Crucible image's digest, or the Docker image's
// id for --docker-image. A host without the daemon, gVisor or the image
// gets an error naming what is missing.
func startDockerImage(ctx context.Context, c runtimeChoice, built, store string, s runtimeSettings) (*imageRuntime, error) {
	opts := docker.Options{Image: c.dockerImage}
	if c.name == runtimeGVisor {
		opts.OCIRuntime = docker.GVisorRuntime
	}
	setDockerPrestart(&opts, s.prestart)
	var hints service.Hinter
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		return nil, platformError(fmt.Errorf("--runtime %s is not available on this host: %w (crucible doctor --runtime %s says what is missing)", c.name, err, c.name))
	}
	defer cli.Close()
	switch {
	case c.dockerImage != "":
		info, err := cli.ImageInspect(ctx, c.dockerImage)
		if err != nil {
			return nil, usageError(fmt.Errorf("--docker-image %s: %w (pull or build it first)", c.dockerImage, err))
		}
		opts.ImageDigest = info.ID
	default:
		if built == "" {
			built = image.ForModels(store)
		}
		if built == image.Host {
			return nil, usageError(fmt.Errorf("--runtime %s: give --image NAME (a built image, imported into Docker the first time; build one with: crucible image build) or --docker-image REF: the host's own directories cannot be a container's root", c.name))
		}
		img, err := image.Open(store, built)
		if err != nil {
			return nil, usageError(err)
		}
		di, _, err := importImage(ctx, cli, img, store) // a store this user cannot write keeps no record: the import stands
		if err != nil {
			return nil, platformError(err)
		}
		opts.Image = di.Ref
		opts.ImageDigest, opts.Env = img.Digest, img.Manifest.Env
		hints = errorHints("", built, store)
	}
	rt, err := docker.New(ctx, opts)
	if errors.Is(err, docker.ErrUnavailable) {
		return nil, platformError(fmt.Errorf("--runtime %s is not available on this host: %w", c.name, err))
	}
	if err != nil {
		return nil, platformError(err)
	}
	return &imageRuntime{Runtime: rt, digest: opts.ImageDigest, hints: hints, close: rt.Close}, nil
}

// setDockerPrestart is where the containers the docker runtime keeps
// created ahead of requests (crucible serve's --prestart, crucible eval's
// --concurrency) reach its options.
func setDockerPrestart(opts *docker.Options, n int) { opts.Prestart = n }
