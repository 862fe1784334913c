package llm

import (
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CodeBlock is one block of code in a model's reply.
type CodeBlock struct {
	// Lang is the block's language, normalised: "python", "javascript"
	// or "bash" for any of their aliases, otherwise the lower-cased first
	// word of the info string ("output", "json", ...); "" when untagged.
	Lang string
	// Code is the block's text as written: line endings normalised,
	// trailing whitespace and leading and trailing blank lines removed,
	// the indentation common to its lines stripped.
	Code string
	// Closed is false when the reply ended inside the block: the model
	// ran out of tokens and the code is probably cut short.
	Closed bool
}

// langAliases maps lower-cased info-string words and file extensions to
// a canonical language.
var langAliases = map[string]string{
	"python": "python", "py": "python", "python3": "python", "py3": "python", "pycon": "python",
	"javascript": "javascript", "js": "javascript", "node": "javascript", "nodejs": "javascript",
	"mjs": "javascript", "cjs": "javascript",
	"bash": "bash", "sh": "bash", "shell": "bash", "console": "bash", "zsh": "bash",
	"shell-session": "bash", "sh-session": "bash", "shellsession": "bash",
}

// normLang reduces a fence's info string (or a caller's language name) to
// a language: `{.python}`, `python title="x.py"`, `python:main.py`,
// `language-python` and `main.py` all give "python".
func normLang(info string) string {
	s := strings.TrimLeft(strings.TrimSpace(info), "{.")
	if i := strings.IndexAny(s, " \t{},:"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(strings.ToLower(s), "language-")
	if l, ok := langAliases[s]; ok {
		return l
	}
	if l, ok := langAliases[strings.TrimPrefix(path.Ext(s), ".")]; ok {
		return l
	}
	return s
}

// normalize strips a byte-order mark and turns CRLF and CR into LF.
func normalize(s string) string {
	s = strings.TrimPrefix(s, "\ufeff")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// clean trims the lines' trailing whitespace, drops leading and trailing
// blank lines and strips the indentation common to the non-blank lines.
func clean(lines []string) string {
	var out []string
	prefix, first := "", true
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		out = append(out, l)
		if l == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ws, false
			continue
		}
		n := 0
		for n < len(prefix) && n < len(ws) && prefix[n] == ws[n] {
			n++
		}
		prefix = prefix[:n]
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	for i, l := range out {
		out[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(out, "\n")
}

// fence is an opening code fence.
type fence struct {
	char byte // '`' or '~'
	n    int  // its length, 3 or more
	info string
}

// openFence reports whether line, at any indentation, opens a fence.
func openFence(line string) (fence, bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return fence{}, false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	info := strings.TrimSpace(t[n:])
	if n < 3 || (t[0] == '`' && strings.Contains(info, "`")) {
		return fence{}, false
	}
	return fence{t[0], n, info}, true
}

// closedBy reports whether line closes the fence: only the fence's
// character, at least as many as opened it, at any indentation.
func (f fence) closedBy(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= f.n && strings.Trim(t, string(f.char)) == ""
}

// openTag finds an XML-ish code tag or Code Llama's [PYTHON].
var openTag = regexp.MustCompile(`(?i)<(code|python|execute|execute_python|execute_bash|bash|javascript)(\s[^>]*)?>|\[python\]`)

// classLang finds the language of <code class="language-python">.
var classLang = regexp.MustCompile(`language-([\w+-]+)`)

// tagLang is the language of a code tag with the given lower-cased name
// and attributes.
func tagLang(name, attrs string) string {
	switch name {
	case "python", "execute_python", "[python]":
		return "python"
	case "bash", "execute_bash":
		return "bash"
	case "javascript":
		return "javascript"
	case "code":
		if m := classLang.FindStringSubmatch(attrs); m != nil {
			return normLang(m[1])
		}
	}
	return ""
}

// indexFold is strings.Index, ignoring ASCII case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// thinkEnd returns the offset just past the last </think> or
// </thinking> in s, or -1.
func thinkEnd(s string) int {
	end := -1
	for _, tag := range []string{"</think>", "</thinking>"} {
		if i := strings.LastIndex(s, tag); i >= 0 && i+len(tag) > end {
			end = i + len(tag)
		}
	}
	return end
}

// proseBlocks appends the tagged code in seg, a stretch of text outside
// fences, to blocks. A closing reasoning tag discards everything before
// it. A tag counts if it opens a line, or if it is closed and its body
// spans lines (so "use <code>f()</code> here" is prose). An unclosed tag
// counts only if it opens a line of the final stretch (the reply was cut
// off inside it).
func proseBlocks(blocks []CodeBlock, seg string, final bool) []CodeBlock {
	if i := thinkEnd(seg); i >= 0 {
		blocks, seg = nil, seg[i:]
	}
	for pos := 0; ; {
		m := openTag.FindStringSubmatchIndex(seg[pos:])
		if m == nil {
			return blocks
		}
		start, bodyStart := pos+m[0], pos+m[1]
		name, attrs, closeTag := "[python]", "", "[/python]"
		if m[2] >= 0 {
			name = strings.ToLower(seg[pos+m[2] : pos+m[3]])
			closeTag = "</" + name + ">"
			if m[4] >= 0 {
				attrs = seg[pos+m[4] : pos+m[5]]
			}
		}
		lineStart := strings.TrimSpace(seg[strings.LastIndexByte(seg[:start], '\n')+1:start]) == ""
		k := indexFold(seg[bodyStart:], closeTag)
		if k < 0 {
			if final && lineStart {
				return append(blocks, CodeBlock{Lang: tagLang(name, attrs), Code: clean(strings.Split(seg[bodyStart:], "\n"))})
			}
			pos = bodyStart
			continue
		}
		body := seg[bodyStart : bodyStart+k]
		if lineStart || strings.Contains(body, "\n") {
			blocks = append(blocks, CodeBlock{Lang: tagLang(name, attrs), Code: clean(strings.Split(body, "\n")), Closed: true})
		}
		pos = bodyStart + k + len(closeTag)
	}
}

// CodeBlocks returns the code blocks of a model's reply, in order: fenced
// blocks (``` or ~~~, three or more, closed by a fence of the same
// character at least as long, at any indentation, so fences inside list
// items work) and, in the text between fences, blocks wrapped in <code>,
// <python>, <javascript>, <bash>, <execute>, <execute_python> or
// <execute_bash> tags or in Code Llama's [PYTHON]...[/PYTHON] (a tag
// counts when it opens a line or its content spans lines, so a
// "<code>f()</code>" mentioned in a sentence does not). Blocks
// before a closing </think> or </thinking> (a reasoning model's
// scratchpad) are left out. Code is as written: see ExtractBlock for the
// runnable form.
func CodeBlocks(reply string) []CodeBlock {
	return scan(normalize(reply))
}

// scan is CodeBlocks on normalised text.
func scan(s string) []CodeBlock {
	var blocks []CodeBlock
	lines := strings.Split(s, "\n")
	var prose []string
	for i := 0; i < len(lines); i++ {
		f, ok := openFence(lines[i])
		if !ok {
			prose = append(prose, lines[i])
			continue
		}
		blocks = proseBlocks(blocks, strings.Join(prose, "\n"), false)
		prose = prose[:0]
		j := i + 1
		for j < len(lines) && !f.closedBy(lines[j]) {
			j++
		}
		blocks = append(blocks, CodeBlock{Lang: normLang(f.info), Code: clean(lines[i+1 : j]), Closed: j < len(lines)})
		i = j
	}
	return proseBlocks(blocks, strings.Join(prose, "\n"), true)
}

// ExtractCode pulls the code to run in language lang ("python",
// "javascript" or "bash", or an alias such as "py", "js", "sh"; "" takes
// any language) out of a model's reply, for models without tool calling
// that are asked to answer with a fenced code block. ok is false when
// the reply holds no such code. The rules:
//
//   - The reply is normalised first: a byte-order mark is stripped and
//     CRLF line endings become LF. Anything up to a closing </think> or
//     </thinking> is reasoning and ignored.
//   - Blocks are found as CodeBlocks describes; prose around them is
//     ignored. Info strings are reduced to a language: `py`, `python3`,
//     `Python`, `{python}`, `{.python}`, `python title="x.py"`,
//     `python:main.py` and `main.py` are all python; `js` and `node` are
//     javascript; `sh`, `shell`, `zsh` and `console` are bash.
//   - Blocks tagged with lang are preferred. Only if there are none do
//     untagged blocks count, except, when lang is not bash, those that
//     look like shell commands (a `$ ` prompt on the first line, or every
//     line a command such as `pip install x` or `python main.py`) and
//     those that look like program output (no line looks like code). Blocks
//     tagged with another language (`bash` when python is wanted,
//     `output`, `text`, `json`, ...) never count.
//   - Of the blocks that count, the last non-empty one wins: a model that
//     writes a sketch and then "the full version" puts the final code
//     last, and a reply cut off by the token limit ends inside its latest
//     attempt. Blocks are never concatenated.
//   - A fence left open at the end of the reply (the model hit its token
//     limit) runs to the end of the reply and still counts (ok is true,
//     and ExtractBlock reports it as not Closed); an empty one does not.
//   - Code in a block has its lines' trailing whitespace, its leading and
//     trailing blank lines and its common indentation removed.
//   - Python written as an interactive session (first line starting with
//     `>>> `) is turned into a script: `>>> ` and `... ` prompts are
//     stripped and the lines without a prompt, the session's output, are
//     dropped. Likewise bash written as a session (first line starting
//     with `$ `): prompts are stripped, continuation lines after a
//     trailing backslash kept, output dropped.
//   - Tag contents are taken verbatim: HTML entities are not decoded.
//   - A reply with no blocks at all that is a JSON object is taken as a
//     mimicked tool call: the first string field named "code" (looked
//     for at the top, then in nested objects and in strings holding
//     JSON objects, keys in sorted order) is the code.
//   - Any other reply with no blocks is taken whole only if it is nothing
//     but code: its first line starts the way code in lang typically does
//     (`import `, `from `, `def `, `print(`, `#!`, `const `, ...) or its
//     first line and two thirds of its lines look like code, and no line
//     outside a triple-quoted string reads like a sentence of prose
//     ("Here is the code:", "This prints 42."). Otherwise ok is false.
func ExtractCode(reply string, lang string) (code string, ok bool) {
	b, ok := ExtractBlock(reply, lang)
	return b.Code, ok
}

// ExtractBlock is ExtractCode, returning the chosen block: its Code made
// runnable (session prompts and output removed) and whether it was
// Closed. Code taken from a reply without blocks is reported with the
// wanted language and as closed.
func ExtractBlock(reply string, lang string) (CodeBlock, bool) {
	want := normLang(lang)
	text := normalize(reply)
	blocks := scan(text)
	if len(blocks) == 0 {
		return bareCode(text, want)
	}
	var tagged, untagged *CodeBlock
	for _, b := range blocks {
		as := want
		switch {
		case want == "":
			as = b.Lang
		case b.Lang == want:
		case b.Lang == "" && (want == "bash" || mayBeCode(b.Code)):
		default:
			continue
		}
		b.Code = runnable(b.Code, as)
		switch {
		case b.Code == "":
		case b.Lang == "" && want != "":
			untagged = &b
		default:
			tagged = &b
		}
	}
	if tagged != nil {
		return *tagged, true
	}
	if untagged != nil {
		return *untagged, true
	}
	return CodeBlock{}, false
}

// runnable turns a session transcript in lang into a script; other code
// is returned as is.
func runnable(code, lang string) string {
	first, _, _ := strings.Cut(code, "\n")
	switch {
	case lang == "python" && (first == ">>>" || strings.HasPrefix(first, ">>> ")):
		var out []string
		for l := range strings.Lines(code) {
			l = strings.TrimSuffix(l, "\n")
			switch {
			case l == ">>>" || l == "...":
				out = append(out, "")
			case strings.HasPrefix(l, ">>> ") || strings.HasPrefix(l, "... "):
				out = append(out, l[4:])
			}
		}
		return clean(out)
	case lang == "bash" && (first == "$" || strings.HasPrefix(first, "$ ")):
		var out []string
		cont := false
		for l := range strings.Lines(code) {
			l = strings.TrimSuffix(l, "\n")
			switch {
			case cont:
				out = append(out, l)
			case l == "$" || strings.HasPrefix(l, "$ "):
				out = append(out, strings.TrimPrefix(strings.TrimPrefix(l, "$"), " "))
			default:
				continue
			}
			cont = strings.HasSuffix(l, "\\")
		}
		return clean(out)
	}
	return code
}

// shellCommands are programs whose invocation starts lines of shell
// snippets that models put next to code ("pip install x", "python x.py").
var shellCommands = map[string]bool{
	"pip": true, "pip3": true, "python": true, "python3": true, "node": true,
	"npm": true, "npx": true, "yarn": true, "pnpm": true, "conda": true, "uv": true,
	"poetry": true, "cd": true, "sudo": true, "apt": true, "apt-get": true,
	"brew": true, "export": true, "mkdir": true, "curl": true, "wget": true,
	"git": true, "chmod": true, "echo": true,
}

// isCommand reports whether line runs one of shellCommands (and is not,
// say, the Python assignment `python = 3`).
func isCommand(line string) bool {
	f := strings.Fields(line)
	return len(f) > 0 && shellCommands[f[0]] && (len(f) == 1 || !strings.HasPrefix(f[1], "="))
}

// mayBeCode reports whether an untagged block may be code in a language
// other than bash: it is not a shell snippet (a session with a `$ `
// prompt, or only commands and comments) and not program output (no
// line looks like code).
func mayBeCode(code string) bool {
	if code == "$" || strings.HasPrefix(code, "$ ") {
		return false
	}
	shell, codeLines := true, 0
	for l := range strings.Lines(code) {
		t := strings.TrimSpace(l)
		if codeLike(t) {
			codeLines++
		}
		shell = shell && (t == "" || strings.HasPrefix(t, "#") || isCommand(t))
	}
	return codeLines > 0 && !shell
}

// codeStarts are how replies that are nothing but code typically begin.
var codeStarts = map[string][]string{
	"python": {"import ", "from ", "def ", "async def ", "class ", "print(", "#!", ">>> ", "@", "if __name__"},
	"javascript": {"const ", "let ", "var ", "function ", "async function ", "import ", "console.",
		"require(", "class ", "export ", "#!", `"use strict"`, `'use strict'`},
	"bash": {"#!", "$ ", "set -"},
}

// codeWords are first words of code lines without punctuation.
var codeWords = map[string]bool{
	"return": true, "pass": true, "break": true, "continue": true, "raise": true,
	"yield": true, "import": true, "from": true, "def": true, "class": true,
	"if": true, "elif": true, "else": true, "for": true, "while": true, "try": true,
	"except": true, "finally": true, "with": true, "async": true, "await": true,
	"let": true, "const": true, "var": true, "function": true, "do": true, "done": true,
	"fi": true, "then": true,
}

// codeLike reports whether a line looks like code in most languages
// (a docstring's opening quotes count).
func codeLike(line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "//") || strings.HasPrefix(t, `"""`) || strings.HasPrefix(t, "'''") ||
		strings.ContainsAny(t, "=(){}[];") || isCommand(t) {
		return true
	}
	f := strings.Fields(t)
	return len(f) > 0 && codeWords[strings.TrimSuffix(f[0], ":")]
}

// proseLike reports whether a line reads like a sentence: unindented,
// starting with a capitalised word, three words or more, no =, and
// ending in . ! ? or : or holding three words made only of letters.
func proseLike(line string) bool {
	r, n := utf8.DecodeRuneInString(line)
	r2, _ := utf8.DecodeRuneInString(line[n:])
	f := strings.Fields(line)
	if !unicode.IsUpper(r) || !unicode.IsLower(r2) || len(f) < 3 || strings.Contains(line, "=") {
		return false
	}
	words := 0
	for _, w := range f {
		if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
			words++
		}
	}
	return words >= 3 || strings.ContainsAny(line[len(line)-1:], ".!?:")
}

// bareCode applies ExtractCode's rules for a reply without blocks.
func bareCode(text, want string) (CodeBlock, bool) {
	if i := thinkEnd(text); i >= 0 {
		text = text[i:]
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		var v any
		_ = json.Unmarshal([]byte(t), &v) // valid JSON: cannot fail
		code := clean(strings.Split(normalize(jsonCode(v, 3)), "\n"))
		return CodeBlock{Lang: want, Code: code, Closed: true}, code != ""
	}
	code := clean(strings.Split(text, "\n"))
	if code == "" {
		return CodeBlock{}, false
	}
	lines := strings.Split(code, "\n")
	inString := false // inside a triple-quoted string, where prose is fine
	codeLines, total := 0, 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		total++
		if !inString && proseLike(l) {
			return CodeBlock{}, false
		}
		if inString || codeLike(l) {
			codeLines++
		}
		if (strings.Count(l, `"""`)+strings.Count(l, `'''`))%2 == 1 {
			inString = !inString
		}
	}
	starts := codeStarts[want]
	if want == "" {
		starts = append(append(append([]string(nil), codeStarts["python"]...), codeStarts["javascript"]...), codeStarts["bash"]...)
	}
	typical := (want == "bash" || want == "") && isCommand(lines[0])
	for _, s := range starts {
		typical = typical || strings.HasPrefix(lines[0], s)
	}
	if !typical && !(codeLike(lines[0]) && 3*codeLines >= 2*total) {
		return CodeBlock{}, false
	}
	code = runnable(code, want)
	return CodeBlock{Lang: want, Code: code, Closed: true}, code != ""
}

// jsonCode finds the first string field named "code" in v, looking
// depth levels deep into objects and strings holding JSON objects.
func jsonCode(v any, depth int) string {
	if depth < 0 {
		return ""
	}
	switch x := v.(type) {
	case string:
		var inner map[string]any
		if json.Unmarshal([]byte(x), &inner) == nil {
			return jsonCode(inner, depth-1)
		}
	case map[string]any:
		if c, ok := x["code"].(string); ok {
			return c
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if c := jsonCode(x[k], depth-1); c != "" {
				return c
			}
		}
	}
	return ""
}
