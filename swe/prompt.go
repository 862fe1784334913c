package swe

import (
	"fmt"
	"strings"
)

// modelRepoRoot is the repository's root inside the sandbox, as the model
// sees it: the session's working directory /work joined with repoDir.
const modelRepoRoot = "/work/" + repoDir

// systemPrompt is the agent's system prompt: the tools, the repository's
// root, the tests and the rules. In text mode it also says how to write a
// tool call.
func systemPrompt(task Task, textMode bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `You are a software engineer working on a repository checked out at %s, in a Linux sandbox of your own (bash, git, python3, pytest).
Your job is the task the user gives you: change the repository's code so that it is done. Work in small steps: look at the code, reproduce the problem, make the change, run the tests.

Tools:
- bash {"command"}: run a bash command from the repository's root (one call is bounded in time; no interactive programs).
- view {"path", "start_line", "end_line"}: show a file with line numbers (optionally a range of lines), or list a directory two levels deep. Paths are relative to the repository's root.
- edit {"command", "path", ...}: change a file. command "str_replace" replaces old_str, which must occur exactly once, by new_str; "insert" inserts new_str after line insert_line (0 for the top); "create" writes file_text to a new file; "undo" restores the file as it was before your last edit of it.
- search {"pattern", "path", "glob", "regex"}: find the lines of files that hold pattern (a fixed string, or a regular expression when regex is true), within path (default the whole repository) and files matching glob (such as "*.py"); files whose names hold the pattern are listed too.
- run_tests {}: run the repository's tests and see which pass and which fail.
- submit {}: hand in your change when you are done. Your change is then checked in a fresh sandbox; what you say about it does not count, only the tests.
`, modelRepoRoot)
	fmt.Fprintf(&b, "\nThe test command (run_tests runs it from the repository's root): %s\n", shownTestCommand(task))
	if len(task.Tests) > 0 {
		b.WriteString("The tests that must pass after your change:\n")
		for _, t := range task.Tests {
			b.WriteString("- " + t + "\n")
		}
		b.WriteString("Do not edit the files of these tests: such edits are refused. Change the code under test instead.\n")
	} else {
		b.WriteString("Every test the command runs must pass after your change. Do not weaken or delete tests: change the code under test.\n")
	}
	b.WriteString("\nRules: make the tests pass without editing the tests named above; keep the change small and to the point; do not ask questions, nobody answers them; call submit once the change is made and the tests pass.\n")
	if textMode {
		b.WriteString(textModePrompt)
	}
	return b.String()
}

// textModePrompt tells a model without native tool calling how to call a
// tool in text.
const textModePrompt = `
You call a tool by writing a JSON object in your reply, inside <tool_call></tool_call> tags, one per call:
<tool_call>{"tool": "view", "args": {"path": "src/module.py"}}</tool_call>
A bash command may also be written as a fenced block:
` + "```bash\npython3 -m pytest -q tests/test_module.py\n```" + `
When you are done: <tool_call>{"tool": "submit", "args": {}}</tool_call>
Each reply must hold at least one tool call; the results come back in the next message.
`

// shownTestCommand is the task's test command, or the one "" means.
func shownTestCommand(task Task) string {
	if strings.TrimSpace(task.TestCommand) != "" {
		return task.TestCommand
	}
	return defaultTestCommand
}

// Notes sent to the model.
const (
	// proseNote answers a reply with no tool call.
	proseNote = "Your reply called no tool. Call a tool to work on the repository, or submit when the change is done."
	// cutNote answers a reply cut at the token limit: nothing in it ran.
	cutNote = "Your reply was cut off at the token limit, so none of it was run. Send a shorter reply: one step at a time, and write large files in several edits."
	// loopNote warns a model that repeats a call with the same result.
	loopNote = "You have now made exactly this call %d times with exactly the same result. Repeating it will not change anything: try something else (look at other code, change the code, or submit). If you repeat it again, the run stops."
)
