#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh), then runs `go vet`, staticcheck,
# every test and the race tests.
# The sandbox tests need root; setup.sh refuses to go on without it.
#
#   scripts/test.sh           vet, staticcheck, tests, race tests
#   scripts/test.sh --bench   ... + the benchmarks (about 15 minutes more)
#   scripts/test.sh --soak    ... + the API soak: 3 000 mixed requests (a few minutes)
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

bash scripts/setup.sh
command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
# Test binaries are built as bin/crucible is: static (see setup.sh).
export CGO_ENABLED=0

failed=()
# step NAME CMD...: runs CMD with its output shown, and records a failure.
step() {
	local name=$1 arg shown=()
	shift
	for arg; do # quote the arguments that need it, for display
		if [[ $arg =~ ^[A-Za-z0-9_./=:-]+$ ]]; then shown+=("$arg"); else shown+=("'$arg'"); fi
	done
	printf '\n== %s\n$ %s\n' "$name" "${shown[*]}"
	if ! "$@" </dev/null; then
		failed+=("$name")
	fi
}

# Tests build as bin/crucible does, with crucible-init embedded (setup.sh
# built it); the fallback, a crucible that re-executes itself as init, is
# vetted and runs the conformance suite.
step "go vet" go vet -tags crucible_initexe ./...
step "staticcheck" "$(go env GOPATH)/bin/staticcheck" -tags crucible_initexe ./...
step "go vet (no crucible-init)" go vet ./sandbox/linux/... ./cmd/...
step "go test" go test -tags crucible_initexe -count=1 -timeout 20m ./...
step "go test (no crucible-init)" go test -count=1 -timeout 10m -run '^(TestConformance|TestSelfWithoutEmbedded)$' ./sandbox/linux/...
# The race detector (it needs cgo) on the packages where it is affordable:
# the pipeline, the transports and the stores; the sandbox packages run a
# few hostile programs under it too.
step "go test -race" env CGO_ENABLED=1 go test -race -tags crucible_initexe -count=1 -timeout 15m \
	./api/ ./service/ ./server/ ./store/ ./policy/ ./client/ ./agent/ ./llm/ ./sandbox/
step "go test -race (sandbox)" env CGO_ENABLED=1 go test -race -tags crucible_initexe -count=1 -timeout 10m \
	-run '^(TestConformance/prestart/ForkBomb|TestSessionCloseEndsRunningCell|TestProcessesExactWhileHostIsSlow)' ./sandbox/linux/
if $soak; then
	step "API soak" go test -tags crucible_initexe -count=1 -timeout 30m -run '^TestSoak$' ./e2e/ -soak
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
fi

echo
if ((${#failed[@]})); then
	echo "test: FAILED: ${failed[*]}"
	exit 1
fi
echo "test: all passed"
