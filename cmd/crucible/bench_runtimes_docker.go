//go:build linux

package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// dockerRunProfile is the seeds' production profile of `docker run`, the
// baseline users know (issue 26): no network, every capability dropped,
// no-new-privileges, a read-only root, 64 processes, 256 MiB, user nobody.
const dockerRunProfile = "--network none --cap-drop ALL --security-opt no-new-privileges --read-only --pids-limit 64 --memory 256m -u 65534"

// dockerPool asks o for the container pool the pooled docker and gvisor
// rows take from, one container (Options.Prestart), and returns how to
// wait until rt's pool is full again and at rest.
func dockerPool(o *docker.Options) func(context.Context, *docker.Runtime) {
	o.Prestart = 1
	return func(ctx context.Context, rt *docker.Runtime) { _ = rt.SettlePool(ctx) }
}

// dockerImage imports the image into Docker the first time it is asked
// (a no-op when the daemon has it), and returns its reference.
func (e *benchEnv) dockerImage(ctx context.Context) (string, error) {
	if !e.dockerTried {
		e.dockerTried = true
		cli, err := docker.Connect(ctx, "")
		if err != nil {
			e.dockerErr = err
			return "", err
		}
		defer cli.Close()
		e.dockerRef, e.dockerErr = docker.ImportImage(ctx, cli, e.img.Name, e.img.Digest, e.img.RootFS)
	}
	return e.dockerRef, e.dockerErr
}

// dockerRuntime starts the docker or gvisor runtime (name) on the image,
// with o adjusted.
func dockerRuntime(ctx context.Context, e *benchEnv, name string, adjust func(*docker.Options)) (*docker.Runtime, error) {
	ref, err := e.dockerImage(ctx)
	if err != nil {
		return nil, err
	}
	o := docker.Options{Image: ref, ImageDigest: e.img.Digest, Env: e.img.Manifest.Env}
	if name == runtimeGVisor {
		o.OCIRuntime = docker.GVisorRuntime
	}
	if adjust != nil {
		adjust(&o)
	}
	return docker.New(ctx, o)
}

// openDockerRun is `docker run --rm` with the production profile, under
// gVisor for name gvisor, through the docker CLI on PATH.
func openDockerRun(name string) func(context.Context, *benchEnv) (*benchSubject, error) {
	return func(ctx context.Context, e *benchEnv) (*benchSubject, error) {
		// The runtime's own checks say what the host lacks: the daemon,
		// runsc registered, the image.
		rt, err := dockerRuntime(ctx, e, name, nil)
		if err != nil {
			return nil, err
		}
		rt.Close()
		cli, err := exec.LookPath("docker")
		if err != nil {
			return nil, fmt.Errorf("no docker command: %w", err)
		}
		args := append([]string{"run", "--rm"}, strings.Fields(dockerRunProfile)...)
		if name == runtimeGVisor {
			args = append(args, "--runtime", docker.GVisorRuntime)
		}
		args = append(args, e.dockerRef, "python3", bareCodeFlag[sandbox.Python], e.req.Code)
		return &benchSubject{
			detail: fmt.Sprintf("%s %s %q", cli, strings.Join(args[:len(args)-1], " "), e.req.Code),
			call: func(ctx context.Context) outcome {
				ctx, cancel := context.WithTimeout(ctx, benchRequestTimeout)
				defer cancel()
				return execOutcome(exec.CommandContext(ctx, cli, args...), "docker run", e.want)
			},
			close: func() {},
		}, nil
	}
}

// openDockerCold is the docker or gvisor runtime (name) keeping nothing
// ready: each run creates and starts its container.
func openDockerCold(name string) func(context.Context, *benchEnv) (*benchSubject, error) {
	return func(ctx context.Context, e *benchEnv) (*benchSubject, error) {
		rt, err := dockerRuntime(ctx, e, name, nil)
		if err != nil {
			return nil, err
		}
		return &benchSubject{detail: "a container created for the run", call: directCall(rt, e.req, e.want), close: func() { rt.Close() }}, nil
	}
}

// dockerPooled is the docker or gvisor runtime (name) keeping the
// containers dockerPool asks for.
func dockerPooled(name string) func(context.Context, *benchEnv) (*pooledRuntime, error) {
	return func(ctx context.Context, e *benchEnv) (*pooledRuntime, error) {
		var settle func(context.Context, *docker.Runtime)
		rt, err := dockerRuntime(ctx, e, name, func(o *docker.Options) { settle = dockerPool(o) })
		if err != nil {
			return nil, err
		}
		return &pooledRuntime{rt: rt, detail: "a pre-created container", settle: func(ctx context.Context) { settle(ctx, rt) },
			close: func() { rt.Close() }}, nil
	}
}

// openDockerSession is a cell of a session of the docker or gvisor
// runtime (name), once the runtime has sessions.
func openDockerSession(name string) func(context.Context, *benchEnv) (*benchSubject, error) {
	return func(ctx context.Context, e *benchEnv) (*benchSubject, error) {
		rt, err := dockerRuntime(ctx, e, name, nil)
		if err != nil {
			return nil, err
		}
		sr, ok := any(rt).(sandbox.SessionRuntime)
		if !ok {
			rt.Close()
			return nil, &notMeasuredError{"the " + name + " runtime has no sessions yet"}
		}
		s, err := sessionSubject(ctx, sr, e)
		if err != nil {
			rt.Close()
			return nil, err
		}
		closeSession := s.close
		s.close = func() { closeSession(); rt.Close() }
		return s, nil
	}
}
