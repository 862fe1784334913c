package sandboxtest

import (
	"regexp"
	"strings"
)

// A container engine on the same host (dockerd with containerd, runc and
// gVisor's runsc) mounts and unmounts in the host's mount namespace
// whenever any of its containers starts or stops, whoever asked for it:
// another test binary, another user, the docker runtime's own runs. A host
// check that compares the mount table before and after a run would then
// fail, or a docker run would be blamed for the engine's bookkeeping. The
// checks therefore leave out exactly the mounts the engine makes for a
// container, each recognised by its mount point AND its filesystem type:
//
//   - a container's root, an overlay at /var/lib/docker/overlay2/<id>/merged,
//     and any mount inside that root (runsc makes a container's volumes
//     and its /etc/hostname there, in the host's namespace);
//   - a volume's tmpfs at /var/lib/docker/volumes/<name>/_data;
//   - a container's /dev/shm at /var/lib/docker/containers/<id>/mounts/shm;
//   - a container's network namespace, an nsfs at /run/docker/netns/<id>;
//   - containerd's own task roots at /run/containerd/io.containerd.runtime.v2.task/...
//
// Why this cannot hide a leak of ours: no Crucible runtime mounts at any of
// these paths (the native runtime's mounts live in each sandbox's own mount
// namespace, staged under its own directories), so a native sandbox's
// leaked mount still shows; a mount of another type at the same place
// (a tmpfs at an overlay's path, say) still shows; and every mount left
// out belongs to one Docker container or volume, which the docker
// runtime's own check (Options.Leftovers: no container or volume its runs
// created may remain) catches directly, instead of through its mounts. A
// daemon with another data root is not recognised at all: its mounts make
// the checks fail, never pass.
var engineMounts = []struct {
	point  *regexp.Regexp
	fstype string
}{
	{regexp.MustCompile(`^/var/lib/docker/overlay2/[0-9a-f]{64}(-init)?/merged$`), "overlay"},
	// Mounts inside a container's root (its volumes, /etc/hostname, ...),
	// which gVisor's runsc makes in the host's namespace: any type.
	{regexp.MustCompile(`^/var/lib/docker/overlay2/[0-9a-f]{64}/merged/.`), ""},
	{regexp.MustCompile(`^/var/lib/docker/volumes/[A-Za-z0-9][A-Za-z0-9_.-]*/_data$`), "tmpfs"},
	{regexp.MustCompile(`^/var/lib/docker/containers/[0-9a-f]{64}/mounts/shm$`), "tmpfs"},
	{regexp.MustCompile(`^(/var)?/run/docker/netns/[0-9a-f]{12}$`), "nsfs"},
	{regexp.MustCompile(`^(/var)?/run/containerd/io\.containerd\.runtime\.v2\.task/[A-Za-z0-9_.-]+/[0-9a-f]{64}/rootfs$`), "overlay"},
}

// EngineMount reports whether line, a line of /proc/self/mountinfo, is a
// mount a container engine makes for one of its containers (see above).
func EngineMount(line string) bool {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return false
	}
	sep := -1
	for i, f := range fields {
		if f == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+1 >= len(fields) {
		return false
	}
	point, fstype := fields[4], fields[sep+1]
	for _, m := range engineMounts {
		if (m.fstype == "" || fstype == m.fstype) && m.point.MatchString(point) {
			return true
		}
	}
	return false
}
