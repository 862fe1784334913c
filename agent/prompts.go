package agent

// The prompts of the agent's roles.
const (
	plannerPrompt = `You decide whether a task needs code to be run. Reply with a JSON object only:
{"needs_code": true, "answer": ""} if answering needs computation, data, files or any fact
you cannot be certain of;
{"needs_code": false, "answer": "<the answer>"} only if the answer is certain without
running anything.`

	coderPrompt = `You solve the user's task by writing Python and running it in a sandbox
(Python 3, no network, a working directory with the user's files; variables persist
between executions). Work in small steps. Use the execute_code tool to run code and look at
its output before you answer; use list_files, read_file and write_file for the working
directory. When the output answers the task, call final_answer with a short answer that
states the result; do not guess numbers you did not compute.`

	coderTextPrompt = `You solve the user's task by writing Python that the user runs for you in a
sandbox (Python 3, no network, a working directory with the user's files; variables
persist between runs). Reply with exactly one fenced block:

` + "```python\n<code>\n```" + `

and nothing else while you still need to run code. When the output you were shown answers
the task, reply with a line starting "FINAL ANSWER:" followed by the answer.`

	testDrivenPrompt = `

Work test-first: write a reference solution, example tests (known inputs and outputs,
edge cases) and property tests (invariants that must hold for many inputs, checked with
assert in a loop), run them all in one execution, and only when every assert passes
call final_answer. An answer not backed by an execution that ran passing asserts is
refused.`

	verifierPrompt = `You check an agent's work. Given the task, the code that ran, its output and the
proposed answer, decide whether the output really answers the task and whether every
invariant the task states holds. Reply with a JSON object only:
{"ok": true|false, "reason": "<one sentence>"}`

	// verdictAgain asks the verifier once more for a verdict it can read.
	verdictAgain = `Your reply could not be read as a verdict. Reply with this JSON object only:
{"ok": true|false, "reason": "<one sentence>"}`

	// cutNote answers a reply cut at the token limit.
	cutNote = `Your reply was cut off at the token limit, so nothing in it was run. Send a shorter
reply: smaller steps, less code at once, no long explanations.`

	// skippedNote answers a tool call not run because an earlier call of
	// the same reply failed.
	skippedNote = "Not run: an earlier call in the same reply failed. Fix that first, then send this call again if it is still needed."

	fixAdvice = "Fix the minimal lines needed; keep what already works."

	stepBackAdvice = `The same error happened twice in a row. Step back: rethink the approach from
scratch (another algorithm, another library, another way to read the data) instead of
patching the same lines again.`

	timeoutAdvice = `The code ran out of time. Reduce the complexity: a better algorithm, vectorised
operations, sampling, or processing the data in chunks.`

	memoryAdvice = `The code ran out of memory. Stream or chunk the data (for example
pandas.read_csv with chunksize), use smaller dtypes, and drop what is not needed.`

	policyAdvice = `The code policy blocked this program before any of it ran. Rewrite it without
what the findings name: the sandbox has no network, so leave out sockets and HTTP; read and
write files with open() or pandas instead of os, shutil or subprocess; do not use eval, exec
or dunder attributes.`
)
