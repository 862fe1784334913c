#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh), then runs `go vet`, staticcheck,
# the TypeScript SDK's OpenAPI drift check, every test (the Python and
# TypeScript SDKs' suites run inside e2e's TestPythonSDK and
# TestTypeScriptSDK, against a real server) and the race tests.
# The sandbox tests need root; setup.sh refuses to go on without it.
# Each `go test` runs with -json through cmd/testreport, which shows what
# go test shows (the failing tests' output, the ok and FAIL lines), then
# every skipped test with its reason and the counts; it fails the step on
# a skip that scripts/skips.allow does not permit, since setup.sh met every
# need a test has. The last line adds up the counts of every step:
#   test: 1234 passed, 0 failed, 1 skipped
#
#   scripts/test.sh           vet, staticcheck, tests, race tests
#   scripts/test.sh --bench   ... + the benchmarks (about 15 minutes more)
#   scripts/test.sh --soak    ... + the API soak: 3 000 mixed requests, against one
#                             server and against three cluster nodes (a few minutes each)
#
# Exits non-zero if any step fails; every step runs regardless, so one
# failure does not hide another.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bench=false
soak=false
for arg in "$@"; do
	case $arg in
	--bench) bench=true ;;
	--soak) soak=true ;;
	-h | --help)
		sed -n '2,/^set -/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "test: unknown argument $arg (want --bench or --soak)" >&2
		exit 2
		;;
	esac
done

tmp=$(mktemp -d)
# setup.sh starts dockerd when none answers (scripts/dockerd.sh) and writes
# its pid here: the daemon this run started, and only that one, is stopped
# when it ends.
export CRUCIBLE_DOCKERD_PIDFILE=$tmp/dockerd.pid
stop_dockerd() {
	local pid
	[[ -s $CRUCIBLE_DOCKERD_PIDFILE ]] || return 0
	pid=$(cat "$CRUCIBLE_DOCKERD_PIDFILE")
	kill "$pid" 2>/dev/null || return 0
	for _ in $(seq 40); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.5
	done
	echo "test: dockerd (pid $pid) did not stop within 20 s of SIGTERM" >&2
}
trap 'stop_dockerd; rm -rf "$tmp"' EXIT
bash scripts/setup.sh
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
# Test binaries are built as bin/crucible is: static (see setup.sh).
export CGO_ENABLED=0

failed=()
go build -o "$tmp/testreport" ./cmd/testreport
tally=$tmp/tally
: >"$tally"
# gotest ARGS...: go test -json ARGS, reported by cmd/testreport.
gotest() {
	go test -json "$@" | "$tmp/testreport" -allow scripts/skips.allow -name "go test" -tally "$tally"
}
# racetest ARGS...: gotest -race ARGS (the race detector needs cgo).
racetest() {
	CGO_ENABLED=1 gotest -race "$@"
}
# step NAME CMD...: runs CMD with its output shown, and records a failure.
step() {
	local name=$1 arg shown=()
	shift
	for arg; do # quote the arguments that need it, for display
		if [[ $arg =~ ^[A-Za-z0-9_./=:-]+$ ]]; then shown+=("$arg"); else shown+=("'$arg'"); fi
	done
	printf '\n== %s\n$ %s\n' "$name" "${shown[*]}"
	local started=$SECONDS
	if ! "$@" </dev/null; then
		failed+=("$name")
	fi
	# Each step's time, so that what makes the run long can be seen (the
	# whole run is kept under 30 minutes on a 2-core machine).
	printf -- '-- %s: %d s\n' "$name" $((SECONDS - started))
}

# Tests build as bin/crucible does, with crucible-init embedded (setup.sh
# built it); the fallback, a crucible that re-executes itself as init, is
# vetted and runs the conformance suite.
step "go vet" go vet -tags crucible_initexe ./...
step "staticcheck" "$(go env GOPATH)/bin/staticcheck" -tags crucible_initexe ./...
step "go vet (no crucible-init)" go vet ./sandbox/linux/... ./cmd/...
# The binary for macOS and Windows: the docker and gvisor runtimes and the
# clients, without the native runtime (Linux-only files). Built, not run.
for target in darwin/amd64 darwin/arm64 windows/amd64; do
	step "go build $target" env GOOS="${target%/*}" GOARCH="${target#*/}" go build -o /dev/null ./cmd/crucible
done
# The web UI's headless Chromium fails a page's loads with
# net::ERR_NETWORK_CHANGED when an address changes in its network namespace,
# as the sandbox and egress tests of other packages do while they run beside
# it: e2e's browser tests (TestUI..., the sandbox's TestUIDAllocator... are
# not theirs) run in a step of their own, after every other package.
browser='^TestUI[^D]'
# The TypeScript SDK's wire types are generated from server/openapi.json
# (openapi-typescript) and committed: a route or type changed without
# regenerating them (cd sdk/typescript && npm run gen) fails here.
step "TypeScript SDK types (OpenAPI drift)" npm run --prefix sdk/typescript --silent check-drift
# The sandbox runtime's own tests (./sandbox/linux/...) run once, under the
# race detector (its step below): the same tests, with races checked, and
# a run of them without it would add about two minutes on 2 cores.
mapfile -t packages < <(go list ./... | grep -v '/sandbox/linux\(/\|$\)')
step "go test" gotest -tags crucible_initexe -count=1 -timeout 20m -skip "$browser" "${packages[@]}"
step "go test (browser)" gotest -tags crucible_initexe -count=1 -timeout 10m -run "$browser" ./e2e/
step "go test (no crucible-init)" gotest -count=1 -timeout 10m -run '^(TestConformance|TestSelfWithoutEmbedded)$' ./sandbox/linux/...
# The race detector (it needs cgo) on every package with goroutines or
# state shared between them: the pipeline, the transports and the CLI, the
# stores, the agents, the cluster's heartbeats and forwarding, the egress
# proxy (./policy/... : ./policy/ alone is not its subpackages), the
# sandbox runtime. Not e2e, whose goroutines only
# read the output of a crucible built without it. Measured on a 2-core
# machine: the sandbox runtime's tests take about 250 s under it (190 s
# without), the CLI's 130 s (35 s), the MCP transport's, the analyst's,
# the eval's, the hints' and the egress proxy's together 70 s (30 s).
# Two steps: in one, the sandbox runtime's tests beside the CLI's saved
# 15 s of 578 and starved a timed CLI test of CPU (a node start that got
# 20 ms of CPU in 5 s).
step "go test -race" racetest -tags crucible_initexe -count=1 -timeout 15m \
	./api/... ./service/... ./server/... ./store/... ./policy/... ./client/... ./agent/... ./llm/... \
	./mcpserver/... ./analyst/... ./eval/... ./hint/... ./cluster/... ./cmd/... ./sandbox/
step "go test -race (sandbox)" racetest -tags crucible_initexe -count=1 -timeout 20m ./sandbox/linux/...
if $soak; then
	step "API soak" gotest -tags crucible_initexe -count=1 -timeout 30m -run '^TestSoak$' ./e2e/ -soak
	step "API soak, cluster" gotest -tags crucible_initexe -count=1 -timeout 30m -run '^TestSoakCluster$' ./e2e/ -soak-cluster
fi
if $bench; then
	step "benchmarks" go test -tags crucible_initexe -run '^$' -bench . -benchtime 100x ./sandbox/linux/
	step "eval benchmark" go test -tags crucible_initexe -run '^$' -bench Canonical -benchtime 3x ./eval/
	step "CLI benchmark" go test -tags crucible_initexe -run '^$' -bench CLIRunPrint1 -benchtime 50x ./cmd/crucible/
	step "agent benchmark" go test -tags crucible_initexe -run '^$' -bench LoopOverhead -benchtime 200x ./agent/
	step "API benchmark" go test -tags crucible_initexe -run '^$' -bench APIOverhead -benchtime 150x ./server/
	step "analyst benchmark" go test -tags crucible_initexe -run '^$' -bench Profile50MB -benchtime 3x ./analyst/
	step "analyst follow-up benchmark" go test -tags crucible_initexe -run '^$' -bench FollowUpOverhead -benchtime 100x ./analyst/
	step "analysis API benchmark" go test -tags crucible_initexe -run '^$' -bench AnalysisCreate -benchtime 20x ./server/
	step "API throughput" bin/crucible bench api --duration 30s --concurrency 2,8,32
	step "E2B SDK benchmark" go test -tags crucible_initexe -count=1 -timeout 30m -v -run '^TestE2BBench$' ./e2e/ -e2b-bench
	step "SDK benchmark" go test -tags crucible_initexe -count=1 -timeout 30m -v -run '^TestSDKBench$' ./e2e/ -sdk-bench
fi

echo
status=0
if ((${#failed[@]})); then
	echo "test: FAILED: ${failed[*]}"
	status=1
else
	echo "test: every step passed"
fi
# The counts of every go test step (a test the race steps run again counts
# again), in the line CI reads last.
awk '{p += $1; f += $2; s += $3; u += $4}
	END {printf "test: %d passed, %d failed, %d skipped%s\n", p, f, s, (u ? sprintf(" (%d unexpected)", u) : "")}' "$tally"
exit $status
