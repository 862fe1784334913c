package codecheck

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// MaxJavaScriptBytes bounds the JavaScript code checked (CheckJavaScript).
const MaxJavaScriptBytes = 1 << 20

// CheckJavaScript parses code as JavaScript (an ES2020 script or module)
// and returns what p forbids in it: require(), module.require(), import
// declarations, export-from and import() of a blocked module, by its name
// with or without the "node:" prefix and its subpaths ("fs/promises" is
// fs); require() or import() of a name that is not a literal, and
// require used as a value (const r = require), as dynamic-import; and
// the members p.JSMembers names (process.binding), read or called, by a
// dot or a literal index (process["binding"]). Not caught: a member
// reached another way (globalThis.process.binding, const p = process),
// code built at run time (eval, new Function, vm is blocked as a
// module), and what an allowed module does.
//
// The parser bounds its own nesting (1000 levels of statements and of
// expressions), and its work is linear in the code's size, which
// MaxJavaScriptBytes bounds: the check runs on the host, where a 4 MiB
// program would cost half a second and 300 MB. Code larger, or that the
// parser refuses, is one "uncheckable" finding: node may accept what this
// parser does not, and what cannot be read cannot be passed.
func CheckJavaScript(code string, p *Preset, mode sandbox.PolicyMode) []sandbox.Finding {
	if len(code) > MaxJavaScriptBytes {
		return []sandbox.Finding{{Rule: RuleUncheckable, Message: "JavaScript code larger than " + strconv.Itoa(MaxJavaScriptBytes) + " bytes is not checked"}}
	}
	in := parse.NewInputString(code)
	c := &jsChecker{code: code, base: in.Bytes(), p: p, blocked: blockedWords(mode), requires: map[*js.Var]int{}, requireCalls: map[*js.Var]int{}}
	tree, err := js.Parse(in, js.Options{})
	if err != nil {
		var perr *parse.Error
		if errors.As(err, &perr) {
			return sandbox.BoundFindings([]sandbox.Finding{lineFinding(code, perr.Line, perr.Column, RuleUncheckable,
				"the JavaScript parser could not read the code ("+perr.Message+"), so it was not checked")})
		}
		return []sandbox.Finding{{Rule: RuleUncheckable, Message: "the JavaScript parser could not read the code: " + err.Error()}}
	}
	js.Walk(c, tree)
	c.requireAsValue()
	slices.SortStableFunc(c.found, func(a, b sandbox.Finding) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return sandbox.BoundFindings(c.found)
}

// requireAsValue reports require used other than called (const r =
// require), which hides the modules later required through it. The
// parser may share one node among several uses of a name, so uses are
// counted per node: more uses than calls is a use as a value.
func (c *jsChecker) requireAsValue() {
	for v, uses := range c.requires {
		if uses > c.requireCalls[v] {
			c.add(c.offset(v), RuleDynamicImport, "require used as a value: the modules required through it cannot be checked")
		}
	}
}

// jsChecker walks a JavaScript syntax tree.
type jsChecker struct {
	code string
	base []byte // the parser's input, which the tree's literals are slices of
	p    *Preset
	// blocked is what a finding says the policy does (blockedWords).
	blocked string
	found   []sandbox.Finding
	// requires counts the uses of each require node, requireCalls its
	// uses as the function called.
	requires, requireCalls map[*js.Var]int
}

// Enter implements js.IVisitor.
func (c *jsChecker) Enter(n js.INode) js.IVisitor {
	if len(c.found) >= sandbox.MaxFindings {
		return nil
	}
	switch n := n.(type) {
	case *js.ImportStmt:
		c.module(n.Module, "import")
	case *js.ExportStmt:
		if n.Module != nil {
			c.module(n.Module, "export from")
		}
	case *js.CallExpr:
		c.call(n)
	case *js.DotExpr:
		c.member(n, n.X)
	case *js.IndexExpr:
		c.member(n, n.X)
	case *js.Var:
		if string(n.Data) == "require" {
			c.requires[n]++
		}
	}
	return c
}

// Exit implements js.IVisitor.
func (c *jsChecker) Exit(js.INode) {}

// call checks a call: require and import() by their argument, the
// blocked member calls by their name.
func (c *jsChecker) call(n *js.CallExpr) {
	if name, ok := c.importer(n.X); ok {
		if v, isVar := n.X.(*js.Var); isVar {
			c.requireCalls[v]++
		}
		if len(n.Args.List) == 0 {
			return
		}
		if lit, ok := literal(n.Args.List[0].Value); ok {
			c.module(lit, name)
			return
		}
		c.add(c.offset(n.X), RuleDynamicImport, name+" of a name computed at run time cannot be checked")
	}
}

// member checks a member expression (a.b, a["b"]) against p.JSMembers,
// read or called. A member of require (require.resolve) is no use of
// require as a value.
func (c *jsChecker) member(x js.IExpr, obj js.IExpr) {
	if v, ok := obj.(*js.Var); ok && string(v.Data) == "require" {
		c.requireCalls[v]++
	}
	if name, at := memberName(x); name != "" && slices.Contains(c.p.JSMembers, name) {
		c.add(c.offset(at), RuleEvasionMember, name+" reaches node's internals or its module loader ("+c.p.Name+")")
	}
}

// importer reports whether x is require, module.require or import (in
// import()), and which.
func (c *jsChecker) importer(x js.IExpr) (string, bool) {
	switch x := x.(type) {
	case *js.Var:
		return "require", string(x.Data) == "require"
	case *js.LiteralExpr:
		return "import()", x.TokenType == js.ImportToken
	case *js.DotExpr:
		name, _ := memberName(x)
		return "module.require", name == "module.require"
	}
	return "", false
}

// memberName names a member expression of a variable, "process.binding",
// written with a dot or a literal index; at is a node of the source to
// place it by.
func memberName(x js.IExpr) (string, []byte) {
	var obj, prop js.IExpr
	switch x := x.(type) {
	case *js.DotExpr:
		obj, prop = x.X, x.Y
	case *js.IndexExpr:
		obj, prop = x.X, x.Y
	default:
		return "", nil
	}
	v, ok := obj.(*js.Var)
	if !ok {
		return "", nil
	}
	if lit, ok := literal(prop); ok { // process["binding"]
		return string(v.Data) + "." + unquote(lit), v.Data
	}
	switch p := prop.(type) { // a DotExpr's Y is a name, as a value
	case js.LiteralExpr:
		return string(v.Data) + "." + string(p.Data), v.Data
	case *js.LiteralExpr:
		return string(v.Data) + "." + string(p.Data), v.Data
	case *js.Var:
		return string(v.Data) + "." + string(p.Data), v.Data
	}
	return "", nil
}

// literal returns the source of a string literal or of a template
// literal without substitutions.
func literal(x js.IExpr) ([]byte, bool) {
	switch x := x.(type) {
	case *js.LiteralExpr:
		return x.Data, x.TokenType == js.StringToken
	case *js.TemplateExpr:
		return x.Tail, x.Tag == nil && len(x.List) == 0
	}
	return nil, false
}

// unquote strips a literal's quotes. Escapes are left as they are: a
// module name spelled with escapes is not a name node resolves any
// differently, and is reported only if it matches as written.
func unquote(lit []byte) string {
	s := string(lit)
	if len(s) >= 2 {
		s = s[1 : len(s)-1]
	}
	return s
}

// module checks a module specifier (the literal's source, quotes
// included) given to how ("require", "import", ...).
func (c *jsChecker) module(lit []byte, how string) {
	name := unquote(lit)
	bare := strings.TrimPrefix(name, "node:")
	for _, m := range c.p.JSModules {
		if bare == m || strings.HasPrefix(bare, m+"/") {
			c.add(c.offset(lit), RuleBlockedImport, "module "+name+" "+c.blocked+" ("+c.p.Name+"), by "+how)
			return
		}
	}
}

func (c *jsChecker) add(off int, rule, message string) {
	if len(c.found) < sandbox.MaxFindings {
		c.found = append(c.found, finding(c.code, off, rule, message))
	}
}

// offset returns where a node's text lies in the code, or -1. The parser
// gives nodes no positions, but the names and literals it keeps are
// slices of its input buffer (parse.Input.Shift): their address places
// them. A slice that is not in the buffer (a name the parser made up)
// has no place.
func (c *jsChecker) offset(x any) int {
	var b []byte
	switch x := x.(type) {
	case []byte:
		b = x
	case *js.Var:
		b = x.Data
	case *js.LiteralExpr:
		b = x.Data
	case *js.DotExpr:
		return c.offset(x.X)
	}
	if len(b) == 0 || len(c.base) == 0 {
		return -1
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(c.base))))
	if off < 0 || off+len(b) > len(c.base) || string(c.base[off:off+len(b)]) != string(b) {
		return -1
	}
	return off
}
