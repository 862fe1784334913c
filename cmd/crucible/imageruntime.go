package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/service"
)

// runtimeChoice is what --runtime and --docker-image choose: the kind of
// runtime every image of a command runs on.
type runtimeChoice struct {
	name        string
	dockerImage string
}

// addFlags adds --runtime and --docker-image to fl.
func (c *runtimeChoice) addFlags(fl *pflag.FlagSet) { addRuntimeFlag(fl, &c.name, &c.dockerImage) }

// check rejects a runtime no runtime has and --docker-image without a
// runtime on Docker; the error is a usage error.
func (c runtimeChoice) check() error {
	if err := checkRuntimeName(c.name); err != nil {
		return usageError(err)
	}
	if c.dockerImage != "" && !c.onDocker() {
		return usageError(errors.New("--docker-image: only with --runtime docker or gvisor"))
	}
	return nil
}

// withConfig returns c with --config's runtime and docker_image in place
// of the flags not given (nameGiven, imageGiven: --runtime and
// --docker-image were).
func (c runtimeChoice) withConfig(conf *serveConfig, nameGiven, imageGiven bool) runtimeChoice {
	if !nameGiven && conf.Runtime != "" {
		c.name = conf.Runtime
	}
	if !imageGiven && conf.DockerImage != "" {
		c.dockerImage = conf.DockerImage
	}
	return c
}

// onDocker reports whether the runtime runs containers on Docker.
func (c runtimeChoice) onDocker() bool { return c.name == runtimeDocker || c.name == runtimeGVisor }

// runtimeSettings are the pools and uids a command asks of each image's
// runtime; what a kind of runtime has not (zygote slots, warm sessions
// and the uid range on Docker), it ignores (see startDockerImage).
type runtimeSettings struct {
	// warm returns the zygote slots to keep for the root filesystem
	// (native); nil keeps none.
	warm func(rootfs string) int
	// warmSessions and prestart are the sessions and sandboxes kept
	// started ahead of requests.
	warmSessions, prestart int
	// uidBase and uidCount are the native runtime's uid range (zero: its
	// default).
	uidBase, uidCount int
	// logger receives what the runtime's pools report; nil is the default.
	logger *slog.Logger
}

// imageRuntime is an image's runtime, whatever its kind, as the service
// takes it: the one pipeline runs every image alike (what a runtime
// cannot give, such as a network allowlist under gVisor, it says to the
// service: service.NetworkChecker).
type imageRuntime struct {
	service.Runtime
	// digest identifies the image's content, recorded with every run.
	digest string
	// hints writes the hints of the programs' errors; nil writes none.
	hints service.Hinter
	// pools reports the runtime's pools of ready sandboxes by kind
	// ("prestart", "warm", "warm-sessions"); nil when it keeps none.
	pools func() map[string]service.PoolStats
	// close releases the runtime.
	close func() error
}

// start starts the runtime c chooses for an image: the built image built
// of store, or the host's directories or the directory rootfs when built
// is "" (native only), or --docker-image. The error is the command's exit:
// a usage error for bad flags, a platform error when the host lacks the
// runtime.
func (c runtimeChoice) start(ctx context.Context, rootfs, built, store string, s runtimeSettings) (*imageRuntime, error) {
	if c.onDocker() {
		if rootfs != "" {
			return nil, usageError(errors.New("--rootfs: only with --runtime native; with --runtime " + c.name + " give --image NAME or --docker-image REF"))
		}
		return startDockerImage(ctx, c, built, store, s)
	}
	return startNativeImage(rootfs, built, store, s)
}

// image is the service.Image of rt named name.
func (rt *imageRuntime) image(name string) service.Image {
	img := service.Image{Name: name, Digest: rt.digest, Runtime: rt.Runtime, Hints: rt.hints}
	if c, ok := rt.hints.(service.Contents); ok { // the modules it holds, as its hints find them
		img.Contents = c
	}
	return img
}
