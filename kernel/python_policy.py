"""Crucible's static code policy for Python.

check_policy(code, rules) parses a program with the interpreter's own ast
module and returns what the rules forbid in it: the kernel calls it just
before it runs a stateless program or a session cell, in the sandbox, and
a zygote can call the same entry point. It is a seatbelt, never the
boundary: it sees what is written, not what is computed at run time
(getattr(__builtins__, "ev" + "al") passes as far as the name goes), and
whatever passes runs in the same sandbox as everything else.

rules is the host's sandbox.CodeRules as a dict: mode, preset, modules,
calls, introspection, attributes, members. A finding is a dict: rule, line, column
(1-based, in characters), snippet (the line, trimmed and cut), message.
A syntax error is no finding: the program then fails with it, as without
a policy. The check never raises: a tree the interpreter cannot build
(too deep) is one "uncheckable" finding. Its work is one parse and one
walk of the tree, under the run's own CPU, memory and time limits.
"""

POLICY_MAX_FINDINGS = 50
POLICY_MAX_SNIPPET = 120
POLICY_GETATTRS = ("getattr", "setattr", "delattr", "hasattr")


def check_policy(code, rules):
    """The findings of rules in code, in source order, at most POLICY_MAX_FINDINGS."""
    try:
        import ast
        tree = ast.parse(code, "<policy>", "exec")
    except SyntaxError:
        return []
    except Exception as exc:  # RecursionError, MemoryError: too deep to build
        return [{"rule": "uncheckable", "line": 0, "column": 0, "snippet": "",
                 "message": "the code could not be parsed for the check (%s)" % type(exc).__name__}]
    try:
        return PolicyChecker(ast, code, rules).check(tree)
    except Exception as exc:
        return [{"rule": "uncheckable", "line": 0, "column": 0, "snippet": "",
                 "message": "the check failed (%s)" % type(exc).__name__}]


class PolicyChecker:
    """One check of one program's syntax tree."""

    def __init__(self, ast, code, rules):
        self.ast = ast
        self.lines = code.split("\n")
        self.preset = rules.get("preset") or "policy"
        self.modules = set(rules.get("modules") or ())
        self.calls = set(rules.get("calls") or ())
        self.introspection = set(rules.get("introspection") or ())
        self.attributes = set(rules.get("attributes") or ())
        self.members = set(rules.get("members") or ())
        self.aliases = {}  # a name bound by an import -> the module it names
        self.found = []

    def check(self, tree):
        ast = self.ast
        nodes = list(ast.walk(tree))  # iterative: no recursion on deep trees
        for node in nodes:  # the modules' names, in any scope, first
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.module(node, alias.name, "import")
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and node.module:
                    self.module(node, node.module, "from-import")
                    self.imported_members(node)
            elif isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                self.name(node)
            elif isinstance(node, ast.Attribute):
                self.attribute(node)
            if len(self.found) >= 4 * POLICY_MAX_FINDINGS:
                break
        self.found.sort(key=lambda f: (f["line"], f["column"]))
        return self.found[:POLICY_MAX_FINDINGS]

    def module(self, node, name, how):
        top = name.split(".")[0]
        for blocked in (name, top):
            if blocked in self.modules:
                self.add(node, "blocked-import", "module %s is blocked (%s), by %s" % (blocked, self.preset, how))
                return

    def name(self, node):
        if node.id in self.calls:
            self.add(node, "blocked-call", "%s is blocked (%s)" % (node.id, self.preset))
        elif node.id in self.introspection:
            self.add(node, "evasion-introspection", "%s() reaches a namespace by name" % node.id)
        elif node.id in self.attributes:
            self.add(node, "evasion-attribute", "%s leads to the interpreter's internals" % node.id)

    def attribute(self, node):
        ast = self.ast
        if node.attr in self.attributes:
            self.add(node, "evasion-attribute", "attribute %s leads to the interpreter's internals" % node.attr)
        elif isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            member = self.aliases[node.value.id] + "." + node.attr
            if member in self.members:
                self.add(node, "evasion-member", "%s reaches what the policy blocks (%s)" % (member, self.preset))

    def imported_members(self, node):
        for alias in node.names:
            member = node.module + "." + alias.name
            if member in self.members or (alias.name == "*" and any(m.startswith(node.module + ".") for m in self.members)):
                self.add(node, "evasion-member", "%s reaches what the policy blocks (%s)" % (member, self.preset))

    def call(self, node):
        ast = self.ast
        func = node.func
        fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        first = node.args[0] if node.args else None
        literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
        if fname in ("__import__", "import_module"):
            if literal:
                self.module(node, first.value, fname + "()")
            elif first is not None:
                self.add(node, "dynamic-import", "%s() of a name computed at run time cannot be checked" % fname)
        if isinstance(func, ast.Name) and func.id in POLICY_GETATTRS and len(node.args) >= 2:
            attr = node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                name = attr.value
                if (name.startswith("__") and name.endswith("__")) or name in self.calls:
                    self.add(node, "evasion-getattr", "%s() with the name %r reaches what the policy blocks" % (func.id, name[:40]))

    def add(self, node, rule, message):
        line = getattr(node, "lineno", 0) or 0
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        offset = getattr(node, "col_offset", 0) or 0
        column = len(text.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1
        snippet = text.strip()
        if len(snippet) > POLICY_MAX_SNIPPET:
            snippet = snippet[:POLICY_MAX_SNIPPET] + "\u2026"
        self.found.append({"rule": rule, "line": line, "column": column, "snippet": snippet, "message": message})
