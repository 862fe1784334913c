#!/usr/bin/env bash
# Makes Docker Engine and gVisor usable by the docker and gvisor runtimes
# (package sandbox/docker), idempotently; scripts/setup.sh runs it:
#   1. installs Debian's docker.io, only if missing,
#   2. builds gVisor's runsc from the Go module proxy, pinned by module
#      version ($runsc_version), into $runsc_bin, only when the binary there
#      is not that version (its build info says which: go version -m),
#   3. registers it as the runtime "runsc" in /etc/docker/daemon.json
#      ($CRUCIBLE_DOCKER_DAEMON_JSON, for a test of this script), merged
#      into the file's other settings, never replacing them,
#   4. starts dockerd when no daemon answers on /var/run/docker.sock,
#      without the bridge and iptables rules (every sandbox runs with
#      network "none"), logging to /var/log/crucible-dockerd.log, and waits
#      (at most 30 s) for it to answer. Its pid goes to
#      $CRUCIBLE_DOCKERD_PIDFILE when set, so that the caller that asked can
#      stop the daemon it started, and only that one (scripts/test.sh does).
# A daemon already running keeps running as it is; if daemon.json changed
# while it ran, it is told to reload (SIGHUP), which registers the runtime
# without a restart. A new runsc binary needs no reload: dockerd starts
# the runtime's binary afresh for every container.
#
# Why not Debian's runsc (0.0~20221219): it does not apply the container's
# seccomp profile to a process started by docker exec, which is how every
# run's program starts (/proc/self/status of the program said Seccomp 0,
# and unshare and ptrace succeeded); the pinned one does (Seccomp 2).
# Prints one line, what it found or did.
set -euo pipefail

daemon_json=${CRUCIBLE_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}
sock=/var/run/docker.sock
dlog=/var/log/crucible-dockerd.log

# 1. packages
if [[ $(dpkg-query -W -f='${Status}' docker.io 2>/dev/null) != "install ok installed" ]]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends docker.io >/dev/null
fi
[[ -x /usr/sbin/dockerd ]] || { echo "dockerd.sh: /usr/sbin/dockerd missing after installing docker.io" >&2; exit 1; }

# 2. runsc, pinned by module version. Built with CGO_ENABLED=0 (a static
# binary, as gVisor ships it) into a temporary directory and moved into
# place, so that a daemon starting a container never finds half a binary.
runsc_module=gvisor.dev/gvisor/runsc
runsc_version=v0.0.0-20260905035102-160fafc42237
runsc_bin=/usr/local/lib/crucible/runsc/runsc
gobin=$(command -v go || echo /usr/local/go/bin/go)
[[ -x $gobin ]] || { echo "dockerd.sh: go is needed to build runsc ($runsc_module@$runsc_version): install Go into /usr/local/go" >&2; exit 1; }
installed_version() { "$gobin" version -m "$runsc_bin" 2>/dev/null | awk '$1 == "mod" && $2 == "gvisor.dev/gvisor" {print $3}'; }
built=no
if [[ $(installed_version) != "$runsc_version" ]]; then
	mkdir -p "$(dirname "$runsc_bin")"
	tmp=$(mktemp -d "$(dirname "$runsc_bin")/build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	if ! CGO_ENABLED=0 GOBIN=$tmp "$gobin" install "$runsc_module@$runsc_version" >"$tmp/log" 2>&1; then
		echo "dockerd.sh: building $runsc_module@$runsc_version failed:" >&2
		tail -n 20 "$tmp/log" >&2
		exit 1
	fi
	mv -f "$tmp/runsc" "$runsc_bin"
	[[ $(installed_version) == "$runsc_version" ]] || { echo "dockerd.sh: $runsc_bin does not say it is $runsc_version after the build" >&2; exit 1; }
	built=yes
fi
runsc_said="runsc $runsc_version ($([[ $built == yes ]] && echo "built now" || echo "installed already") at $runsc_bin)"

# 3. runsc in daemon.json. --network=none: gVisor's own network stack is
# off, the sandboxes have no network; --oci-seccomp: runsc applies the
# container's seccomp profile inside the sandbox too (it ignores it
# otherwise), so a gvisor run is held to the same system-call policy
# (package sandbox/docker adapts the profile to runsc: gvisor_seccomp.go;
# Docker's own default profile would break threads under it, runsc
# answering EPERM for its clone3 rule, whose errnoRet says ENOSYS);
# --directfs=false: the sentry reaches the container's files through the
# gofer, a process of its own, instead of opening host files itself
# ("Sentry runs with higher privileges", runsc says of directfs): a
# compromised sentry then has fewer host system calls within reach, for
# 5% on `import pandas` (1964 ms against 1869, median of 8) and 1.4x on
# small file I/O (below). runsc's other defaults are kept, measured on a
# 2-core host under heavy
# load (load average 15-19; median of 6 interleaved runs: `docker run` of print(1); 20000 stat(2) of
# the image's /usr/lib; 300 write+read of a 4 KiB file in a tmpfs /tmp):
#   this runsc, defaults (platform systrap, directfs, overlay2 root:self)
#                           1077 ms   393 ms   169 ms
#   without --oci-seccomp   1056 ms   484 ms   161 ms  (the filter costs nothing measurable)
#   --platform=ptrace       1015 ms   606 ms   144 ms  (system calls 1.5x slower)
#   --overlay2=none         1013 ms   423 ms   182 ms
#   --directfs=false         949 ms   425 ms   245 ms  (as registered; file I/O 1.4x slower)
#   Debian's 20221219       1057 ms   700 ms   148 ms
#   runc                     831 ms   118 ms    10 ms
# The start alone, 10 interleaved rounds at a lighter moment (median):
# runc 354 ms, Debian's runsc 539 ms, this runsc 478 ms, with
# --platform=ptrace 574 ms.
mkdir -p "$(dirname "$daemon_json")"
changed=$(/usr/bin/python3 - "$daemon_json" "$runsc_bin" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
cfg = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        cfg = json.load(f)
want = {"path": runsc, "runtimeArgs": ["--network=none", "--oci-seccomp", "--directfs=false"]}
runtimes = cfg.setdefault("runtimes", {})
if runtimes.get("runsc") == want:
    print("no")
else:
    runtimes["runsc"] = want
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print("yes")
PY
)

# 4. the daemon
answers() { timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if answers; then
	if [[ $changed == yes ]]; then
		pid=$(pgrep -o -x dockerd || true)
		[[ -n $pid ]] && kill -HUP "$pid"
		sleep 1
	fi
	echo "dockerd running (server $(docker version --format '{{.Server.Version}}')); $runsc_said; runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
	exit 0
fi
# A stale pid file of a daemon that died would make dockerd refuse to start.
if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
	rm -f /var/run/docker.pid
fi
setsid dockerd --iptables=false --ip-forward=false --bridge=none >>"$dlog" 2>&1 </dev/null &
pid=$!
[[ -n ${CRUCIBLE_DOCKERD_PIDFILE:-} ]] && echo "$pid" >"$CRUCIBLE_DOCKERD_PIDFILE"
for _ in $(seq 60); do
	if answers; then
		echo "started dockerd (pid $pid, log $dlog, server $(docker version --format '{{.Server.Version}}')); $runsc_said; runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
		exit 0
	fi
	kill -0 "$pid" 2>/dev/null || { echo "dockerd exited at start; the end of $dlog:" >&2; tail -n 20 "$dlog" >&2; exit 1; }
	sleep 0.5
done
echo "dockerd (pid $pid) did not answer on $sock within 30 s; the end of $dlog:" >&2
tail -n 20 "$dlog" >&2
exit 1
