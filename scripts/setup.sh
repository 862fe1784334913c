#!/usr/bin/env bash
# Sets up this machine to build and run Crucible, idempotently:
#   1. checks that it runs as root (the native sandbox needs it),
#   2. finds Go (on PATH, else /usr/local/go/bin),
#   3. installs the Debian packages the sandboxes use, and chromium, the
#      headless browser the web UI's tests drive, only if missing,
#   4. builds bin/crucible, installs staticcheck, the MCP client's npm
#      packages (tools/mcp-client, npm ci, pinned by its package-lock.json)
#      and E2B's SDKs (tools/e2b-client, likewise), and builds the
#      TypeScript SDK (sdk/typescript: npm ci of its pinned development
#      packages, then its build into dist),
#   5a. Docker and gVisor for the docker and gvisor runtimes: installs
#      docker.io, builds gVisor's runsc pinned by module version (once; about
#      three minutes on empty Go caches), registers it in
#      /etc/docker/daemon.json, and starts dockerd when no daemon answers
#      (see scripts/dockerd.sh); set CRUCIBLE_SKIP_DOCKER=1 to skip it,
#   5b. builds the data-science sandbox image (python3 with pandas, numpy,
#      matplotlib, scipy, ... from Debian) unless it is up to date, and
#      imports it into the daemon that answers; set CRUCIBLE_SKIP_IMAGE=1
#      to skip it,
#   6. finds the shared data sets (HumanEval, DABench) the tests read:
#      $CRUCIBLE_DATASETS, else shared/datasets beside the clone. It cannot
#      fetch them: missing, they are an error when CI is set (the tests that
#      read them would fail), a warning otherwise.
# Every need a test has (package internal/testenv) is met here; under CI a
# test whose need is missing fails instead of skipping.
# Prints one line per step; a failing step prints its output and exits non-zero.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Packages the sandboxes and the scripts need. The sandbox runs
# /usr/bin/python3, /usr/bin/node and /bin/bash from the host, read-only.
# chromium is the browser the web UI's tests drive (e2e/ui_*_test.go);
# iproute2's ip and postgresql's initdb and pg_ctl make the test's own
# network namespaces and PostgreSQL clusters (each test starts its own).
# python3-pytest runs the Python SDK's tests (sdk/python/tests).
# nats-server is the NATS JetStream server the cluster's tests join (cluster/, e2e/cluster_test.go).
# npm (for the MCP clients) is installed below only when no npm is on PATH:
# NodeSource's nodejs package bundles npm and conflicts with Debian's.
APT_PACKAGES=(python3 python3-pytest nodejs bash coreutils procps util-linux ca-certificates debootstrap postgresql gcc libc6-dev chromium curl jq iproute2 nats-server)

step() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# run_quiet LOG CMD...: runs CMD with its output in LOG, printed only on failure.
run_quiet() {
	local log=$1
	shift
	if ! "$@" >"$log" 2>&1 </dev/null; then
		cat "$log" >&2
		return 1
	fi
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# 1. root
if [[ $(id -u) -ne 0 ]]; then
	die "must run as root: the native sandbox creates cgroups and mount namespaces and
       switches programs to an unprivileged user. Re-run as root, e.g.: sudo $0"
fi
step "running as root"

# 2. Go
if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH="/usr/local/go/bin:$PATH"
	else
		die "Go is not installed: no 'go' on PATH and no /usr/local/go/bin/go.
       Install Go 1.26 or later (https://go.dev/doc/install) into /usr/local/go and re-run."
	fi
fi
step "go: $(go version | awk '{print $3}') at $(command -v go)"

# 3. Debian packages
command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian and Ubuntu"
missing=()
for p in "${APT_PACKAGES[@]}"; do
	if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != "install ok installed" ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	step "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	run_quiet "$log" apt-get update || die "apt-get update failed"
	run_quiet "$log" apt-get install -y --no-install-recommends "${missing[@]}" ||
		die "apt-get install ${missing[*]} failed"
else
	step "packages present: ${APT_PACKAGES[*]}"
fi
if ! command -v npm >/dev/null 2>&1; then
	step "installing npm"
	export DEBIAN_FRONTEND=noninteractive
	run_quiet "$log" apt-get update || die "apt-get update failed"
	run_quiet "$log" apt-get install -y --no-install-recommends npm || die "apt-get install npm failed"
fi
for bin in /usr/bin/python3 /usr/bin/node /bin/bash /usr/bin/chromium; do
	[[ -x $bin ]] || die "$bin is missing although its package is installed"
done

# 4. build
# Static binaries: a dynamic one would pay the dynamic loader and libc
# start-up at every sandbox. crucible-init, every sandbox's PID 1, is built
# first and embedded into crucible (build tag crucible_initexe; see package
# sandbox/linux/initexe); it is stripped, as it is copied into memory once
# per server.
build() {
	CGO_ENABLED=0 go build "$@" -ldflags='-s -w' -o sandbox/linux/initexe/crucible-init ./cmd/crucible-init &&
		CGO_ENABLED=0 go build "$@" -tags crucible_initexe -o bin/crucible ./cmd/crucible
}
if ! build >"$log" 2>&1 </dev/null; then
	# A checkout owned by another user makes git refuse to report its
	# status ("dubious ownership"), which fails Go's VCS stamping. The
	# stamp is informational; build without it rather than fail.
	if grep -q 'buildvcs' "$log"; then
		run_quiet "$log" build -buildvcs=false || die "go build failed"
	else
		cat "$log" >&2
		die "go build failed"
	fi
fi
step "built bin/crucible"

# 4b. staticcheck, for scripts/test.sh, from the Go module proxy. Pinned by
# its module version: the proxy may refuse the release name (2026.2.2) that
# a warm module cache still resolves. `staticcheck -version` prints
# "staticcheck 2026.2.2 (0.8.2)".
STATICCHECK_VERSION=v0.8.2
staticcheck=$(go env GOPATH)/bin/staticcheck
if ! "$staticcheck" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; then
	step "installing staticcheck $STATICCHECK_VERSION"
	run_quiet "$log" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ||
		die "go install staticcheck failed"
fi

# 4c. the MCP TypeScript client and conformance runner, pinned in
# tools/mcp-client/package-lock.json, for the MCP tests; npm ci only when
# the lock changed since the last install.
mcpdir=tools/mcp-client
if ! cmp -s "$mcpdir/package-lock.json" "$mcpdir/node_modules/.package-lock.json.installed"; then
	step "installing the MCP client packages (npm ci in $mcpdir)"
	run_quiet "$log" npm ci --prefix "$mcpdir" --no-audit --no-fund || die "npm ci in $mcpdir failed"
	cp "$mcpdir/package-lock.json" "$mcpdir/node_modules/.package-lock.json.installed"
fi

# 4d. E2B's official JavaScript SDKs (e2b, @e2b/code-interpreter), pinned
# in tools/e2b-client/package-lock.json, for the E2B-compatible API's
# tests (package e2bapi); npm ci only when the lock changed.
e2bdir=tools/e2b-client
if ! cmp -s "$e2bdir/package-lock.json" "$e2bdir/node_modules/.package-lock.json.installed"; then
	step "installing E2B's SDKs (npm ci in $e2bdir)"
	run_quiet "$log" npm ci --prefix "$e2bdir" --no-audit --no-fund || die "npm ci in $e2bdir failed"
	cp "$e2bdir/package-lock.json" "$e2bdir/node_modules/.package-lock.json.installed"
fi

# 4e. the TypeScript SDK: its development packages (the compiler, the
# OpenAPI type generator, the OpenAI client its tests drive), pinned in
# sdk/typescript/package-lock.json, npm ci only when the lock changed;
# then its build into sdk/typescript/dist (a few seconds), every time, so
# that the tests never run a stale build.
tsdir=sdk/typescript
if ! cmp -s "$tsdir/package-lock.json" "$tsdir/node_modules/.package-lock.json.installed"; then
	step "installing the TypeScript SDK's development packages (npm ci in $tsdir)"
	run_quiet "$log" npm ci --prefix "$tsdir" --no-audit --no-fund || die "npm ci in $tsdir failed"
	cp "$tsdir/package-lock.json" "$tsdir/node_modules/.package-lock.json.installed"
fi
step "building the TypeScript SDK ($tsdir/dist)"
run_quiet "$log" npm run --prefix "$tsdir" build || die "the TypeScript SDK's build failed"

# 5a. Docker Engine and gVisor (scripts/dockerd.sh): docker.io, runsc built
# at its pinned version and registered in daemon.json, and a daemon
# answering on the socket; before the image, whose build imports it into
# the daemon that now answers.
if [[ ${CRUCIBLE_SKIP_DOCKER:-} == 1 ]]; then
	step "docker skipped (CRUCIBLE_SKIP_DOCKER=1)"
else
	run_quiet "$log" bash scripts/dockerd.sh || die "docker setup failed"
	step "docker: $(tail -n 1 "$log")"
fi

# 5b. image
if [[ ${CRUCIBLE_SKIP_IMAGE:-} == 1 ]]; then
	step "image build skipped (CRUCIBLE_SKIP_IMAGE=1)"
else
	# The first build takes a few minutes (debootstrap from the mirror apt
	# uses); later ones return at once unless the manifest changed.
	run_quiet "$log" bin/crucible image build || die "crucible image build failed"
	step "image: $(tail -n 1 "$log")"
fi

# 6. data sets
datasets=${CRUCIBLE_DATASETS:-$(cd .. && pwd)/shared/datasets}
missing=()
for d in humaneval dabench/tables quixbugs; do
	[[ -d $datasets/$d ]] || missing+=("$datasets/$d")
done
if ((${#missing[@]} == 0)); then
	step "data sets at $datasets"
elif [[ -n ${CI:-} ]]; then
	die "data sets missing: ${missing[*]}. The tests that read them fail under CI: put the shared
       data sets in shared/datasets beside the clone, or set CRUCIBLE_DATASETS to their directory."
else
	step "warning: data sets missing: ${missing[*]}; the tests that read them skip, and scripts/test.sh fails on those skips (set CRUCIBLE_DATASETS)"
fi
