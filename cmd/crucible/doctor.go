package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// exitRuntimeMissing is crucible doctor's exit code when the runtime it
// was asked about (or, without --runtime, every runtime) is missing on
// this host (EX_UNAVAILABLE).
const exitRuntimeMissing = 69

// runtimeCheck is what crucible doctor found of one runtime.
type runtimeCheck struct {
	// Name is the runtime's, as --runtime names it.
	Name string
	// OK says the host offers it.
	OK bool
	// Found lists what is there (a version, the kernel's features).
	Found []string
	// Missing lists what is not, and Fix the commands that get it.
	Missing []string
	Fix     []string
}

func newDoctorCommand() *cobra.Command {
	var only string
	cmd := &cobra.Command{
		Use: "doctor [--runtime RUNTIME]",
		Example: `  crucible doctor
  crucible doctor --runtime docker && crucible serve --runtime docker`,
		Short: "Say which sandbox runtimes this host offers, and what the others lack",
		Long: `Check which runtimes --runtime can choose on this host: ` + runtimesHelp() + `.

native needs Linux, root, the kernel's namespaces, cgroups (v1 or v2) and
seccomp; docker a Docker daemon that answers; gvisor that daemon with gVisor's
runsc registered as the runtime "runsc". For each runtime missing something,
doctor says what and the command that fixes it.

With --runtime, doctor checks that runtime alone and exits ` + fmt.Sprint(exitRuntimeMissing) + ` when it is
missing; without, it checks them all and exits ` + fmt.Sprint(exitRuntimeMissing) + ` when none is there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return doctor(cmd.Context(), cmd.OutOrStdout(), only)
		},
	}
	cmd.Flags().StringVar(&only, "runtime", "", "check only `RUNTIME` (native, docker or gvisor)")
	return cmd
}

// doctor checks the runtimes (only, if set) and prints what it found to
// w.
func doctor(ctx context.Context, w io.Writer, only string) error {
	if only != "" {
		if err := checkRuntimeName(only); err != nil {
			return usageError(err)
		}
	}
	var checks []runtimeCheck
	for _, name := range []string{runtimeNative, runtimeDocker, runtimeGVisor} {
		if only != "" && name != only {
			continue
		}
		switch name {
		case runtimeNative:
			checks = append(checks, checkNative())
		default:
			checks = append(checks, checkDocker(ctx, name))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	anyOK := false
	for _, c := range checks {
		state := "ok"
		if !c.OK {
			state = "missing"
		}
		anyOK = anyOK || c.OK
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, state, strings.Join(c.Found, "; "))
		for _, m := range c.Missing {
			fmt.Fprintf(tw, "\t\tmissing: %s\n", m)
		}
		for _, f := range c.Fix {
			fmt.Fprintf(tw, "\t\tfix: %s\n", f)
		}
	}
	if err := tw.Flush(); err != nil {
		return platformError(err)
	}
	if !anyOK {
		return exitCodeError(exitRuntimeMissing)
	}
	return nil
}

// dockerFix is how to get a Docker daemon with gVisor registered.
const dockerFix = "as root: scripts/setup.sh (it installs docker.io and runsc, registers runsc in /etc/docker/daemon.json and starts dockerd: scripts/dockerd.sh); or install Docker Engine (Docker Desktop on macOS and Windows) and start it"

// gvisorFix is how to register gVisor's runsc with a running daemon.
const gvisorFix = `as root: scripts/dockerd.sh (it builds gVisor's runsc pinned by module version, registers it in /etc/docker/daemon.json as {"runtimes": {"runsc": {"path": "/usr/local/lib/crucible/runsc/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp", "--directfs=false"]}}} and reloads dockerd); Debian's runsc 20221219 does not apply the seccomp profile to the processes docker exec starts`

// checkDocker checks the docker runtime, or with name gvisor, the docker
// runtime with runsc registered.
func checkDocker(ctx context.Context, name string) runtimeCheck {
	c := runtimeCheck{Name: name}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		c.Missing, c.Fix = []string{"a Docker daemon that answers: " + err.Error()}, []string{dockerFix}
		return c
	}
	defer cli.Close()
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		c.Missing, c.Fix = []string{"the Docker daemon's version: " + err.Error()}, []string{dockerFix}
		return c
	}
	c.Found = append(c.Found, fmt.Sprintf("Docker Engine %s (API %s) at %s", v.Version, v.APIVersion, cli.DaemonHost()))
	info, err := cli.Info(ctx)
	if err != nil {
		c.Missing, c.Fix = []string{"the Docker daemon's configuration: " + err.Error()}, []string{dockerFix}
		return c
	}
	if name == runtimeDocker {
		if info.CgroupVersion == "1" && os.Geteuid() != 0 {
			// sandbox/docker/sockmem.go: runc ignores the socket-buffer
			// limit, so the runtime writes each container's
			// memory.kmem.tcp itself, which only root can.
			c.Missing = []string{"root on this host: its daemon's containers are in cgroup v1, where Crucible writes each container's socket-buffer limit (memory.kmem.tcp) itself"}
			c.Fix = []string{"run Crucible as root here, or use a host with cgroup v2 (there the memory limit covers socket buffers), or --runtime gvisor"}
			return c
		}
		c.OK = true
		return c
	}
	rt, ok := info.Runtimes[docker.GVisorRuntime]
	if !ok {
		c.Missing, c.Fix = []string{`gVisor's runsc registered with the daemon as the runtime "runsc"`}, []string{gvisorFix}
		return c
	}
	c.OK = true
	c.Found = append(c.Found, "runsc at "+rt.Path+runscVersion(ctx, rt.Path))
	return c
}

// runscVersion is ", " and the first line of `runsc --version` at path,
// when this host can run it (the daemon may run elsewhere: then "").
func runscVersion(ctx context.Context, path string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if strings.Contains(line, "VERSION_MISSING") {
		// A runsc built with go install says no version of its own; its
		// module's is in the binary.
		if bi, err := buildinfo.ReadFile(path); err == nil && bi.Main.Version != "" {
			line = "runsc " + bi.Main.Path + "@" + bi.Main.Version
		}
	}
	return ", " + line
}
