package docker

import (
	"context"
	"os/exec"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestSweep: New removes the containers (running or not) and volumes that
// a process which has ended left, and leaves those of a live process and
// of an owner this host cannot judge (another boot, another machine).
func TestSweep(t *testing.T) {
	testenv.Root(t)
	testenv.Docker(t)
	img := testenv.Image(t, "datascience")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := Connect(ctx, "")
	if err != nil {
		testenv.DockerUnavailable(t, err)
	}
	defer cli.Close()
	ref, err := ImportImage(ctx, cli, img.Name, img.Digest, img.RootFS)
	if err != nil {
		t.Fatal(err)
	}

	// The owner label of a process that has ended.
	p := exec.Command("sleep", "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	dead := ownerOf(p.Process.Pid)
	p.Process.Kill()
	p.Wait()
	if dead == "" || !ownerGone(dead) || ownerGone(selfOwner()) {
		t.Fatalf("owner labels: ended %q gone %v, self %q gone %v", dead, ownerGone(dead), selfOwner(), ownerGone(selfOwner()))
	}

	mk := func(owner string, start bool) string {
		labels := map[string]string{labelKey: "1", ownerKey: owner}
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"sleep", "60"}, Labels: labels, NetworkDisabled: true},
			&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Target: "/work",
				VolumeOptions: &mount.VolumeOptions{Labels: labels, DriverConfig: &mount.Driver{Name: "local",
					Options: map[string]string{"type": "tmpfs", "device": "tmpfs"}}}}}}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		})
		if start {
			if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return c.ID
	}
	deadRunning, deadCreated := mk(dead, true), mk(dead, false)
	live, otherBoot := mk(selfOwner(), false), mk("00000000-0000-0000-0000-000000000000/1/1", false)
	lone, err := cli.VolumeCreate(ctx, volume.CreateOptions{Driver: "local", Labels: map[string]string{labelKey: "1", ownerKey: dead}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.VolumeRemove(context.Background(), lone.Name, true) })
	volumeOf := func(id string) string {
		ins, err := cli.ContainerInspect(ctx, id)
		if err != nil || len(ins.Mounts) != 1 {
			t.Fatalf("inspect %s: %v, mounts %v", id, err, ins.Mounts)
		}
		return ins.Mounts[0].Name
	}
	deadVolume := volumeOf(deadRunning)

	rt, err := New(ctx, Options{Image: ref})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer rt.Close()

	for _, tc := range []struct {
		what, id string
		gone     bool
	}{
		{"the running container of an ended process", deadRunning, true},
		{"the created container of an ended process", deadCreated, true},
		{"this live process's container", live, false},
		{"the container of another boot's process", otherBoot, false},
	} {
		_, err := cli.ContainerInspect(ctx, tc.id)
		if gone := cerrdefs.IsNotFound(err); gone != tc.gone {
			t.Errorf("%s: removed %v, want %v (inspect: %v)", tc.what, gone, tc.gone, err)
		}
	}
	for _, tc := range []struct{ what, name string }{{"the volume of an ended process's container", deadVolume}, {"a lone volume of an ended process", lone.Name}} {
		if _, err := cli.VolumeInspect(ctx, tc.name); !cerrdefs.IsNotFound(err) {
			t.Errorf("%s (%s) is still there: %v", tc.what, tc.name, err)
		}
	}
}
