package lang

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

var javaScriptCases = []parseCase{
	{
		name: "ReferenceError",
		program: `const a = 1;
console.log(a);
  foo();
`,
		stderr: `/code/main.js:3
  foo();
  ^

ReferenceError: foo is not defined
    at Object.<anonymous> (/code/main.js:3:3)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "ReferenceError", Message: "foo is not defined", Line: 3, Column: 3},
	},
	{
		name: "TypeError in a nested call",
		program: `function inner(o) {
  return o.x.y;
}
function outer() {
  return inner({});
}
outer();
`,
		stderr: `/code/main.js:2
  return o.x.y;
             ^

TypeError: Cannot read properties of undefined (reading 'y')
    at inner (/code/main.js:2:14)
    at outer (/code/main.js:5:10)
    at Object.<anonymous> (/code/main.js:7:1)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "TypeError", Message: "Cannot read properties of undefined (reading 'y')", Line: 2, Column: 14},
	},
	{
		name: "SyntaxError",
		program: `const x = 1;
if (x) {
  console.log(x));
}
`,
		stderr: `/code/main.js:3
  console.log(x));
                ^

SyntaxError: Unexpected token ')'
    at wrapSafe (node:internal/modules/cjs/loader:1464:18)
    at Module._compile (node:internal/modules/cjs/loader:1495:20)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "Unexpected token ')'", Line: 3, Column: 17},
	},
	{
		name: "SyntaxError after characters of two UTF-16 units",
		program: `const s = "éé😀"; let x = = 1;
`,
		stderr: `/code/main.js:1
const s = "éé😀"; let x = = 1;
                          ^

SyntaxError: Unexpected token '='
    at wrapSafe (node:internal/modules/cjs/loader:1464:18)
    at Module._compile (node:internal/modules/cjs/loader:1495:20)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "Unexpected token '='", Line: 1, Column: 26},
	},
	{
		name: "thrown string after other output",
		program: `console.error("before");
throw 'boom';
`,
		stderr: `before

/code/main.js:2
throw 'boom';
^
boom
(Use ` + "`" + `node --trace-uncaught ...` + "`" + ` to show where the exception was thrown)

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Message: "boom", Line: 2, Column: 1, Traceback: `/code/main.js:2
throw 'boom';
^
boom
(Use ` + "`" + `node --trace-uncaught ...` + "`" + ` to show where the exception was thrown)`},
	},
	{
		name: "thrown object",
		program: `throw {a: 1, b: 'x'};
`,
		stderr: `
/code/main.js:1
throw {a: 1, b: 'x'};
^
{ a: 1, b: 'x' }

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Message: "{ a: 1, b: 'x' }", Line: 1, Column: 1},
	},
	{
		name: "thrown empty string",
		program: `throw '';
`,
		stderr: `
/code/main.js:1
throw '';
^

(Use ` + "`" + `node --trace-uncaught ...` + "`" + ` to show where the exception was thrown)

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Line: 1, Column: 1},
	},
	{
		name: "custom class naming itself",
		program: `class MyErr extends Error {
  constructor(m) { super(m); this.name = 'MyErr'; }
}
function f() { throw new MyErr('custom failure'); }
f();
`,
		stderr: `/code/main.js:4
function f() { throw new MyErr('custom failure'); }
               ^

MyErr: custom failure
    at f (/code/main.js:4:22)
    at Object.<anonymous> (/code/main.js:5:1)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "MyErr", Message: "custom failure", Line: 4, Column: 22},
	},
	{
		name: "custom class keeping the name Error",
		program: `class MyErr extends Error {}
throw new MyErr('no name set');
`,
		stderr: `/code/main.js:2
throw new MyErr('no name set');
^

MyErr [Error]: no name set
    at Object.<anonymous> (/code/main.js:2:7)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "MyErr", Message: "no name set", Line: 2, Column: 7},
	},
	{
		name: "error with extra properties",
		program: `const e = new Error('with props');
e.code = 'ERR_X';
e.errno = 5;
throw e;
`,
		stderr: `/code/main.js:4
throw e;
^

Error: with props
    at Object.<anonymous> (/code/main.js:1:11)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'ERR_X',
  errno: 5
}

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Message: "with props", Line: 1, Column: 11},
	},
	{
		name: "error raised in a core module",
		program: `const fs = require('fs');
fs.readFileSync('/nonexistent/file');
`,
		stderr: `node:fs:573
  return binding.open(
                 ^

Error: ENOENT: no such file or directory, open '/nonexistent/file'
    at Object.openSync (node:fs:573:18)
    at Object.readFileSync (node:fs:452:35)
    at Object.<anonymous> (/code/main.js:2:4)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
    at node:internal/main/run_main_module:28:49 {
  errno: -2,
  code: 'ENOENT',
  syscall: 'open',
  path: '/nonexistent/file'
}

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Message: "ENOENT: no such file or directory, open '/nonexistent/file'", Line: 2, Column: 4},
	},
	{
		name: "rejection in an async function",
		program: `async function go() {
  await null;
  throw new TypeError('async fail');
}
go();
`,
		stderr: `/code/main.js:3
  throw new TypeError('async fail');
        ^

TypeError: async fail
    at go (/code/main.js:3:9)

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "TypeError", Message: "async fail", Line: 3, Column: 9},
	},
	{
		name: "rejection with a string",
		program: `Promise.reject('plain string');
`,
		stderr: `node:internal/process/promises:389
      new UnhandledPromiseRejection(reason);
      ^

UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason "plain string".
    at throwUnhandledRejectionsMode (node:internal/process/promises:389:7)
    at processPromiseRejections (node:internal/process/promises:470:17)
    at process.processTicksAndRejections (node:internal/process/task_queues:96:32) {
  code: 'ERR_UNHANDLED_REJECTION'
}

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "UnhandledPromiseRejection", Message: "This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"plain string\"."},
	},
	{
		name: "error without stack frames",
		program: `Error.stackTraceLimit = 0;
function f() { throw new TypeError('no stack'); }
f();
`,
		stderr: `/code/main.js:2
function f() { throw new TypeError('no stack'); }
               ^

[TypeError: no stack]

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "TypeError", Message: "no stack", Line: 2, Column: 16},
	},
	{
		// Older Node.js versions refuse import statements in main.js.
		name: "ES module",
		stderr: `file:///code/main.js:2
undefinedThing();
^

ReferenceError: undefinedThing is not defined
    at file:///code/main.js:2:1
    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)
    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)
    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "ReferenceError", Message: "undefinedThing is not defined", Line: 2, Column: 1},
	},
	{
		name: "error with a cause",
		program: `function f() {
  try { JSON.parse('x'); } catch (err) { throw new Error('wrapped', { cause: err }); }
}
f();
`,
		stderr: `/code/main.js:2
  try { JSON.parse('x'); } catch (err) { throw new Error('wrapped', { cause: err }); }
                                         ^

Error: wrapped
    at f (/code/main.js:2:48)
    at Object.<anonymous> (/code/main.js:4:1)
    ... 5 lines matching cause stack trace ...
    at node:internal/main/run_main_module:28:49 {
  [cause]: SyntaxError: Unexpected token 'x', "x" is not valid JSON
      at JSON.parse (<anonymous>)
      at f (/code/main.js:2:14)
      at Object.<anonymous> (/code/main.js:4:1)
      at Module._compile (node:internal/modules/cjs/loader:1521:14)
      at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
      at Module.load (node:internal/modules/cjs/loader:1266:32)
      at Module._load (node:internal/modules/cjs/loader:1091:12)
      at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)
      at node:internal/main/run_main_module:28:49
}

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "Error", Message: "wrapped", Line: 2, Column: 48},
	},
	{
		// Captured with bad.js in /work, which the test does not make.
		name: "SyntaxError in a required module",
		stderr: `/work/bad.js:1
let = = 2;
      ^

SyntaxError: Unexpected token '='
    at wrapSafe (node:internal/modules/cjs/loader:1464:18)
    at Module._compile (node:internal/modules/cjs/loader:1495:20)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)
    at Module.load (node:internal/modules/cjs/loader:1266:32)
    at Module._load (node:internal/modules/cjs/loader:1091:12)
    at Module.require (node:internal/modules/cjs/loader:1289:19)
    at require (node:internal/modules/helpers:182:18)
    at Object.<anonymous> (/code/main.js:1:1)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)

Node.js v20.20.2
`,
		want: &sandbox.ExecError{Type: "SyntaxError", Message: "Unexpected token '='", Line: 1, Column: 1},
	},
	{
		name:    "no error",
		program: "console.error('just a warning');\n",
		stderr:  "just a warning\n",
	},
	{
		name:   "error printed by the program",
		stderr: "Error: handled\n    at Object.<anonymous> (/code/main.js:1:15)\n",
	},
	{name: "empty stderr"},
	{name: "garbage", stderr: "\x00\xff/code/main.js:1\n^\nNode.js"},
}

func TestParseJavaScriptError(t *testing.T) {
	node := installed(t, "/usr/bin/node", "v18.", "v19.", "v20.", "v21.", "v22.")
	testParser(t, ParseJavaScriptError, node, "main.js", javaScriptCases)
}
