package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// fakeImage adds to store an image called name whose root filesystem holds
// only the directories dirs: enough for the hints, which only look.
func fakeImage(t *testing.T, store, name string, dirs ...string) {
	t.Helper()
	root := filepath.Join(store, name, "rootfs")
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(image.Image{Name: name, RootFS: root, Digest: "sha256:" + name})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, name, "image.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestErrorHints runs programs that try the network, import what the
// host does not have, or start more processes than their limit, in the
// real sandbox on the host's system directories, with a store holding one
// image (web) that has requests and lodash: the summary line, and the
// session's display, give the hint, which says the fix (--allow,
// allow_network; --pids, limits.processes).
func TestErrorHints(t *testing.T) {
	testenv.Root(t)
	store := t.TempDir()
	fakeImage(t, store, "web", "usr/lib/python3/dist-packages/requests", "usr/share/nodejs/lodash")
	const offline = "hint: The network is off in this sandbox by policy: names do not resolve and no host outside can be reached. " +
		`To let a run reach a host: crucible run --allow HOST[:PORT], or "network": {"allow": ["HOST[:PORT]"]} in an API request, ` +
		`on a server whose config sets "allow_network" for the tenant (sessions and analyses have no network). ` +
		"Otherwise give the program its data as input files (the request's files; crucible run --file NAME=PATH)."
	processes := func(limit string) string {
		return "hint: The program could not start another process or thread: the run reached its process limit (" + limit + "; " +
			"processes and threads count together). Start fewer (a smaller pool, fewer workers), or raise the limit: " +
			`crucible run --pids N, or "limits": {"processes": N} in an API request (up to the server's maximum).`
	}
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"import requests", []string{"run", "-c", "import requests"}, "",
			`ModuleNotFoundError: No module named 'requests' (line 1) · hint: Python module "requests" is not installed in the host's system directories, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`},
		{"dns lookup", []string{"run", "-c", "import socket\nsocket.getaddrinfo('example.com', 80)"}, "",
			"socket.gaierror: [Errno -3] Temporary failure in name resolution (line 2) · " + offline},
		{"urlopen", []string{"run", "-c", "import urllib.request\nurllib.request.urlopen('http://example.com')"}, "",
			"urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution> (line 2) · " + offline},
		{"connect", []string{"run", "-c", "import socket\nsocket.create_connection(('93.184.216.34', 80))"}, "",
			"OSError: [Errno 101] Network is unreachable (line 2) · " + offline},
		{"node fetch", []string{"run", "--lang", "javascript", "-c", "fetch('http://example.com').then(r => console.log(r.status))"}, "",
			"TypeError: fetch failed · " + offline},
		{"node require", []string{"run", "--lang", "javascript", "-c", "require('lodash')"}, "",
			`· hint: Node.js package "lodash" is not installed in the host's system directories, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`},
		{"python fork", []string{"run", "--pids", "4", "-c", "import os, time\nfor i in range(10):\n    if os.fork() == 0:\n        time.sleep(2)\n        os._exit(0)"}, "",
			"BlockingIOError: [Errno 11] Resource temporarily unavailable (line 3) · " + processes("4 at once")},
		{"python subprocess", []string{"run", "--pids", "4", "-c", "import subprocess\nps = [subprocess.Popen(['sleep', '2']) for _ in range(10)]"}, "",
			"BlockingIOError: [Errno 11] Resource temporarily unavailable (line 2) · " + processes("4 at once")},
		{"python threads", []string{"run", "--pids", "4", "-c", "import threading, time\nfor _ in range(10):\n    threading.Thread(target=time.sleep, args=(2,)).start()"}, "",
			"RuntimeError: can't start new thread (line 3) · " + processes("4 at once")},
		{"node spawn", []string{"run", "--pids", "8", "--lang", "javascript", "-c", "const cp = require('child_process');\nfor (let i = 0; i < 20; i++) cp.spawn('sleep', ['2']).on('error', e => { throw e; });"}, "",
			"Error: spawn sleep EAGAIN (line 2) · " + processes("8 at once")},
		// bash retries a refused fork until the wall-time limit.
		{"bash fork", []string{"run", "--pids", "4", "--timeout", "2s", "--lang", "bash", "-c", "for i in $(seq 10); do sleep 5 & done; wait"}, "",
			"fork: Resource temporarily unavailable · " + processes("4 at once") + " · wall-time limit of 2s reached"},
		{"session cell", []string{"session", "--out", t.TempDir()}, "import requests\n",
			`hint: Python module "requests" is not installed in the host's system directories, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append(tt.args, "--store", store)...)
			cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
			cmd.Stdin = strings.NewReader(tt.stdin)
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("crucible %q printed:\n%s\nwant it to hold:\n%s", tt.args, out, tt.want)
			}
		})
	}
}
