// The tests of this package run the docker and gvisor runtimes against a
// Docker daemon; they are part of scripts/test.sh's `go test ./...`. A host
// without the daemon skips them, and fails them under CI (testenv.Docker),
// where the setup script starts one.
package docker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/docker"
)

// imported imports the datascience image into Docker once per test binary
// (once per image digest on the daemon: a later binary finds it there).
var imported struct {
	once sync.Once
	ref  string
	dig  string
	err  error
}

// newRuntime returns a runtime of the OCI runtime oci on the datascience
// image, imported into Docker if it is not there yet. A host without the
// daemon, the runtime or the image stops t (a failure under CI).
func newRuntime(t testing.TB, oci string) *docker.Runtime {
	t.Helper()
	testenv.Root(t)
	testenv.Docker(t)
	img := testenv.Image(t, "datascience")
	ctx := context.Background()
	imported.once.Do(func() {
		cli, err := docker.Connect(ctx, "")
		if err != nil {
			imported.err = err
			return
		}
		defer cli.Close()
		imported.ref, imported.err = docker.ImportImage(ctx, cli, img.Name, img.Digest, img.RootFS)
		imported.dig = img.Digest
	})
	if imported.err != nil {
		t.Fatalf("import the datascience image into Docker: %v", imported.err)
	}
	rt, err := docker.New(ctx, docker.Options{Image: imported.ref, ImageDigest: imported.dig, OCIRuntime: oci})
	if errors.Is(err, docker.ErrUnavailable) {
		testenv.DockerUnavailable(t, err)
	}
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	return rt
}

// runtimes are the two OCI runtimes the package runs with.
var runtimes = []struct{ name, oci string }{{"docker", docker.RuncRuntime}, {"gvisor", docker.GVisorRuntime}}

// TestRunBasics runs an ordinary program, a failing one, stdin, input
// files and an artifact through each runtime.
func TestRunBasics(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			for _, tc := range []struct {
				name   string
				req    sandbox.Request
				status sandbox.Status
				stdout string
			}{
				{"print", sandbox.Request{Language: sandbox.Python, Code: "print(1)"}, sandbox.StatusOK, "1\n"},
				{"stdin", sandbox.Request{Language: sandbox.Python, Code: "import sys; print(sys.stdin.read().upper())", Stdin: sandbox.Data("abc")}, sandbox.StatusOK, "ABC\n"},
				{"files", sandbox.Request{Language: sandbox.Bash, Code: "cat d/in.txt; echo out > out.txt",
					Files: []sandbox.File{{Name: "d/in.txt", Content: sandbox.Data("hello\n")}}}, sandbox.StatusOK, "hello\n"},
				{"javascript", sandbox.Request{Language: sandbox.JavaScript, Code: "console.log(6*7)"}, sandbox.StatusOK, "42\n"},
				{"error", sandbox.Request{Language: sandbox.Python, Code: "x = 1\nraise ValueError('bad')"}, sandbox.StatusError, ""},
				{"timeout", sandbox.Request{Language: sandbox.Python, Code: "while True: pass", Limits: sandbox.Limits{WallTimeMS: 1000, CPUTimeMS: 10000}}, sandbox.StatusTimeout, ""},
				{"output", sandbox.Request{Language: sandbox.Python, Code: "while True: print('x'*1000)", Limits: sandbox.Limits{OutputBytes: 10000}}, sandbox.StatusOutputLimit, ""},
				{"memory", sandbox.Request{Language: sandbox.Python, Code: "b = []\nwhile True: b.append(bytearray(1<<20))", Limits: sandbox.Limits{MemoryBytes: 64 << 20}}, sandbox.StatusMemoryLimit, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					start := time.Now()
					res, err := rt.Run(ctx, tc.req)
					t.Logf("%s in %s: status %s reason %q exit %d signal %q stderr %q artifacts %d metrics %+v",
						tc.name, time.Since(start).Round(time.Millisecond), res.Status, res.Reason, res.ExitCode, res.Signal, clip(res.Stderr), len(res.Artifacts), res.Metrics)
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.Status != tc.status {
						t.Errorf("status %s, want %s", res.Status, tc.status)
					}
					if tc.stdout != "" && string(res.Stdout) != tc.stdout {
						t.Errorf("stdout %q, want %q", res.Stdout, tc.stdout)
					}
					switch tc.name {
					case "files":
						if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "out.txt" || string(res.Artifacts[0].Content) != "out\n" {
							t.Errorf("artifacts %+v, want out.txt alone holding \"out\\n\"", res.Artifacts)
						}
					case "error":
						if res.Error == nil || res.Error.Type != "ValueError" || res.Error.Line != 2 {
							t.Errorf("error %+v, want ValueError at line 2", res.Error)
						}
					case "output":
						if int64(len(res.Stdout)) != 10000 || !res.StdoutTruncated {
							t.Errorf("stdout %d bytes (truncated %v), want 10000, truncated", len(res.Stdout), res.StdoutTruncated)
						}
					}
				})
			}
		})
	}
}

func clip(b []byte) string {
	if len(b) > 500 {
		return string(b[:500]) + "..."
	}
	return string(b)
}
