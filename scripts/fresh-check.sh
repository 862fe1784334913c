#!/usr/bin/env bash
# Runs the README's two commands as a new user's machine would: from a fresh
# clone of this repository's committed HEAD, with an empty $HOME, Go module
# cache, GOPATH, Go build cache and npm cache, so that every tool and module
# the scripts need is fetched through the registries by the versions they pin.
#
#   scripts/fresh-check.sh            both: scripts/demo.sh, then scripts/test.sh
#   scripts/fresh-check.sh --demo     scripts/demo.sh only
#   scripts/fresh-check.sh --test     scripts/test.sh only
#   scripts/fresh-check.sh --keep     keep the temporary folder (printed)
#
# What it cannot empty is the machine itself: Debian packages installed
# earlier and the image store (/var/lib/crucible/images) stay as they are;
# setup.sh installs and builds what is missing of those. Uncommitted changes
# are not part of the clone (a warning says so).
# Prints each command's duration; exits non-zero if either fails.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run_demo=true run_test=true keep=false
for arg in "$@"; do
	case $arg in
	--demo) run_test=false ;;
	--test) run_demo=false ;;
	--keep) keep=true ;;
	-h | --help)
		sed -n '2,/^set -/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	*)
		echo "fresh-check: unknown argument $arg (want --demo, --test or --keep)" >&2
		exit 2
		;;
	esac
done

say() { printf 'fresh-check: %s\n' "$*"; }

if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
	say "warning: uncommitted changes in $repo are not checked (the clone is of HEAD $(git -C "$repo" rev-parse --short HEAD))"
fi

tmp=$(mktemp -d /tmp/crucible-fresh.XXXXXX)
cleanup() {
	# Stop the web UI server the demo leaves running for its user.
	if [[ -f /tmp/crucible-demo-ui/serve.pid ]]; then
		kill -TERM "$(cat /tmp/crucible-demo-ui/serve.pid)" 2>/dev/null || true
	fi
	if $keep; then
		say "kept $tmp"
	else
		chmod -R u+w "$tmp" 2>/dev/null || true # the module cache is read-only
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

git clone -q "$repo" "$tmp/crucible"
# The tests read the public data sets from ../shared beside the clone, as CI
# lays them out.
shared=$(cd "$repo/.." && pwd)/shared
if [[ -d $shared ]]; then
	ln -s "$shared" "$tmp/shared"
else
	say "warning: no $shared: the tests that read its data sets will say so"
fi
mkdir -p "$tmp/home" "$tmp/gopath" "$tmp/gomodcache" "$tmp/gocache" "$tmp/npm-cache"

# The environment of a user who never ran the project: this machine's
# variables (its proxy's certificate settings among them: npm and Go need
# them to reach the registries), but empty caches, and a PATH without the
# directories under the real $HOME (a GOPATH/bin, pyenv shims) that a new
# user would not have. Go is found by setup.sh at /usr/local/go/bin.
path=
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
	[[ -n $d && $d != "$HOME"/* && $d != "$HOME" ]] && path+=${path:+:}$d
done
fresh_env=(
	env
	PATH="$path"
	HOME="$tmp/home"
	GOPATH="$tmp/gopath"
	GOMODCACHE="$tmp/gomodcache"
	GOCACHE="$tmp/gocache"
	GOFLAGS=
	XDG_CACHE_HOME="$tmp/home/.cache"
	npm_config_cache="$tmp/npm-cache"
	CI="${CI:-true}"
)

failed=()
# timed NAME SCRIPT: runs the clone's SCRIPT in the fresh environment.
timed() {
	local name=$1 script=$2 start rc=0
	say "running $script in $tmp/crucible"
	start=$(date +%s)
	(cd "$tmp/crucible" && "${fresh_env[@]}" bash "$script" </dev/null) || rc=$?
	say "$script exited $rc after $(($(date +%s) - start)) s"
	((rc == 0)) || failed+=("$name")
}

$run_demo && timed demo scripts/demo.sh
$run_test && timed test scripts/test.sh

if ((${#failed[@]})); then
	say "FAILED: ${failed[*]}"
	exit 1
fi
say "all passed from a fresh clone with empty caches"
