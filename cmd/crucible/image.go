package main

import (
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"

	units "github.com/docker/go-units"
	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
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
	var force, verbose bool
	cmd := &cobra.Command{
		Use: "build [--manifest FILE]",
		Example: `  # The curated data-science image (python3, pandas, matplotlib, node, bash)
  crucible image build

  # An image of your own, rebuilt even if up to date, showing each step
  crucible image build --manifest my-image.json --force -v`,
		Short: "Build an image (debootstrap, minbase); only when its manifest changed",
		Long: `Build a root filesystem from the Debian packages a manifest names, with
debootstrap (variant minbase) from the mirror this host's apt uses, and record
the manifest's digest (a later build with the same manifest does nothing) and
the tree's content digest (every run in the image reports it).

Without --manifest, the curated data-science image kept in the repository is
built: python3 with numpy, pandas, matplotlib, scipy, scikit-learn,
statsmodels, seaborn, sympy, networkx, openpyxl and pillow; nodejs; bash and
coreutils.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := image.ParseManifest(image.DefaultManifest)
			if manifest != "" {
				m, err = image.LoadManifest(manifest)
			}
			if err != nil {
				return usageError(err)
			}
			opts := image.BuildOptions{Store: *store, Mirror: mirror, Force: force}
			if verbose {
				opts.Log = os.Stderr
			} else {
				fmt.Fprintf(os.Stderr, "building image %q (a few minutes; --verbose shows the tools' output)\n", m.Name)
			}
			img, built, err := image.Build(cmd.Context(), m, opts)
			if err != nil {
				fmt.Fprintln(os.Stderr, "crucible: image build:", err)
				return exitCodeError(exitInternal)
			}
			state := "up to date"
			if built {
				state = "built"
			}
			fmt.Printf("%s %s: %s, %s, %d files, %s\n", state, img.Name, img.Digest, units.BytesSize(float64(img.SizeBytes)), img.Files, img.RootFS)
			return nil
		},
	}
	cmd.Flags().StringVar(&manifest, "manifest", "", "manifest file (default: the built-in data-science manifest)")
	cmd.Flags().StringVar(&mirror, "mirror", "", "Debian mirror URL (default: the one apt uses on this host)")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild even if the manifest did not change")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show debootstrap's output")
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
				return err
			}
			if jsonOut {
				if images == nil {
					images = []image.Image{}
				}
				return json.NewEncoder(os.Stdout).Encode(images)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSIZE\tFILES\tDIGEST\tBUILT")
			for _, img := range images {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", img.Name, units.BytesSize(float64(img.SizeBytes)), img.Files, img.Digest, img.BuiltAt.Format("2006-01-02 15:04"))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

// runtimeOptions resolves --rootfs and --image into runtime options.
// The image "host" (image.Host) is the host's directories, as no image.
func runtimeOptions(rootfs, imageName, store string) (linux.Options, error) {
	switch {
	case imageName == "":
		return linux.Options{RootFS: rootfs}, nil
	case rootfs != "":
		return linux.Options{}, fmt.Errorf("give --rootfs or --image, not both")
	case imageName == image.Host:
		return linux.Options{}, nil
	}
	img, err := image.Open(store, imageName)
	if err != nil {
		return linux.Options{}, err
	}
	return linux.Options{RootFS: img.RootFS, ImageDigest: img.Digest, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed}, nil
}
