package lang

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// parseCase is a row of the error parsers' tables: a program, the stderr its
// interpreter printed running it as /code/main.py or /code/main.js (helper
// modules in /work), and the error expected from that stderr.
type parseCase struct {
	name string
	// program, when set, is run by the test, if the interpreter is present,
	// to check the parser against the stderr of this machine too.
	program string
	stderr  string
	// want is nil when stderr holds no error. An empty Traceback stands for
	// the whole stderr without Node.js's version line.
	want *sandbox.ExecError
}

// testParser checks parse against each case's captured stderr and, when
// interpreter is not empty, against the stderr of running its program.
func testParser(t *testing.T, parse func([]byte, string) *sandbox.ExecError, interpreter, mainFile string, cases []parseCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := tc.want
			if want != nil && want.Traceback == "" {
				w := *want
				report, _, _ := strings.Cut(tc.stderr, "\nNode.js v")
				w.Traceback = strings.Trim(report, "\n")
				want = &w
			}
			if got := parse([]byte(tc.stderr), "/code/"+mainFile); !reflect.DeepEqual(got, want) {
				t.Errorf("captured stderr:\ngot  %+v\nwant %+v", got, want)
			}
			if tc.program == "" || interpreter == "" {
				return
			}
			path := filepath.Join(t.TempDir(), mainFile)
			got := parse(runProgram(t, interpreter, path, tc.program), path)
			// The paths in the live traceback differ: compare the rest.
			if got != nil && want != nil {
				if got.Traceback == "" {
					t.Errorf("live stderr: empty traceback")
				}
				w := *want
				w.Traceback = got.Traceback
				want = &w
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("live stderr:\ngot  %+v\nwant %+v", got, want)
			}
		})
	}
}

// runProgram writes program to path, runs it with interpreter in path's
// directory and returns its stderr.
func runProgram(t *testing.T, interpreter, path, program string) []byte {
	t.Helper()
	if err := os.WriteFile(path, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, path)
	cmd.Dir = filepath.Dir(path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var exitErr *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run %s: %v", interpreter, err)
	}
	return []byte(stderr.String())
}

// installed returns interpreter when running it with --version prints a
// line starting with one of versions, and "" otherwise.
func installed(t *testing.T, interpreter string, versions ...string) string {
	if out, err := exec.Command(interpreter, "--version").Output(); err == nil {
		for _, v := range versions {
			if strings.HasPrefix(string(out), v) {
				return interpreter
			}
		}
	}
	t.Logf("%s is not one of %v: captured samples only", interpreter, versions)
	return ""
}

var pythonCases = []parseCase{
	{
		name: "NameError",
		program: `x = 1
print(undefined_name)
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 2, in <module>
    print(undefined_name)
          ^^^^^^^^^^^^^^
NameError: name 'undefined_name' is not defined
`,
		want: &sandbox.ExecError{Type: "NameError", Message: "name 'undefined_name' is not defined", Line: 2},
	},
	{
		name: "ZeroDivisionError in a nested call",
		program: `def inner(a):
    return a / 0

def outer():
    return inner(5) + 1

outer()
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 7, in <module>
    outer()
  File "/code/main.py", line 5, in outer
    return inner(5) + 1
           ^^^^^^^^
  File "/code/main.py", line 2, in inner
    return a / 0
           ~~^~~
ZeroDivisionError: division by zero
`,
		want: &sandbox.ExecError{Type: "ZeroDivisionError", Message: "division by zero", Line: 2},
	},
	{
		name: "exception raised in the standard library",
		program: `import json
data = json.loads('x')
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 2, in <module>
    data = json.loads('x')
           ^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode
    obj, end = self.raw_decode(s, idx=_w(s, 0).end())
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode
    raise JSONDecodeError("Expecting value", s, err.value) from None
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
`,
		want: &sandbox.ExecError{Type: "json.decoder.JSONDecodeError", Message: "Expecting value: line 1 column 1 (char 0)", Line: 2},
	},
	{
		name: "SyntaxError in an indented line",
		program: `x = 1
if True:
    y = (1 +* 2)
`,
		stderr: `  File "/code/main.py", line 3
    y = (1 +* 2)
            ^
SyntaxError: invalid syntax
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "invalid syntax", Line: 3, Column: 9},
	},
	{
		name: "SyntaxError after multi-byte characters",
		program: `s = "éé" +* 2
`,
		stderr: `  File "/code/main.py", line 1
    s = "éé" +* 2
                ^
SyntaxError: invalid syntax
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "invalid syntax", Line: 1, Column: 11},
	},
	{
		name: "IndentationError",
		program: `def f():
return 1
`,
		stderr: `  File "/code/main.py", line 2
    return 1
    ^
IndentationError: expected an indented block after function definition on line 1
`,
		want: &sandbox.ExecError{Type: "IndentationError", Message: "expected an indented block after function definition on line 1", Line: 2, Column: 1},
	},
	{
		name: "TabError without caret",
		program: `if True:
        x = 1
	y = 2
`,
		stderr: `  File "/code/main.py", line 3
    y = 2
TabError: inconsistent use of tabs and spaces in indentation
`,
		want: &sandbox.ExecError{Type: "TabError", Message: "inconsistent use of tabs and spaces in indentation", Line: 3},
	},
	{
		name: "direct cause: the last exception wins",
		program: `try:
    {}['k']
except KeyError as e:
    raise ValueError("bad value") from e
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 2, in <module>
    {}['k']
    ~~^^^^^
KeyError: 'k'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    raise ValueError("bad value") from e
ValueError: bad value
`,
		want: &sandbox.ExecError{Type: "ValueError", Message: "bad value", Line: 4, Traceback: `Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    raise ValueError("bad value") from e
ValueError: bad value`},
	},
	{
		name: "exception during handling: the last exception wins",
		program: `try:
    1/0
except ZeroDivisionError:
    raise RuntimeError("during")
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 2, in <module>
    1/0
    ~^~
ZeroDivisionError: division by zero

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    raise RuntimeError("during")
RuntimeError: during
`,
		want: &sandbox.ExecError{Type: "RuntimeError", Message: "during", Line: 4, Traceback: `Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    raise RuntimeError("during")
RuntimeError: during`},
	},
	{
		name: "multi-line message",
		program: `raise ValueError("line one\nline two\nline three")
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 1, in <module>
    raise ValueError("line one\nline two\nline three")
ValueError: line one
line two
line three
`,
		want: &sandbox.ExecError{Type: "ValueError", Message: "line one\nline two\nline three", Line: 1},
	},
	{
		name: "KeyboardInterrupt without message",
		program: `raise KeyboardInterrupt
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 1, in <module>
    raise KeyboardInterrupt
KeyboardInterrupt
`,
		want: &sandbox.ExecError{Type: "KeyboardInterrupt", Line: 1},
	},
	{
		name: "RecursionError",
		program: `def f(n):
    return f(n + 1)
f(0)
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 3, in <module>
    f(0)
  File "/code/main.py", line 2, in f
    return f(n + 1)
           ^^^^^^^^
  File "/code/main.py", line 2, in f
    return f(n + 1)
           ^^^^^^^^
  File "/code/main.py", line 2, in f
    return f(n + 1)
           ^^^^^^^^
  [Previous line repeated 996 more times]
RecursionError: maximum recursion depth exceeded
`,
		want: &sandbox.ExecError{Type: "RecursionError", Message: "maximum recursion depth exceeded", Line: 2},
	},
	{
		name: "output before the traceback",
		program: `import sys
print("some log", file=sys.stderr)
print("Traceback-ish text", file=sys.stderr)
[1][5]
`,
		stderr: `some log
Traceback-ish text
Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    [1][5]
    ~~~^^^
IndexError: list index out of range
`,
		want: &sandbox.ExecError{Type: "IndexError", Message: "list index out of range", Line: 4, Traceback: `Traceback (most recent call last):
  File "/code/main.py", line 4, in <module>
    [1][5]
    ~~~^^^
IndexError: list index out of range`},
	},
	{
		// Captured with helper.py in /work, which the test does not make.
		name: "exception in an imported module",
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 3, in <module>
    helper.boom()
  File "/work/helper.py", line 2, in boom
    raise LookupError("from helper")
LookupError: from helper
`,
		want: &sandbox.ExecError{Type: "LookupError", Message: "from helper", Line: 3},
	},
	{
		name: "exception in exec'd code",
		program: `code = "a = 1\nb = a +\n"
exec("x = 1\nraise TypeError('in exec')")
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 2, in <module>
    exec("x = 1\nraise TypeError('in exec')")
  File "<string>", line 2, in <module>
TypeError: in exec
`,
		want: &sandbox.ExecError{Type: "TypeError", Message: "in exec", Line: 2},
	},
	{
		name: "SyntaxError in exec'd code has no column",
		program: `exec("b = 1 +\n")
`,
		stderr: `Traceback (most recent call last):
  File "/code/main.py", line 1, in <module>
    exec("b = 1 +\n")
  File "<string>", line 1
    b = 1 +
           ^
SyntaxError: invalid syntax
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "invalid syntax", Line: 1},
	},
	{
		name: "exception group",
		program: `import asyncio
async def bad():
    raise ValueError("task failed")
async def main():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(bad())
asyncio.run(main())
`,
		stderr: `  + Exception Group Traceback (most recent call last):
  |   File "/code/main.py", line 7, in <module>
  |     asyncio.run(main())
  |   File "/usr/lib/python3.11/asyncio/runners.py", line 190, in run
  |     return runner.run(main)
  |            ^^^^^^^^^^^^^^^^
  |   File "/usr/lib/python3.11/asyncio/runners.py", line 118, in run
  |     return self._loop.run_until_complete(task)
  |            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  |   File "/usr/lib/python3.11/asyncio/base_events.py", line 653, in run_until_complete
  |     return future.result()
  |            ^^^^^^^^^^^^^^^
  |   File "/code/main.py", line 5, in main
  |     async with asyncio.TaskGroup() as tg:
  |   File "/usr/lib/python3.11/asyncio/taskgroups.py", line 133, in __aexit__
  |     raise me from None
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/code/main.py", line 3, in bad
    |     raise ValueError("task failed")
    | ValueError: task failed
    +------------------------------------
`,
		want: &sandbox.ExecError{Type: "ExceptionGroup", Message: "unhandled errors in a TaskGroup (1 sub-exception)", Line: 5},
	},
	{
		name: "sys.exit with a message",
		program: `import sys
sys.exit("fatal: bad input")
`,
		stderr: `fatal: bad input
`,
		want: nil,
	},
	{
		name:    "no traceback",
		program: "import sys\nprint('warning: low disk', file=sys.stderr)\n",
		stderr:  "warning: low disk\n",
	},
	{name: "empty stderr"},
	{name: "garbage", stderr: "\x00\xff\xfe  File \"x\nTraceback\n^^^\n"},
	{name: "header alone", stderr: "Traceback (most recent call last):\n"},
}

func TestParsePythonError(t *testing.T) {
	testParser(t, ParsePythonError, installed(t, "/usr/bin/python3", "Python 3.11."), "main.py", pythonCases)
}
