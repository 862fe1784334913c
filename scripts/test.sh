#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh), then runs `go vet` and every test.
# The sandbox tests need root; setup.sh refuses to go on without it.
#
#   scripts/test.sh           vet + tests
#   scripts/test.sh --bench   vet + tests + the benchmarks (about 15 minutes more)
#
# Exits non-zero if any step fails; every step runs regardless, so one
# failure does not hide another.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bench=false
for arg in "$@"; do
	case $arg in
	--bench) bench=true ;;
	-h | --help)
		sed -n '2,9s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "test: unknown argument $arg (want --bench)" >&2
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
step "go vet (no crucible-init)" go vet ./sandbox/linux/... ./cmd/...
step "go test" go test -tags crucible_initexe -count=1 -timeout 20m ./...
step "go test (no crucible-init)" go test -count=1 -timeout 10m -run '^(TestConformance|TestSelfWithoutEmbedded)$' ./sandbox/linux/...
if $bench; then
	step "benchmarks" go test -tags crucible_initexe -run '^$' -bench . -benchtime 20x ./sandbox/linux/
	step "eval benchmark" go test -tags crucible_initexe -run '^$' -bench Canonical -benchtime 2x ./eval/
	step "agent benchmark" go test -tags crucible_initexe -run '^$' -bench LoopOverhead -benchtime 200x ./agent/
	step "API benchmark" go test -tags crucible_initexe -run '^$' -bench APIOverhead -benchtime 40x ./server/
	step "API throughput" bin/crucible bench api --duration 30s --concurrency 2,8,32
fi

echo
if ((${#failed[@]})); then
	echo "test: FAILED: ${failed[*]}"
	exit 1
fi
echo "test: all passed"
