#!/usr/bin/env bash
# Makes Docker Engine and gVisor usable by the docker and gvisor runtimes
# (package sandbox/docker), idempotently; scripts/setup.sh runs it:
#   1. installs Debian's docker.io and runsc, only if missing,
#   2. registers runsc as the runtime "runsc" in /etc/docker/daemon.json,
#      merged into the file's other settings, never replacing them,
#   3. starts dockerd when no daemon answers on /var/run/docker.sock,
#      without the bridge and iptables rules (every sandbox runs with
#      network "none"), logging to /var/log/crucible-dockerd.log, and waits
#      (at most 30 s) for it to answer. Its pid goes to
#      $CRUCIBLE_DOCKERD_PIDFILE when set, so that the caller that asked can
#      stop the daemon it started, and only that one (scripts/test.sh does).
# A daemon already running keeps running as it is; if daemon.json gained
# runsc while it ran, it is told to reload (SIGHUP), which registers the
# runtime without a restart.
# Prints one line, what it found or did.
set -euo pipefail

daemon_json=/etc/docker/daemon.json
sock=/var/run/docker.sock
dlog=/var/log/crucible-dockerd.log

# 1. packages
missing=()
for p in docker.io runsc; do
	if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >/dev/null
	apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ -x /usr/bin/runsc && -x /usr/sbin/dockerd ]] || { echo "dockerd.sh: /usr/sbin/dockerd or /usr/bin/runsc missing after install" >&2; exit 1; }

# 2. runsc in daemon.json. --network=none: gVisor's own network stack is
# off, the sandboxes have no network; --oci-seccomp: runsc applies the
# container's seccomp profile inside the sandbox too (it ignores it
# otherwise), so a gvisor run is held to the same system-call policy.
mkdir -p "$(dirname "$daemon_json")"
changed=$(python3 - "$daemon_json" <<'PY'
import json, os, sys
path = sys.argv[1]
cfg = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        cfg = json.load(f)
want = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp"]}
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

# 3. the daemon
answers() { timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if answers; then
	if [[ $changed == yes ]]; then
		pid=$(pgrep -o -x dockerd || true)
		[[ -n $pid ]] && kill -HUP "$pid"
		sleep 1
	fi
	echo "dockerd running (server $(docker version --format '{{.Server.Version}}')); runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
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
		echo "started dockerd (pid $pid, log $dlog, server $(docker version --format '{{.Server.Version}}')); runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}')"
		exit 0
	fi
	kill -0 "$pid" 2>/dev/null || { echo "dockerd exited at start; the end of $dlog:" >&2; tail -n 20 "$dlog" >&2; exit 1; }
	sleep 0.5
done
echo "dockerd (pid $pid) did not answer on $sock within 30 s; the end of $dlog:" >&2
tail -n 20 "$dlog" >&2
exit 1
