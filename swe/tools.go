package swe

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
)

// The agent's tools, offered as native tools (and described in words in
// text mode). They reach the repository inside the agent's sandbox only,
// never the host.
var toolDefs = []llm.Tool{
	{Name: "bash", Description: "Run a bash command from the repository's root in the sandbox and see its output (stdout and stderr together) and exit code. Each call is bounded in time; no interactive programs.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"the bash command"}},"required":["command"]}`)},
	{Name: "view", Description: "Show a file with line numbers (optionally only start_line to end_line, counted from 1), or list a directory two levels deep. Paths are relative to the repository's root.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer"},"end_line":{"type":"integer"}},"required":["path"]}`)},
	{Name: "edit", Description: "Change a file. str_replace: replace old_str, which must occur exactly once in the file, by new_str. insert: insert new_str after line insert_line (0 inserts at the top). create: write file_text to a new file. undo: restore the file as it was before the last edit of it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","enum":["str_replace","insert","create","undo"]},"path":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},"insert_line":{"type":"integer"},"file_text":{"type":"string"}},"required":["command","path"]}`)},
	{Name: "search", Description: "Find the lines of the repository's files holding pattern (a fixed string, or a regular expression if regex is true), within path (default: the whole repository) and files matching glob (such as \"*.py\"). Files whose names hold the pattern are listed too. Results are bounded.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"},"regex":{"type":"boolean"}},"required":["pattern"]}`)},
	{Name: "run_tests", Description: "Run the repository's tests with the task's test command and see which pass and which fail.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "submit", Description: "Hand in the change once it is done. It is then checked in a fresh sandbox.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

// toolNames lists the tools, for the model's error messages.
var toolNames = func() string {
	names := make([]string, len(toolDefs))
	for i, t := range toolDefs {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}()

// toolArgs are the arguments of every tool; each reads its own. Pointers
// tell a missing argument from an empty one.
type toolArgs struct {
	Command    *string `json:"command"`
	Path       *string `json:"path"`
	StartLine  *int    `json:"start_line"`
	EndLine    *int    `json:"end_line"`
	OldStr     *string `json:"old_str"`
	NewStr     *string `json:"new_str"`
	InsertLine *int    `json:"insert_line"`
	FileText   *string `json:"file_text"`
	Pattern    *string `json:"pattern"`
	Glob       *string `json:"glob"`
	Regex      bool    `json:"regex"`
	// ViewRange is SWE-agent's [start, end] for view (its editor's).
	ViewRange []int `json:"view_range"`
}

// parseArgs decodes a call's arguments: a JSON object (or nothing, for
// the tools without arguments). Some servers send the object encoded
// twice, as a string holding it; that is read too.
func parseArgs(raw json.RawMessage) (toolArgs, error) {
	var a toolArgs
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return a, nil
	}
	var inner string
	if json.Unmarshal([]byte(s), &inner) == nil {
		s = strings.TrimSpace(inner)
		if s == "" {
			return a, nil
		}
	}
	err := json.Unmarshal([]byte(s), &a)
	return a, err
}

// toolOutcome is what one tool call gave: the text for the model and,
// if the call ends the run, how.
type toolOutcome struct {
	out string
	end *ending
	// feedback marks a call that was not carried out (bad arguments, an
	// unknown tool): its text is recorded as feedback too.
	feedback bool
}

// callTool runs one tool call and returns its outcome. The output is
// redacted before it is returned.
func (l *loop) callTool(ctx context.Context, name string, raw json.RawMessage) toolOutcome {
	start := time.Now()
	args, err := parseArgs(raw)
	var o toolOutcome
	switch {
	case err != nil:
		o = toolOutcome{out: fmt.Sprintf("The arguments of %s are not a valid JSON object (%v). Call the tool again with a JSON object of arguments.", name, err), feedback: true}
	default:
		o = l.dispatch(ctx, name, args)
	}
	o.out = l.redact(o.out)
	step := Step{Kind: StepTool, At: start.UTC(), Tool: name, Args: l.redact(clipText(string(raw), maxArgsKept)), Output: clipText(o.out, maxOutputKept), DurationMS: millis(time.Since(start))}
	if o.feedback {
		step.Kind, step.Note = StepFeedback, firstLine(o.out)
	}
	l.res.Trace.Steps = append(l.res.Trace.Steps, step)
	return o
}

// toolAliases are the names models trained on other agents' tools call
// ours by (SWE-agent's str_replace_editor, OpenHands' execute_bash and
// finish, ...): the call is taken as the tool meant, not refused.
var toolAliases = map[string]string{
	"execute_bash": "bash", "shell": "bash", "run": "bash", "run_command": "bash", "terminal": "bash",
	"str_replace_editor": "edit", "str_replace_based_edit_tool": "edit", "editor": "edit",
	"grep": "search", "find": "search",
	"finish": "submit", "done": "submit",
	"read_file": "view", "open_file": "view",
}

// canonical returns the tool a call means: its name, or the aliased one;
// an editor call with command "view" is the view tool.
func canonical(name string, a toolArgs) string {
	if t, ok := toolAliases[name]; ok {
		name = t
	}
	if name == "edit" && a.Command != nil && *a.Command == "view" {
		return "view"
	}
	return name
}

// dispatch runs a call whose arguments were read.
func (l *loop) dispatch(ctx context.Context, name string, a toolArgs) toolOutcome {
	name = canonical(name, a)
	missing := func(fields ...string) toolOutcome {
		return toolOutcome{out: fmt.Sprintf("%s needs the argument(s) %s.", name, strings.Join(fields, ", ")), feedback: true}
	}
	switch name {
	case "bash":
		if a.Command == nil || strings.TrimSpace(*a.Command) == "" {
			return missing("command")
		}
		return l.bash(ctx, *a.Command)
	case "view":
		if a.Path == nil {
			return missing("path")
		}
		if a.StartLine == nil && len(a.ViewRange) == 2 {
			a.StartLine, a.EndLine = &a.ViewRange[0], &a.ViewRange[1]
		}
		return toolOutcome{out: l.view(ctx, *a.Path, a.StartLine, a.EndLine)}
	case "edit":
		if a.Command == nil || a.Path == nil {
			return missing("command", "path")
		}
		return toolOutcome{out: l.edit(ctx, *a.Command, *a.Path, a)}
	case "search":
		if a.Pattern == nil {
			return missing("pattern")
		}
		return toolOutcome{out: l.search(ctx, *a.Pattern, deref(a.Path), deref(a.Glob), a.Regex)}
	case "run_tests":
		return l.runTestsTool(ctx)
	case "submit":
		return toolOutcome{end: &ending{status: "", submitted: true}}
	}
	return toolOutcome{out: fmt.Sprintf("There is no tool %q; the tools are %s.", name, toolNames), feedback: true}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Bounds of what the model is shown and what the trace keeps.
const (
	// maxToolOutput bounds a tool's output shown to the model (head and
	// tail kept).
	maxToolOutput = 16 << 10
	// maxOutputKept and maxArgsKept bound a tool call's output and
	// arguments in the trace.
	maxOutputKept = 16 << 10
	maxArgsKept   = 32 << 10
)

// clipText keeps the head and the tail of s within n bytes, saying how
// much was cut, on UTF-8 boundaries.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n/2, n-n/2
	for head > 0 && !utf8Start(s[head]) {
		head--
	}
	cut := len(s) - tail
	for cut < len(s) && !utf8Start(s[cut]) {
		cut++
	}
	return s[:head] + fmt.Sprintf("\n[... %d bytes cut ...]\n", cut-head) + s[cut:]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// runTestsTool runs the test command in the agent's own session, after
// approval, and summarises the report for the model.
func (l *loop) runTestsTool(ctx context.Context) toolOutcome {
	command := shownTestCommand(l.task)
	if end := l.approve(ctx, command); end != nil {
		return toolOutcome{end: end}
	}
	l.emit(StepTool, "run_tests: "+command)
	start := time.Now()
	rep, err := l.ws.runTests(ctx, l.task.TestCommand, l.cfg.CallTimeout)
	l.res.Trace.Budget.ExecMS += millis(time.Since(start))
	if err != nil {
		if ctx.Err() != nil {
			return toolOutcome{end: l.contextEnding(ctx)}
		}
		return toolOutcome{out: "The tests could not run: " + err.Error()}
	}
	return toolOutcome{out: summarizeTests(rep)}
}

// summarizeTests describes a test report for the model: the counts, the
// failing tests and the output's end.
func summarizeTests(rep *TestReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d passed, %d failed (exit code %d, status %s)\n", rep.Command, rep.Passed, rep.Failed, rep.ExitCode, rep.Status)
	var failed []string
	for _, c := range rep.Cases {
		if c.Outcome == TestFailed {
			failed = append(failed, c.ID)
		}
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		b.WriteString("Failing: " + strings.Join(clipList(failed, 50), ", ") + "\n")
	}
	b.WriteString("Output:\n" + clipText(rep.Output, maxToolOutput))
	return b.String()
}

// clipList keeps the first n items and says how many more there were.
func clipList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("... and %d more", len(items)-n))
}
