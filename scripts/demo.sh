#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh), then runs the example programs in
# examples/ through `crucible run` on the default limits: Python, JavaScript
# and bash programs, a fork bomb that must be stopped by its limits, one
# run printed as the JSON Result object, piped input, output shown live, a
# chart saved by --out, the analyst's profile of a CSV, a session, the
# HTTP API, an MCP client, and the web UI.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh

crucible=bin/crucible
out=$(mktemp)
serve_pid=""
trap 'rm -f "$out"; [[ -z $serve_pid ]] || kill "$serve_pid" 2>/dev/null || true' EXIT

header() { printf '\n=== %s\n$ %s\n' "$1" "$2"; }

# demo TITLE ARGS...: runs `crucible run ARGS...`, which must exit 0.
demo() {
	local title=$1
	shift
	header "$title" "crucible run $*"
	local rc=0
	"$crucible" run "$@" || rc=$?
	if ((rc != 0)); then
		echo "demo: expected exit 0, got $rc" >&2
		exit 1
	fi
}

demo "Python: a data summary with the standard library" examples/hello.py

demo "JavaScript: Fibonacci numbers with BigInt" examples/fib.js

demo "bash: what a program sees from inside the sandbox" \
	--file input/hello.py=examples/hello.py --env GREETING=hello examples/report.sh

# The fork bomb never ends on its own: the pids limit must refuse its forks
# (it prints "fork refused" when that happens), and crucible must stop it
# with a limit and say which through its exit code (124 wall time, 123 CPU
# time, 122 memory, 121 output). Any other code, 0 included, fails the demo.
args=(--pids 16 --timeout 3s examples/hostile_fork_bomb.py)
header "Hostile: a fork bomb under --pids 16 --timeout 3s" "crucible run ${args[*]}"
rc=0
"$crucible" run "${args[@]}" >"$out" 2>&1 || rc=$?
cat "$out"
case $rc in
124) held="the wall-time limit" ;;
123) held="the CPU-time limit" ;;
122) held="the memory limit" ;;
121) held="the output limit" ;;
*)
	echo "demo: the fork bomb should have been stopped by a limit, but crucible exited $rc" >&2
	exit 1
	;;
esac
if ! grep -q 'fork refused' "$out"; then
	echo "demo: the pids limit never refused a fork" >&2
	exit 1
fi
echo "demo: the limits held: forks were refused at the process limit and $held ended the run" \
	"(crucible exit $rc, expected)"

# --json prints only the Result object. This program fails on purpose, so
# the Result carries status "error", exit code 1 and the structured error.
code='temps = [21.5, 23.0, 19.8]
print("mean:", sum(temps) / len(temps))
print("fourth:", temps[3])'
header "The Result object (--json) of a program that raises" "crucible run --json -c '...'"
printf '%s\n' "$code" | sed 's/^/    | /'
rc=0
"$crucible" run --json -c "$code" >"$out" || rc=$?
cat "$out"
/usr/bin/python3 - "$out" "$rc" <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
err = res.get("error") or {}
ok = res["status"] == "error" and res["exit_code"] == 1 and rc == 1 and err.get("type") == "IndexError"
print(f"demo: status={res['status']} exit_code={res['exit_code']} "
      f"error={err.get('type')} at line {err.get('line')} (crucible exit {rc}, expected 1)")
sys.exit(0 if ok else 1)
EOF

# Piped standard input is the program's standard input when the program
# comes from -c or a file (as with python -c).
header "Piped input is the program's standard input" "printf '3\\n1\\n2\\n' | crucible run -c '...'"
printf '3\n1\n2\n' | "$crucible" run -c 'import sys; print(sorted(int(x) for x in sys.stdin))' | tee "$out"
grep -qx '\[1, 2, 3\]' "$out" || { echo "demo: the program did not read the piped input" >&2; exit 1; }

# Output is shown while the program runs: each line is stamped here with
# the time it reached this script, one second apart, not all at the end.
code='import time
for i in range(3):
    print("tick", i)
    time.sleep(1)'
header "Output shows as the program prints it" "crucible run -c '...' | (stamp each line)"
printf '%s\n' "$code" | sed 's/^/    | /'
start=$(date +%s%N)
"$crucible" run -c "$code" | while IFS= read -r line; do
	printf '%d %s\n' $((($(date +%s%N) - start) / 1000000)) "$line"
done | tee "$out" | awk '{ printf "  +%.1fs  %s\n", $1 / 1000, substr($0, index($0, " ") + 1) }'
first=$(head -1 "$out" | cut -d' ' -f1)
last=$(tail -1 "$out" | cut -d' ' -f1)
if ((last - first < 1500)); then
	echo "demo: the lines arrived together (${first} ms, ${last} ms): output was not live" >&2
	exit 1
fi
echo "demo: the first line arrived $(((last - first) / 100))00 ms before the last"

# A pandas chart in the data-science image (built by setup.sh): --out saves
# the PNG the program writes, and the summary line names it.
if "$crucible" image ls | grep -q '^datascience '; then
	header "pandas and matplotlib in the datascience image; the chart saved by --out" \
		"crucible run --image datascience --out crucible-out examples/chart.py"
	rm -f crucible-out/units.png # the demo's own file: saving never replaces one
	"$crucible" run --image datascience --memory 512MiB --timeout 60s --cpu-time 60s \
		--out crucible-out examples/chart.py 2>&1 | tee "$out"
	if ! grep -q 'saved crucible-out/units.png' "$out" || ! [[ -s crucible-out/units.png ]]; then
		echo "demo: the chart was not saved to crucible-out/units.png" >&2
		exit 1
	fi
	echo "demo: chart saved to ./crucible-out/units.png ($(stat -c %s crucible-out/units.png) bytes)"
else
	echo "demo: no datascience image (setup skipped it); skipping the pandas example"
fi

# The data-analysis agent's profile needs no model: a semicolon CSV with
# decimal commas, thousands dots, day-first dates, a stray space and a
# duplicate row, sniffed and profiled in the sandbox.
header "The analyst's profile of a European CSV (no model needed)" "crucible analyst examples/sales.csv"
"$crucible" analyst examples/sales.csv 2>&1 | tee "$out"
for want in 'delimiter ";", decimal ",", thousands "."' '1 duplicate rows' 'from 2024-01-05 00:00:00 to 2024-06-05'; do
	grep -qF "$want" "$out" || { echo "demo: the profile lacks: $want" >&2; exit 1; }
done

# A session: variables persist from one cell to the next.
header "A Python session: cells share their variables" "crucible session < examples/session.py"
"$crucible" session --out "$(mktemp -d)" <examples/session.py | tee "$out"
grep -q 'Out\[3\]: 0.293' "$out" || { echo "demo: the session lost its state" >&2; exit 1; }

# The HTTP service: a run streamed as Server-Sent Events, then its record.
header "The HTTP API: a streamed run and its record" "crucible serve --addr 127.0.0.1:0"
apidir=$(mktemp -d)
"$crucible" serve --addr 127.0.0.1:0 --db "$apidir/runs.db" --prestart 1 2>"$apidir/serve.log" &
serve_pid=$!
port=""
for _ in $(seq 1 300); do
	port=$(grep -o 'addr=[^ ]*' "$apidir/serve.log" | head -1 | sed 's/.*://') || true
	[[ -n $port ]] && break
	sleep 0.1
done
[[ -n $port ]] || { cat "$apidir/serve.log"; echo "demo: the server did not start" >&2; exit 1; }
/usr/bin/python3 - "$port" <<'EOF'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
code = "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.3)\nprint('AWS key AKIAIOSFODNN7EXAMPLE')"
req = urllib.request.Request(base + "/v1/runs?stream=1", json.dumps({"language": "python", "code": code}).encode(),
                             {"Content-Type": "application/json"})
start, event, result = time.monotonic(), None, None
with urllib.request.urlopen(req) as resp:
    for raw in resp:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
            if event in ("stdout", "stderr"):
                print(f"  +{time.monotonic() - start:4.1f}s {event}: {data!r}")
            elif event == "result":
                result = data
rec = json.load(urllib.request.urlopen(f"{base}/v1/runs/{result['id']}"))
print(f"demo: run {rec['id'][:8]}... recorded with status {rec['status']}, {rec['redactions']} secret redacted")
sys.exit(0 if rec["status"] == "ok" and rec["redactions"] == 1 and "AKIA" not in rec["stdout"] else 1)
EOF
kill -TERM "$serve_pid"
wait "$serve_pid"
serve_pid=""
rm -rf "$apidir"

# MCP: the official TypeScript SDK's client starts `crucible mcp` over stdio,
# lists its tools, runs print(6*7), gets a chart back as a PNG image, and
# cancels a run that never ends by itself.
header "MCP: an MCP client drives crucible mcp over stdio" "node tools/mcp-client/client.mjs stdio crucible mcp"
mcpdir=$(mktemp -d)
(cd tools/mcp-client && MCP_CHART=1 node client.mjs stdio "$OLDPWD/$crucible" mcp --image datascience --db "$mcpdir/runs.db") | tee "$out"
grep -q '"stdout":"42\\n"' "$out" || { echo "demo: run_code did not print 42 over MCP" >&2; exit 1; }
grep -q '"images":\["image/png"\]' "$out" || { echo "demo: no chart image over MCP" >&2; exit 1; }
rm -rf "$mcpdir"

# --- The web UI's analyst (issue 15): a sample dataset loaded, its URL printed.
if "$crucible" image ls | grep -q '^datascience '; then
	header "The web UI: the analyst with examples/sales.csv loaded" \
		"crucible serve --image datascience --warm-sessions 1; curl -F datasets=@examples/sales.csv .../v1/analyses"
	# This server is left running for you to open the link; a later demo
	# stops it first (its pid is kept beside its log and database).
	uidir=/tmp/crucible-demo-ui
	if [[ -f $uidir/serve.pid ]]; then
		kill -TERM "$(cat "$uidir/serve.pid")" 2>/dev/null || true
		sleep 1
	fi
	rm -rf "$uidir"
	mkdir -p "$uidir"
	setsid "$crucible" serve --addr 127.0.0.1:0 --db "$uidir/runs.db" --image datascience --warm-sessions 1 \
		</dev/null >/dev/null 2>"$uidir/serve.log" &
	serve_pid=$!
	echo "$serve_pid" >"$uidir/serve.pid"
	port=""
	for _ in $(seq 1 300); do
		port=$(grep -o 'addr=[^ ]*' "$uidir/serve.log" | head -1 | sed 's/.*://') || true
		[[ -n $port ]] && break
		sleep 0.1
	done
	[[ -n $port ]] || { cat "$uidir/serve.log"; echo "demo: the server did not start" >&2; exit 1; }
	curl -sS --fail-with-body "http://127.0.0.1:$port/v1/analyses" -F datasets=@examples/sales.csv >"$uidir/analysis.json" ||
		{ cat "$uidir/analysis.json"; echo "demo: the analysis was not created" >&2; exit 1; }
	id=$(/usr/bin/python3 - "$uidir/analysis.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
p = json.loads(a["profile"]) if isinstance(a["profile"], str) else a["profile"]
t = p["tables"][0]
cols = [c["name"] for c in t.get("column_profiles", [])]
if t["rows"] < 1 or "revenue" not in cols:
    sys.exit(f"demo: the profile of sales.csv is not what was expected: {t['rows']} rows, columns {cols}")
print(f"demo: sales.csv profiled: {t['name']}, {t['rows']} rows x {t['columns']} columns ({', '.join(cols)})", file=sys.stderr)
print(a["id"])
PY
)
	echo "demo: the web UI, with this analysis open: http://127.0.0.1:$port/#/analyses/$id"
	echo "demo: that server keeps running (log $uidir/serve.log; the analysis stays open 15 idle minutes); stop it with: kill $serve_pid"
	serve_pid="" # not stopped on exit
else
	echo "demo: no datascience image (setup skipped it); skipping the web UI's analyst"
fi
# --- end of the web UI's analyst

echo
echo "demo: all examples behaved as expected"
