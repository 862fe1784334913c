package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// rootfsImage names the --rootfs directory among the images offered.
const rootfsImage = "rootfs"

// servedImage is an image `crucible serve` offers and its runtime.
type servedImage struct {
	service.Image
	rt *linux.Runtime
}

// imageNames returns the names of the images --image and --rootfs offer,
// the default first: each --image in order ("host" for the host's
// directories), or the --rootfs directory, or else the host's directories
// and, when it is built in store, the data-science image
// (image.ForModels), which the service makes the default of sessions and
// analyses (service.Config.Contents).
func imageNames(images []string, rootfs, store string) ([]string, error) {
	switch {
	case len(images) > 0 && rootfs != "":
		return nil, errors.New("give --rootfs or --image, not both")
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

// startImages starts a runtime for each of the images names (imageNames
// of f's flags), the default first; adjust completes each one's options.
// On an error the runtimes already started are closed.
func startImages(names []string, f *serveFlags, adjust func(*linux.Options)) ([]servedImage, error) {
	var images []servedImage
	for _, name := range names {
		var digest string
		rootfs, built := f.rootfs, name
		if name == image.Host || name == rootfsImage {
			built = ""
		}
		rt, err := startRuntime(rootfs, built, f.store, func(o *linux.Options) {
			adjust(o)
			if o.Logger != nil {
				o.Logger = o.Logger.With(slog.String("image", name))
			}
			digest = o.ImageDigest
		})
		if err != nil {
			closeImages(images)
			return nil, err
		}
		hints := errorHints(rootfs, built, f.store)
		img := service.Image{Name: name, Digest: digest, Runtime: rt, Hints: hints}
		if c, ok := hints.(service.Contents); ok { // the modules it holds, as its hints find them
			img.Contents = c
		}
		images = append(images, servedImage{Image: img, rt: rt})
	}
	return images, nil
}

// closeImages closes the images' runtimes.
func closeImages(images []servedImage) {
	for _, img := range images {
		_ = img.rt.Close()
	}
}

// poolsOf reports the images' pools of ready sandboxes for /metrics:
// "prestart", "warm" and "warm-sessions" for the default image,
// "NAME/prestart", "NAME/warm" and "NAME/warm-sessions" for another.
func poolsOf(images []servedImage) func() map[string]service.PoolStats {
	conv := func(p linux.PoolStats) service.PoolStats {
		return service.PoolStats{Size: p.Size, Ready: p.Ready, Hits: p.Hits, Misses: p.Misses,
			BuildFailures: p.BuildFailures, RecycleErrors: p.RecycleErrors, Retired: p.RetiredBy}
	}
	return func() map[string]service.PoolStats {
		pools := map[string]service.PoolStats{}
		for i, img := range images {
			prefix := img.Name + "/"
			if i == 0 {
				prefix = ""
			}
			pools[prefix+"prestart"], pools[prefix+"warm"] = conv(img.rt.PoolStats()), conv(img.rt.WarmStats())
			pools[prefix+"warm-sessions"] = conv(img.rt.WarmSessionStats())
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
