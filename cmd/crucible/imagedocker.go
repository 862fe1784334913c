package main

import (
	"context"
	"fmt"

	"github.com/docker/docker/client"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// importImage makes the tree of the built image img of store a Docker
// image of the daemon cli (docker.ImportImage; nothing to do when the
// daemon has it) and records it in the image's metadata
// (image.RecordDocker), where `crucible image ls` shows it. The record is
// best effort: a store this user cannot write (crucible run by another
// user than the one who built it) keeps what it had, and the import
// stands; recordErr says why it failed.
func importImage(ctx context.Context, cli *client.Client, img *image.Image, store string) (d image.DockerImage, recordErr, err error) {
	ref, err := docker.ImportImage(ctx, cli, img.Name, img.Digest, img.RootFS)
	if err != nil {
		return d, nil, err
	}
	info, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return d, nil, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	d = image.DockerImage{Ref: ref, ID: info.ID}
	if img.Docker == nil || *img.Docker != d {
		recordErr = image.RecordDocker(store, img.Name, d)
	}
	return d, recordErr, nil
}

// importBuilt imports the image built into Docker when a daemon answers,
// or, with required (--docker), fails when none does; it says what it
// does on d and stdout (nothing without a daemon: --runtime docker imports
// the image on its first use).
func importBuilt(ctx context.Context, d *display, img *image.Image, store string, required bool) error {
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		if required {
			return platformError(fmt.Errorf("--docker: %w", err))
		}
		return nil // a host without Docker: the native runtime's image only
	}
	defer cli.Close()
	d.say("importing %s into Docker (the docker and gvisor runtimes run it)...", img.Name)
	di, recordErr, err := importImage(ctx, cli, img, store)
	if err != nil {
		return platformError(fmt.Errorf("image build: import into Docker: %w", err))
	}
	if recordErr != nil {
		return platformError(fmt.Errorf("image build: record the Docker image %s: %w", di.Ref, recordErr))
	}
	fmt.Printf("imported %s into Docker as %s (%s)\n", img.Name, di.Ref, di.ID)
	return nil
}
