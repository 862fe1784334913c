package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// rootfsImage names the --rootfs directory among the images offered.
const rootfsImage = "rootfs"

// servedImage is an image `crucible serve` offers and its runtime.
type servedImage struct {
	service.Image
	rt *imageRuntime
}

// imageNames returns the names of the images --image and --rootfs offer,
// the default first: each --image in order ("host" for the host's
// directories), or the --rootfs directory, or else the host's directories
// and, when it is built in store, the data-science image
// (image.ForModels), which the service makes the default of sessions and
// analyses (service.Config.Contents). On Docker (c) the host's
// directories cannot be offered: without --image the data-science image
// alone is, and with --docker-image REF the one image dockerImageName.
func imageNames(images []string, rootfs, store string, c runtimeChoice) ([]string, error) {
	switch {
	case len(images) > 0 && rootfs != "":
		return nil, errors.New("give --rootfs or --image, not both")
	case c.dockerImage != "" && (len(images) > 0 || rootfs != ""):
		return nil, errors.New("give --docker-image or --image and --rootfs, not both")
	case c.dockerImage != "":
		return []string{dockerImageName(c.dockerImage)}, nil
	case c.onDocker() && rootfs != "":
		return nil, fmt.Errorf("--rootfs: only with --runtime native; with --runtime %s give --image NAME or --docker-image REF", c.name)
	case c.onDocker() && len(images) == 0:
		if data := image.ForModels(store); data != image.Host {
			return []string{data}, nil
		}
		return nil, fmt.Errorf("--runtime %s: give --image NAME (a built image; build one with: crucible image build) or --docker-image REF", c.name)
	case rootfs != "":
		return []string{rootfsImage}, nil
	case len(images) == 0:
		if data := image.ForModels(store); data != image.Host {
			return []string{image.Host, data}, nil
		}
		return []string{image.Host}, nil
	}
	for i, name := range images {
		if slices.Contains(images[:i], name) {
			return nil, fmt.Errorf("--image %s is given twice", name)
		}
	}
	return images, nil
}

// dockerImageName is the name the image --docker-image ref is offered
// under: ref in the characters an image name may have (a-z, 0-9, '.',
// '_', '-'), such as python-3.12-slim for python:3.12-slim.
func dockerImageName(ref string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, ref)
	name = strings.TrimLeft(name, "._-")
	if len(name) > 63 {
		name = name[:63]
	}
	if name == "" {
		return "docker"
	}
	return name
}

// startImages starts a runtime of f's kind for each of the images names
// (imageNames of f's flags), the default first, with s's settings; its
// logger's lines name the image. On an error the runtimes already
// started are closed.
func startImages(ctx context.Context, names []string, f *serveFlags, s runtimeSettings) ([]servedImage, error) {
	var images []servedImage
	for _, name := range names {
		rootfs, built := f.rootfs, name
		switch {
		case f.runtime.dockerImage != "":
			built = ""
		case f.runtime.onDocker(): // "host" is refused by name
		case name == image.Host || name == rootfsImage:
			built = ""
		}
		is := s
		if is.logger != nil {
			is.logger = is.logger.With(slog.String("image", name))
		}
		rt, err := f.runtime.start(ctx, rootfs, built, f.store, is)
		if err != nil {
			closeImages(images)
			return nil, err
		}
		images = append(images, servedImage{Image: rt.image(name), rt: rt})
	}
	return images, nil
}

// closeImages closes the images' runtimes.
func closeImages(images []servedImage) {
	for _, img := range images {
		_ = img.rt.close()
	}
}

// poolsOf reports the images' pools of ready sandboxes for /metrics:
// "prestart", "warm" and "warm-sessions" for the default image,
// "NAME/prestart", "NAME/warm" and "NAME/warm-sessions" for another.
func poolsOf(images []servedImage) func() map[string]service.PoolStats {
	return func() map[string]service.PoolStats {
		pools := map[string]service.PoolStats{}
		for i, img := range images {
			if img.rt.pools == nil {
				continue
			}
			prefix := img.Name + "/"
			if i == 0 {
				prefix = ""
			}
			for kind, stats := range img.rt.pools() {
				pools[prefix+kind] = stats
			}
		}
		return pools
	}
}

// serviceConfig is the configuration of a service offering images (the
// first the default), recording runs in st, redacting with redactor and
// logging to log, with conf's settings and model applied: what `crucible
// serve` and `crucible mcp` share.
func serviceConfig(images []servedImage, st store.Store, redactor *policy.Redactor, log *slog.Logger, conf *serveConfig) (service.Config, error) {
	cfg := service.Config{Runtime: images[0].Runtime, ImageName: images[0].Name, ImageDigest: images[0].Digest,
		Store: st, Redactor: redactor, Logger: log, Hints: images[0].Hints, Contents: images[0].Contents}
	for _, img := range images[1:] {
		cfg.Images = append(cfg.Images, img.Image)
	}
	conf.apply(&cfg)
	var err error
	cfg.Agents.Model, err = agentModel(conf.Model, log)
	return cfg, err
}

// logImages logs which image serves what (svc's images, the defaults
// first) and the zygote slots each keeps, and warns when none can hold an
// analysis.
func logImages(log *slog.Logger, svc *service.Service, warm int) {
	list := svc.Images()
	names := make([]string, len(list.Images))
	for i, img := range list.Images {
		names[i] = img.Name
	}
	log.Info("images", "runs", list.Default, "sessions_and_analyses", list.SessionDefault, "offered", strings.Join(names, ","), "warm_per_image", warm)
	if !svc.CanAnalyse() {
		log.Warn("no image offered has pandas: analyses are refused (422 unsuitable_image); " + service.BuildDataImage)
	}
}
