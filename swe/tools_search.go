package swe

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Bounds of the search tool.
const (
	// maxSearchLines bounds the matching lines shown.
	maxSearchLines = 200
	// maxSearchLineLen bounds one matching line as shown.
	maxSearchLineLen = 300
	// maxSearchFiles bounds the file names shown.
	maxSearchFiles = 100
)

// searchCell runs grep over the repository (its arguments a list, never
// a shell line: a pattern cannot run anything) and lists the files whose
// names hold the pattern; .git is left out and the results are bounded.
// Its argument is a JSON string literal, never code.
const searchCell = `def _crucible_swe_search(spec):
    import fnmatch, json, os, subprocess
    spec = json.loads(spec)
    root, where = spec["root"], spec["where"]
    if not os.path.exists(where):
        print("error: no such file or directory: " + spec["rel"], end="")
        return
    argv = ["grep", "-rnI", "--exclude-dir=.git", "-E" if spec["regex"] else "-F"]
    if spec["glob"]:
        argv.append("--include=" + spec["glob"])
    argv += ["-e", spec["pattern"], "--", os.path.relpath(where, root)]
    p = subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=spec["timeout"])
    lines = p.stdout.decode("utf-8", "replace").splitlines()
    out = []
    for l in lines[:spec["max_lines"]]:
        if l.startswith("./"):
            l = l[2:]
        if len(l) > spec["max_len"]:
            l = l[:spec["max_len"]] + " [...]"
        out.append(l)
    if p.returncode > 1:
        out.append("grep: " + p.stderr.decode("utf-8", "replace").strip())
    names = []
    if spec["pattern"]:
        for d, dirs, files in os.walk(where):
            dirs[:] = sorted(x for x in dirs if x != ".git")
            for f in sorted(files):
                if spec["pattern"].lower() in f.lower() and (not spec["glob"] or fnmatch.fnmatch(f, spec["glob"])):
                    names.append(os.path.relpath(os.path.join(d, f), root))
            if len(names) > spec["max_files"]:
                break
    if lines:
        head = "%%d matching lines" %% len(lines)
        if len(lines) > len(out) - (1 if p.returncode > 1 else 0):
            head += ", the first %%d shown (narrow the search with path or glob)" %% spec["max_lines"]
        print(head + ":\n" + "\n".join(out))
    elif p.returncode > 1:
        print("\n".join(out))
    else:
        print("No line matches.")
    if names:
        print("Files whose names hold the pattern:\n" + "\n".join(names[:spec["max_files"]]))
globals().pop("_crucible_swe_search")(%s)
`

// search finds pattern in the repository's files (within rel and files
// matching glob) and files whose names hold it.
func (l *loop) search(ctx context.Context, pattern, p, glob string, regex bool) string {
	rel := "."
	if p != "" {
		var err error
		if rel, err = repoPath(p); err != nil {
			return "error: " + err.Error()
		}
	}
	if pattern == "" {
		return "error: the pattern is empty"
	}
	l.emit(StepTool, "search: "+pattern)
	spec, _ := json.Marshal(map[string]any{"root": modelRepoRoot, "where": path.Join(modelRepoRoot, rel), "rel": rel,
		"pattern": pattern, "glob": glob, "regex": regex, "max_lines": maxSearchLines, "max_len": maxSearchLineLen,
		"max_files": maxSearchFiles, "timeout": max(l.cfg.CallTimeout.Seconds()-1, 1)})
	lit, _ := json.Marshal(string(spec))
	res, err := l.exec(ctx, fmt.Sprintf(searchCell, lit), l.cfg.CallTimeout, false)
	if err != nil {
		return "error: the sandbox failed: " + err.Error()
	}
	if res.Status != sandbox.StatusOK {
		msg := fmt.Sprintf("error: the search failed: %s %s", res.Status, res.Reason)
		if res.Error != nil {
			msg += ": " + res.Error.Type + ": " + res.Error.Message
		}
		return msg
	}
	return clipText(string(res.Stdout), maxToolOutput)
}
