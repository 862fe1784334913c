package sandboxtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// Ordinary programs: every runtime must run them exactly alike. They go
// through the same host checks as the hostile ones.

func testExitBeforeOutput(t *testing.T, s *suite) {
	tok := newToken()
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "import os\nos._exit(0)\n"}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	if len(res.Stdout) != 0 || len(res.Stderr) != 0 || res.Error != nil {
		t.Errorf("stdout %q, stderr %q, error %+v; want all empty", res.Stdout, res.Stderr, res.Error)
	}
}

func testBinaryStdin(t *testing.T, s *suite) {
	tok := newToken()
	in := make([]byte, 10*sandbox.MiB)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	res, _ := s.run(t, sandbox.Request{
		Language: sandbox.Python,
		Code:     "import sys\nsys.stdout.buffer.write(sys.stdin.buffer.read())\n",
		Stdin:    in,
		Limits:   sandbox.Limits{OutputBytes: 16 * sandbox.MiB, WallTimeMS: 30_000},
	}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	if !bytes.Equal(res.Stdout, in) {
		t.Errorf("stdout (%d bytes) is not byte-identical to stdin (%d bytes)", len(res.Stdout), len(in))
	}
	if res.StdoutTruncated {
		t.Errorf("stdout_truncated set under a 16 MiB limit for 10 MiB")
	}
}

func testUnicode(t *testing.T, s *suite) {
	// Non-ASCII in identifiers, strings and emoji (outside the BMP), and
	// the length in characters, which needs a UTF-8 locale in bash.
	const want = "π ≈ 3.14159\nGrüße, 世界 🌍 — naïve café\n11\n"
	for _, tc := range []struct {
		lang sandbox.Language
		code string
	}{
		{sandbox.Python, `π = 3.14159
名前 = "Grüße, 世界 🌍"
print(f"π ≈ {π}")
print(名前, "— naïve café")
print(len(名前))
`},
		{sandbox.JavaScript, `const π = 3.14159;
const 名前 = "Grüße, 世界 🌍";
console.log("π ≈ " + π);
console.log(名前, "— naïve café");
console.log([...名前].length);
`},
		{sandbox.Bash, `pi="π ≈ 3.14159"
msg="Grüße, 世界 🌍"
echo "$pi"
echo "$msg — naïve café"
echo "${#msg}"
`},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			tok := newToken()
			res, _ := s.run(t, sandbox.Request{Language: tc.lang, Code: tc.code}, watch{token: tok})
			wantExit(t, res, sandbox.StatusOK, 0)
			if got := string(res.Stdout); got != want {
				t.Errorf("stdout = %q, want %q (stderr %q)", got, want, clip(res.Stderr))
			}
		})
	}
}

func testLanguages(t *testing.T, s *suite) {
	for _, tc := range []struct {
		name   string
		lang   sandbox.Language
		code   string
		status sandbox.Status
		exit   int
		stdout string
		err    *sandbox.ExecError // Type, Message (if set) and Line are compared
	}{
		{name: "python print", lang: sandbox.Python, code: "print(6 * 7)\n", status: sandbox.StatusOK, stdout: "42\n"},
		{name: "python exit 3", lang: sandbox.Python, code: "import sys\nprint('before')\nsys.exit(3)\n",
			status: sandbox.StatusError, exit: 3, stdout: "before\n"},
		{name: "python exception", lang: sandbox.Python, code: "def f():\n    raise ValueError('bad value')\n\nf()\n",
			status: sandbox.StatusError, exit: 1, err: &sandbox.ExecError{Type: "ValueError", Message: "bad value", Line: 2}},
		{name: "python syntax error", lang: sandbox.Python, code: "x = 1\nif x\n    print(x)\n",
			status: sandbox.StatusError, exit: 1, err: &sandbox.ExecError{Type: "SyntaxError", Line: 2}},
		{name: "javascript console.log", lang: sandbox.JavaScript, code: "console.log(6 * 7);\n", status: sandbox.StatusOK, stdout: "42\n"},
		{name: "javascript throw", lang: sandbox.JavaScript, code: "const a = 1;\nconsole.log(a);\nthrow new TypeError('boom');\n",
			status: sandbox.StatusError, exit: 1, stdout: "1\n", err: &sandbox.ExecError{Type: "TypeError", Message: "boom", Line: 3}},
		{name: "javascript syntax error", lang: sandbox.JavaScript, code: "const x = 1;\nif (x) {\n  console.log(x));\n}\n",
			status: sandbox.StatusError, exit: 1, err: &sandbox.ExecError{Type: "SyntaxError", Line: 3}},
		{name: "bash arithmetic", lang: sandbox.Bash, code: "echo $((6*7))\n", status: sandbox.StatusOK, stdout: "42\n"},
		{name: "bash exit 3", lang: sandbox.Bash, code: "echo before\nexit 3\n", status: sandbox.StatusError, exit: 3, stdout: "before\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken()
			res, _ := s.run(t, sandbox.Request{Language: tc.lang, Code: tc.code}, watch{token: tok})
			wantExit(t, res, tc.status, tc.exit)
			if tc.stdout != "" || tc.status == sandbox.StatusOK {
				if got := string(res.Stdout); got != tc.stdout {
					t.Errorf("stdout = %q, want %q (stderr %q)", got, tc.stdout, clip(res.Stderr))
				}
			}
			switch {
			case tc.err == nil && res.Error != nil:
				t.Errorf("error = %+v, want none", res.Error)
			case tc.err != nil && res.Error == nil:
				t.Errorf("no structured error, want %+v (stderr %q)", tc.err, clip(res.Stderr))
			case tc.err != nil:
				e := res.Error
				if e.Type != tc.err.Type || e.Line != tc.err.Line || (tc.err.Message != "" && e.Message != tc.err.Message) {
					t.Errorf("error = {Type:%q Message:%q Line:%d}, want {Type:%q Message:%q Line:%d}",
						e.Type, e.Message, e.Line, tc.err.Type, tc.err.Message, tc.err.Line)
				}
			}
		})
	}
}

func testInputFiles(t *testing.T, s *suite) {
	tok := newToken()
	blob := make([]byte, 256)
	for i := range blob {
		blob[i] = byte(i)
	}
	sum := sha256.Sum256(blob)
	code := `import hashlib, json, os
with open("data/in.csv") as f:
    rows = [line.strip().split(",") for line in f][1:]
out = {
    "cwd": os.getcwd(),
    "total": sum(int(b) for _, b in rows),
    "blob": hashlib.sha256(open("/work/deep/er/blob.bin", "rb").read()).hexdigest(),
    "run_sh_executable": os.access("run.sh", os.X_OK),
    "csv_executable": os.access("data/in.csv", os.X_OK),
}
print(json.dumps(out))
`
	res, _ := s.run(t, sandbox.Request{
		Language: sandbox.Python,
		Code:     code,
		Files: []sandbox.File{
			{Name: "data/in.csv", Content: sandbox.Data("a,b\n1,2\n3,4\n5,36\n")},
			{Name: "deep/er/blob.bin", Content: blob},
			{Name: "run.sh", Content: sandbox.Data("#!/bin/sh\necho hi\n"), Executable: true},
		},
	}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct {
		Cwd             string `json:"cwd"`
		Total           int    `json:"total"`
		Blob            string `json:"blob"`
		RunExecutable   bool   `json:"run_sh_executable"`
		CSVIsExecutable bool   `json:"csv_executable"`
	}
	decodeReport(t, res, &rep)
	if rep.Cwd != lang.WorkDir || rep.Total != 42 || rep.Blob != hex.EncodeToString(sum[:]) ||
		!rep.RunExecutable || rep.CSVIsExecutable {
		t.Errorf("report = %+v, want cwd %s, total 42, blob %x, only run.sh executable", rep, lang.WorkDir, sum)
	}
}

func testEnv(t *testing.T, s *suite) {
	tok := newToken()
	// A variable of the host process, which must not reach the program.
	t.Setenv("SANDBOXTEST_HOST_ONLY", "leaked-"+tok)
	env := map[string]string{"FOO": "bar", "WITH_SPACES": "a b  c", tokenEnv: tok}
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: "import json, os\nprint(json.dumps(dict(os.environ)))\n",
		Env: maps.Clone(env)}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var got map[string]string
	decodeReport(t, res, &got)
	want := map[string]string{}
	for _, kv := range lang.Environ(sandbox.Python, nil, env) {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("$%s = %q (set %v), want %q", k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected variable $%s = %q in the program's environment", k, v)
		}
	}
	for _, kv := range lang.BaseEnv() {
		k, v, _ := strings.Cut(kv, "=")
		if got[k] != v {
			t.Errorf("base variable $%s = %q, want %q", k, got[k], v)
		}
	}
}
