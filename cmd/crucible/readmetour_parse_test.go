package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The README's tour, as TestREADMETour reads it. Two kinds of fenced
// blocks take part, in the order they appear:
//
//   - ```console: commands after a "$ " prompt, each followed by the
//     output it shows (up to the next prompt or the fence). A command
//     line ending in "\" goes on with the next line. A command ending in
//     " &" runs in the background (crucible serve) and its shown lines
//     are not compared (see TestREADMETour).
//   - A block whose info string holds file=NAME (```json file=serve.json):
//     a file the reader is told to write, written as NAME into the
//     tour's directory before the commands after it run.
//
// No other block is run: the README's other examples name files a reader
// has to provide.

// tourItem is a command or a file of the tour.
type tourItem struct {
	// line is the README line of the command's prompt or the file's fence.
	line int
	// command is the command, without its prompt; "" for a file.
	command string
	// background is a command ending in " &" (without it in command).
	background bool
	// want is the command's shown output, one string per line.
	want []string
	// file and content are a file block's name and text.
	file, content string
}

// fileAttr finds file=NAME in a fence's info string.
var fileAttr = regexp.MustCompile(`(?:^|\s)file=(\S+)`)

// parseTour returns the tour's commands and files in README order.
func parseTour(readme string) ([]tourItem, error) {
	lines := strings.Split(readme, "\n")
	var items []tourItem
	for i := 0; i < len(lines); i++ {
		info, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		start := i
		end := start + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("README line %d: a fence that is never closed", start+1)
		}
		body := lines[start+1 : end]
		i = end
		switch m := fileAttr.FindStringSubmatch(info); {
		case strings.TrimSpace(info) == "console":
			cmds, err := parseConsole(body, start+2)
			if err != nil {
				return nil, err
			}
			items = append(items, cmds...)
		case m != nil:
			items = append(items, tourItem{line: start + 1, file: m[1], content: strings.Join(body, "\n") + "\n"})
		}
	}
	return items, nil
}

// parseConsole reads the commands of a console block whose first line is
// README line first.
func parseConsole(body []string, first int) ([]tourItem, error) {
	var items []tourItem
	for i := 0; i < len(body); i++ {
		cmd, ok := strings.CutPrefix(body[i], "$ ")
		if !ok {
			if len(items) == 0 {
				return nil, fmt.Errorf("README line %d: a console block must start with a \"$ \" prompt, got %q", first+i, body[i])
			}
			items[len(items)-1].want = append(items[len(items)-1].want, body[i])
			continue
		}
		item := tourItem{line: first + i}
		for strings.HasSuffix(cmd, `\`) && i+1 < len(body) {
			i++
			cmd += "\n" + body[i]
		}
		item.command, item.background = strings.CutSuffix(cmd, " &")
		items = append(items, item)
	}
	for i := range items {
		items[i].want = trimBlankTail(items[i].want)
	}
	return items, nil
}

// trimBlankTail drops the empty lines at the end of lines.
func trimBlankTail(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// The parts of an output that differ from run to run, each replaced by
// a placeholder in both the shown and the real output: durations (wall,
// CPU and execution times), peak memory, and IDs (sessions, agent runs,
// analyses, approvals, keys; run records' 32 hex digits). Ports are
// normalised before these, by the caller, which knows the real one.
var tourVariable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b(wall|cpu|execution) [0-9]+ ms\b`), "$1 N ms"},
	{regexp.MustCompile(`\bpeak [0-9.]+(B|KiB|MiB|GiB)\b`), "peak N"},
	{regexp.MustCompile(`\b(ses|agt|ana|apr|key)_[0-9a-f]+\b`), "${1}_ID"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "RUN_ID"},
}

// normaliseTour replaces what differs from run to run in lines.
func normaliseTour(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		for _, v := range tourVariable {
			l = v.re.ReplaceAllString(l, v.with)
		}
		out[i] = strings.TrimRight(l, " ")
	}
	return out
}

// compareTour reports how got differs from want once both are
// normalised, or "" when they agree.
func compareTour(want, got []string) string {
	w, g := normaliseTour(trimBlankTail(want)), normaliseTour(trimBlankTail(got))
	for i := range max(len(w), len(g)) {
		switch {
		case i >= len(w):
			return fmt.Sprintf("output line %d is not shown in the README: %q", i+1, g[i])
		case i >= len(g):
			return fmt.Sprintf("output line %d shown in the README never came: %q", i+1, w[i])
		case w[i] != g[i]:
			return fmt.Sprintf("output line %d differs:\n  README: %q\n  real:   %q", i+1, w[i], g[i])
		}
	}
	return ""
}

// rewriteTour returns readme with the shown output of the commands whose
// prompt is on the README lines of outputs replaced by those outputs;
// the rest of readme is kept as it is.
func rewriteTour(readme string, outputs map[int][]string) string {
	lines := strings.Split(readme, "\n")
	out := make([]string, 0, len(lines))
	inConsole := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```"):
			inConsole = !inConsole && strings.TrimSpace(l[3:]) == "console"
		case inConsole && strings.HasPrefix(l, "$ "):
			shown, ok := outputs[i+1]
			if !ok {
				break
			}
			for strings.HasSuffix(lines[i], `\`) && i+1 < len(lines) {
				out = append(out, lines[i])
				i++
			}
			out = append(out, lines[i])
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
				i++
			}
			out = append(out, shown...)
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
