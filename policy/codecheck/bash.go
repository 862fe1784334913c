package codecheck

import (
	"errors"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Bounds of the bash check. The bash parser has no nesting limit of its
// own and recurses on nested compound commands and arithmetic: code
// larger than MaxBashBytes, or nested deeper than MaxNesting by the
// conservative count of bashNesting, is one "uncheckable" finding, not
// parsed.
const (
	MaxBashBytes = 64 << 10
	MaxNesting   = 100
)

// bashWrappers run the command word that follows them.
var bashWrappers = []string{"builtin", "command", "env", "exec", "nice", "nohup", "setsid", "stdbuf", "time", "timeout", "xargs"}

// CheckBash parses code as bash and returns its simple commands whose
// command word is one of p.BashCommands: by name or path ("curl",
// "/usr/bin/curl"), also after a wrapper that runs it ("env -i curl",
// "xargs wget": after a wrapper, every literal word is taken for a
// command word, "xargs echo curl" too). It sees only command words written literally: not a
// command in a variable ("$c"), built at run time, run by another
// interpreter, nor bash's own /dev/tcp redirections; the sandbox has no
// network whatever the script runs. A script the parser refuses is one
// "uncheckable" finding.
func CheckBash(code string, p *Preset, mode sandbox.PolicyMode) []sandbox.Finding {
	if len(code) > MaxBashBytes {
		return []sandbox.Finding{{Rule: RuleUncheckable, Message: "bash code larger than " + strconv.Itoa(MaxBashBytes) + " bytes is not checked"}}
	}
	if bashNesting(code) > MaxNesting {
		return []sandbox.Finding{{Rule: RuleUncheckable, Message: "bash code nested deeper than " + strconv.Itoa(MaxNesting) + " levels is not checked"}}
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(code), "")
	if err != nil {
		var perr syntax.ParseError
		if errors.As(err, &perr) {
			return sandbox.BoundFindings([]sandbox.Finding{lineFinding(code, int(perr.Pos.Line()), int(perr.Pos.Col()), RuleUncheckable,
				"the bash parser could not read the code ("+perr.Text+"), so it was not checked")})
		}
		return []sandbox.Finding{{Rule: RuleUncheckable, Message: "the bash parser could not read the code: " + err.Error()}}
	}
	var found []sandbox.Finding
	syntax.Walk(file, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(found) >= sandbox.MaxFindings {
			return len(found) < sandbox.MaxFindings
		}
		// The command word, and after a wrapper every literal word (its
		// options and arguments come first: "env -i curl", "timeout 5 nc").
		wrapped := false
		for _, w := range call.Args {
			name := path.Base(w.Lit())
			if slices.Contains(p.BashCommands, name) {
				found = append(found, lineFinding(code, int(w.Pos().Line()), int(w.Pos().Col()), RuleBlockedCommand,
					"command "+name+" "+blockedWords(mode)+" ("+p.Name+"): a network tool"))
				break
			}
			wrapped = wrapped || slices.Contains(bashWrappers, name)
			if !wrapped {
				break
			}
		}
		return true
	})
	return sandbox.BoundFindings(found)
}

// bashOpener and bashCloser are the words and characters that open and
// close a level the bash parser recurses into.
var (
	bashOpener = regexp.MustCompile(`[({\[]|\b(?:if|case|while|until|for|select|function)\b`)
	bashCloser = regexp.MustCompile(`[)}\]]|\b(?:fi|esac|done)\b`)
)

// bashNesting estimates from above how deep code nests: the most levels
// open at once, counting every opener in the text, quoted or not, and
// only the closers outside single and double quotes (as far as a scan
// that knows nothing else of bash tells), so that a string of closers
// cannot hide the openers before it. MaxBashBytes bounds what a miscount
// could let through.
func bashNesting(code string) int {
	quoted := quotedRanges(code)
	type mark struct {
		at   int
		open bool
	}
	var marks []mark
	for _, m := range bashOpener.FindAllStringIndex(code, -1) {
		marks = append(marks, mark{m[0], true})
	}
	for _, m := range bashCloser.FindAllStringIndex(code, -1) {
		if !quoted[m[0]] {
			marks = append(marks, mark{m[0], false})
		}
	}
	slices.SortFunc(marks, func(a, b mark) int { return a.at - b.at })
	depth, most := 0, 0
	for _, m := range marks {
		if m.open {
			depth++
			most = max(most, depth)
		} else if depth > 0 {
			depth--
		}
	}
	return most
}

// quotedRanges marks the bytes of code inside '...' or "..." (a
// backslash escapes the next byte outside single quotes).
func quotedRanges(code string) []bool {
	in := make([]bool, len(code))
	var quote byte
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case c == '\\' && quote != '\'':
			if quote != 0 {
				in[i] = true
			}
			i++
			if i < len(code) && quote != 0 {
				in[i] = true
			}
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			in[i] = true
		}
	}
	return in
}
