package swe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// repoPath resolves a path the model gave (relative to the repository's
// root, or absolute under it) to one relative to the root, "." for the
// root itself. A path outside the repository is refused: the tools work
// on the repository only. This is a convenience rule, not a security
// one: everything the tools reach is inside the sandbox, which bash
// reaches anyway.
func repoPath(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", fmt.Errorf("the path is empty")
	}
	if strings.HasPrefix(p, "/") {
		rel, ok := strings.CutPrefix(path.Clean(p), modelRepoRoot)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			return "", fmt.Errorf("%s is outside the repository (%s)", p, modelRepoRoot)
		}
		p = "." + rel
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s is outside the repository", p)
	}
	return clean, nil
}

// sessionName is a repository path as the session's file calls name it
// (relative to its working directory).
func sessionName(rel string) string { return path.Join(repoDir, rel) }

// Bounds of the view tool.
const (
	// maxViewLines bounds the lines of a file shown at once.
	maxViewLines = 2000
	// maxListEntries bounds a directory listing.
	maxListEntries = 400
)

// view shows a file with line numbers, or lists a directory.
func (l *loop) view(ctx context.Context, p string, startLine, endLine *int) string {
	rel, err := repoPath(p)
	if err != nil {
		return "error: " + err.Error()
	}
	l.emit(StepTool, "view: "+rel)
	content, err := l.ws.sess.ReadFile(ctx, sessionName(rel))
	if err != nil {
		// Not a regular file: a directory (or nothing) is listed by a cell.
		return l.listDir(ctx, rel)
	}
	if !utf8.Valid(content) || strings.IndexByte(string(content), 0) >= 0 {
		return fmt.Sprintf("%s is a binary file (%d bytes).", rel, len(content))
	}
	lines := strings.Split(string(content), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first, last := 1, len(lines)
	if startLine != nil {
		first = *startLine
	}
	if endLine != nil && *endLine != -1 {
		last = *endLine
	}
	switch {
	case len(lines) == 0:
		return rel + " is empty."
	case first < 1 || first > len(lines):
		return fmt.Sprintf("error: start_line %d is outside the file's lines 1 to %d.", first, len(lines))
	case last < first:
		return fmt.Sprintf("error: end_line %d is before start_line %d.", last, first)
	}
	last = min(last, len(lines))
	var b strings.Builder
	more := ""
	if last-first+1 > maxViewLines {
		more = fmt.Sprintf("\n[lines %d to %d not shown: view them with start_line and end_line]", first+maxViewLines, last)
		last = first + maxViewLines - 1
	}
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return clipText(strings.TrimSuffix(b.String(), "\n")+more, maxToolOutput)
}

// listCell lists a directory of the repository two levels deep (hidden
// entries and .git left out) or says it does not exist; its argument is a
// JSON string literal, never code.
const listCell = `def _crucible_swe_list(spec):
    import json, os
    spec = json.loads(spec)
    root, limit = spec["dir"], spec["limit"]
    if not os.path.exists(root):
        return "error: no such file or directory: " + spec["rel"]
    if not os.path.isdir(root):
        return "error: " + spec["rel"] + " is not a regular file or a directory"
    out = []
    def walk(d, prefix, depth):
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            out.append(prefix + "(" + e.strerror + ")")
            return
        for n in names:
            if n.startswith(".") or len(out) >= limit:
                continue
            p = os.path.join(d, n)
            isdir = os.path.isdir(p) and not os.path.islink(p)
            out.append(prefix + n + ("/" if isdir else ""))
            if isdir and depth < 2:
                walk(p, prefix + "  ", depth + 1)
    walk(root, "", 1)
    if len(out) >= limit:
        out.append("[listing cut at %%d entries]" %% limit)
    return "\n".join(out) or "(empty directory)"
print(globals().pop("_crucible_swe_list")(%s), end="")
`

// listDir lists a directory of the repository.
func (l *loop) listDir(ctx context.Context, rel string) string {
	spec, _ := json.Marshal(map[string]any{"dir": path.Join(modelRepoRoot, rel), "rel": rel, "limit": maxListEntries})
	lit, _ := json.Marshal(string(spec))
	res, err := l.exec(ctx, fmt.Sprintf(listCell, lit), l.cfg.CallTimeout, false)
	if err != nil {
		return "error: the sandbox failed: " + err.Error()
	}
	if res.Status != sandbox.StatusOK {
		return fmt.Sprintf("error: listing %s failed: %s %s", rel, res.Status, res.Reason)
	}
	return clipText(string(res.Stdout), maxToolOutput)
}

// editCell writes a file of the repository: content (base64) replaces
// it, or, with "delete", the file is removed. open(..., "wb") keeps an
// existing file's mode (an executable stays one), which the session's
// WriteFile would reset; missing directories are made.
const editCell = `def _crucible_swe_write(spec):
    import base64, json, os
    spec = json.loads(spec)
    p = spec["path"]
    if spec["delete"]:
        os.remove(p)
        return
    d = os.path.dirname(p)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(p, "wb") as f:
        f.write(base64.b64decode(spec["content"]))
globals().pop("_crucible_swe_write")(%s)
`

// writeFile replaces a repository file's content (nil deletes it).
func (l *loop) writeFile(ctx context.Context, rel string, content []byte) error {
	spec, _ := json.Marshal(map[string]any{"path": path.Join(modelRepoRoot, rel), "delete": content == nil,
		"content": base64.StdEncoding.EncodeToString(content)})
	lit, _ := json.Marshal(string(spec))
	res, err := l.exec(ctx, fmt.Sprintf(editCell, lit), l.cfg.CallTimeout, false)
	switch {
	case err != nil:
		return err
	case res.Status != sandbox.StatusOK:
		if res.Error != nil {
			return fmt.Errorf("%s: %s", res.Error.Type, res.Error.Message)
		}
		return fmt.Errorf("%s %s", res.Status, res.Reason)
	}
	return nil
}

// fileVersion is a file's content before an edit; nil means it did not
// exist.
type fileVersion []byte

// edit carries out an edit command and returns what to show the model: a
// snippet around the change, or why nothing changed.
func (l *loop) edit(ctx context.Context, command, p string, a toolArgs) string {
	rel, err := repoPath(p)
	if err != nil {
		return "error: " + err.Error()
	}
	if rel == "." {
		return "error: the path names the repository's root, not a file"
	}
	if test, ok := l.protectedFile(rel); ok {
		return fmt.Sprintf("error: %s holds the test %s, which must pass as it is: edits to it are refused. Change the code under test instead.", rel, test)
	}
	l.emit(StepTool, "edit: "+command+" "+rel)
	old, readErr := l.ws.sess.ReadFile(ctx, sessionName(rel))
	exists := readErr == nil
	var next []byte
	var snippetAt int // the line the change starts at, from 1
	var snippetLen int
	switch command {
	case "create":
		if a.FileText == nil {
			return "error: create needs file_text"
		}
		if exists {
			return fmt.Sprintf("error: %s already exists; use str_replace or insert to change it", rel)
		}
		next, snippetAt, snippetLen = []byte(*a.FileText), 1, strings.Count(*a.FileText, "\n")+1
	case "str_replace":
		if a.OldStr == nil || a.NewStr == nil {
			return "error: str_replace needs old_str and new_str"
		}
		if !exists {
			return fmt.Sprintf("error: cannot read %s: %v", rel, readErr)
		}
		if *a.OldStr == "" {
			return "error: old_str is empty"
		}
		n := strings.Count(string(old), *a.OldStr)
		if n != 1 {
			return fmt.Sprintf("error: old_str must occur exactly once in %s, and occurs %d times%s. Nothing was changed.", rel, n, occurrenceHint(n, string(old), *a.OldStr))
		}
		i := strings.Index(string(old), *a.OldStr)
		next = []byte(string(old[:i]) + *a.NewStr + string(old[i+len(*a.OldStr):]))
		snippetAt, snippetLen = strings.Count(string(old[:i]), "\n")+1, strings.Count(*a.NewStr, "\n")+1
	case "insert":
		if a.NewStr == nil || a.InsertLine == nil {
			return "error: insert needs insert_line and new_str"
		}
		if !exists {
			return fmt.Sprintf("error: cannot read %s: %v", rel, readErr)
		}
		lines := strings.SplitAfter(string(old), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		at := *a.InsertLine
		if at < 0 || at > len(lines) {
			return fmt.Sprintf("error: insert_line %d is outside 0 to %d (the file's lines)", at, len(lines))
		}
		ins := *a.NewStr
		if !strings.HasSuffix(ins, "\n") {
			ins += "\n"
		}
		if at > 0 && !strings.HasSuffix(lines[at-1], "\n") {
			lines[at-1] += "\n"
		}
		next = []byte(strings.Join(lines[:at], "") + ins + strings.Join(lines[at:], ""))
		snippetAt, snippetLen = at+1, strings.Count(ins, "\n")
	case "undo":
		hist := l.history[rel]
		if len(hist) == 0 {
			return fmt.Sprintf("error: there is no edit of %s to undo", rel)
		}
		prev := hist[len(hist)-1]
		if err := l.writeFile(ctx, rel, prev); err != nil {
			return "error: " + err.Error()
		}
		l.history[rel] = hist[:len(hist)-1]
		if prev == nil {
			return fmt.Sprintf("Undone: %s did not exist before, and was removed.", rel)
		}
		return fmt.Sprintf("Undone: %s is back as it was before the last edit.\n%s", rel, snippet(string(prev), 1, 0))
	default:
		return fmt.Sprintf("error: unknown edit command %q; the commands are str_replace, insert, create and undo", command)
	}
	if err := l.writeFile(ctx, rel, next); err != nil {
		return "error: writing " + rel + ": " + err.Error()
	}
	var prev fileVersion
	if exists {
		prev = old
	}
	l.history[rel] = append(l.history[rel], prev)
	return fmt.Sprintf("Edited %s (%s). The file around the change, with line numbers:\n%s\nCheck that it is as intended; undo reverts the edit.", rel, command, snippet(string(next), snippetAt, snippetLen))
}

// occurrenceHint helps a model whose old_str did not match: the line
// numbers of several matches, or a near miss by whitespace.
func occurrenceHint(n int, content, old string) string {
	if n > 1 {
		var at []string
		for i, off := 0, 0; i < 10; i++ {
			j := strings.Index(content[off:], old)
			if j < 0 {
				break
			}
			at = append(at, fmt.Sprint(strings.Count(content[:off+j], "\n")+1))
			off += j + 1
		}
		return " (at lines " + strings.Join(at, ", ") + "): add lines around it to make it unique"
	}
	if strings.Contains(strings.Join(strings.Fields(content), " "), strings.Join(strings.Fields(old), " ")) {
		return " (it does occur with different whitespace or indentation: copy it exactly, as view shows it)"
	}
	return ""
}

// snippetContext is how many lines a snippet shows around a change.
const snippetContext = 4

// snippet shows lines of content around the n lines from line at (from
// 1), numbered.
func snippet(content string, at, n int) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	first := max(1, at-snippetContext)
	last := min(len(lines), at+max(n, 1)-1+snippetContext)
	if n == 0 {
		last = min(len(lines), 2*snippetContext+1)
	}
	var b strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return clipText(strings.TrimSuffix(b.String(), "\n"), maxToolOutput)
}

// protectedFile reports whether rel holds one of the named tests, and
// which: those files must pass as they are, so the edit tool refuses to
// change them (a change through bash is caught at submit, by testEdits).
func (l *loop) protectedFile(rel string) (string, bool) {
	for _, t := range l.task.Tests {
		if testFile(t) == rel {
			return t, true
		}
	}
	return "", false
}
