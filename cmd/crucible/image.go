package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	units "github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
)

func newImageCommand() *cobra.Command {
	var store string
	cmd := &cobra.Command{
		Use: "image",
		Example: `  crucible image build
  crucible image ls`,
		Short: "Build and list sandbox root filesystems made from Debian packages",
	}
	cmd.PersistentFlags().StringVar(&store, "store", image.DefaultStore, "image store directory")
	cmd.AddCommand(newImageBuildCommand(&store), newImageListCommand(&store))
	return cmd
}

func newImageBuildCommand(store *string) *cobra.Command {
	var manifest, mirror string
	var force, verbose, toDocker bool
	cmd := &cobra.Command{
		Use: "build [--manifest FILE]",
		Example: `  # The curated data-science image (python3, pandas, matplotlib, node, bash)
  crucible image build

  # An image of your own, rebuilt even if up to date, with the tools' output
  crucible image build --manifest my-image.json --force -v`,
		Short: "Build an image (debootstrap, minbase); only when its manifest changed",
		Long: `Build a root filesystem from the Debian packages a manifest names, with
debootstrap (variant minbase) from the mirror this host's apt uses, and record
the manifest's digest (a later build with the same manifest does nothing) and
the tree's content digest (every run in the image reports it).

When the image is up to date, it prints one line ("NAME is up to date
(DIGEST, SIZE, FILES, ROOTFS)") and exits at once. Otherwise the build takes a
few minutes: on a terminal a status line shows the elapsed time, the step
(debootstrap, each prepare command, digest, store), the stage debootstrap or
apt reports (retrieving, extracting, unpacking, configuring packages) with its
package count, and the package at hand; when stderr is not a terminal (a CI
log), one plain line per step and stage. --verbose shows the tools' full output
instead (shown inert on a terminal unless --raw-output). A failed build shows
the failing tool's last lines. A build that succeeds prints on stdout "built
NAME in DURATION (DIGEST, SIZE, FILES, ROOTFS)".

When a Docker daemon answers (or, with --docker, necessarily), the image's
tree is then imported into Docker as crucible/NAME:HEX (HEX its digest's), for
--runtime docker and gvisor to run the same bytes, and the Docker image's id
is recorded with the image (crucible image ls shows it): "imported NAME into
Docker as REF (ID)". An image Docker has already is not imported again.

Without --manifest, the curated data-science image kept in the repository is
built: python3 with numpy, pandas, matplotlib, scipy, scikit-learn,
statsmodels, seaborn, sympy, networkx, openpyxl, pillow, pytest and
pytest-timeout; nodejs; bash, coreutils, git and patch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := image.ParseManifest(image.DefaultManifest())
			if manifest != "" {
				m, err = image.LoadManifest(manifest)
			}
			if err != nil {
				return usageError(err)
			}
			view := newBuildView(m.Name, verbose)
			opts := image.BuildOptions{Store: *store, Mirror: mirror, Force: force, Progress: view.update}
			d := newDisplay(cmd)
			if verbose {
				opts.Log = d.stderr
			}
			began := time.Now()
			stop := view.tickEvery(time.Second)
			img, built, err := image.Build(cmd.Context(), m, opts)
			stop()
			view.finish()
			d.stderr.flush()
			if err != nil {
				return platformError(fmt.Errorf("image build: %w", err))
			}
			about := fmt.Sprintf("(%s, %s, %d files, %s)", img.Digest, units.BytesSize(float64(img.SizeBytes)), img.Files, img.RootFS)
			if built {
				fmt.Printf("built %s in %s %s\n", img.Name, time.Since(began).Round(time.Second), about)
			} else {
				fmt.Printf("%s is up to date %s\n", img.Name, about)
			}
			return importBuilt(cmd.Context(), d, img, *store, toDocker)
		},
	}
	addRawOutputFlag(cmd.Flags())
	cmd.Flags().StringVar(&manifest, "manifest", "", "manifest file (default: the built-in data-science manifest)")
	cmd.Flags().StringVar(&mirror, "mirror", "", "Debian mirror URL (default: the one apt uses on this host)")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild even if the manifest did not change")
	cmd.Flags().BoolVar(&toDocker, "docker", false, "import the image into Docker, failing when no daemon answers (by default it is imported when one does)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the build tools' full output (debootstrap, prepare commands) in place of the progress line")
	return cmd
}

func newImageListCommand(store *string) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use: "ls",
		Example: `  crucible image ls
  crucible image ls --json`,
		Aliases: []string{"list"},
		Short:   "List built images with size and digest",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			images, err := image.List(*store)
			if err != nil {
				return platformError(err)
			}
			if jsonOut {
				if images == nil {
					images = []image.Image{}
				}
				return json.NewEncoder(os.Stdout).Encode(images)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSIZE\tFILES\tDIGEST\tBUILT\tDOCKER")
			for _, img := range images {
				inDocker := "-" // not imported (crucible image build, or a first --runtime docker, does)
				if img.Docker != nil {
					inDocker = img.Docker.Ref + " " + img.Docker.ID
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", img.Name, units.BytesSize(float64(img.SizeBytes)), img.Files, img.Digest, img.BuiltAt.Format("2006-01-02 15:04"), inDocker)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

// imageRoot is the root filesystem --rootfs and --image resolve to.
type imageRoot struct {
	// RootFS is its directory, "" for the host's directories.
	RootFS string
	// Digest identifies a built image's content.
	Digest string
	// Env and TmpSeed are the built image's (image.Manifest).
	Env     []string
	TmpSeed string
}

// resolveRoot resolves --rootfs and --image into a root filesystem.
// The image "host" (image.Host) is the host's directories, as no image.
func resolveRoot(rootfs, imageName, store string) (imageRoot, error) {
	switch {
	case imageName == "":
		return imageRoot{RootFS: rootfs}, nil
	case rootfs != "":
		return imageRoot{}, fmt.Errorf("give --rootfs or --image, not both")
	case imageName == image.Host:
		return imageRoot{}, nil
	}
	img, err := image.Open(store, imageName)
	if err != nil {
		return imageRoot{}, err
	}
	return imageRoot{RootFS: img.RootFS, Digest: img.Digest, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed}, nil
}
