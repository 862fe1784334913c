"""Crucible's static code policy for Python.

check_policy(code, rules) parses a program with the interpreter's own ast
module and returns what the rules forbid in it: the kernel calls it just
before it runs a stateless program or a session cell, in the sandbox, and
a zygote can call the same entry point. It is a seatbelt, never the
boundary: it sees what is written, not what is computed at run time
(getattr(x, "ev" + "al") is a finding because its name cannot be
checked, but m = tempfile; m._os is not followed), and whatever passes
runs in the same sandbox as everything else.

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
# The calls that take an attribute's name as a string: with a literal name
# the name is checked like an attribute; with one computed at run time (or
# the call named as a value, not called) nothing can be checked, and it is
# a finding. hasattr only answers yes or no, so only its literal is checked.
POLICY_GETATTRS = ("getattr", "setattr", "delattr", "attrgetter", "methodcaller")
POLICY_HASATTR = "hasattr"


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
        # What a finding says the policy does: in warn mode the program
        # runs, so what it names "would be blocked" (as the host's checks say).
        self.blocked = "is blocked" if rules.get("mode") == "block" else "would be blocked"
        self.modules = set(rules.get("modules") or ())
        self.calls = set(rules.get("calls") or ())
        self.introspection = set(rules.get("introspection") or ())
        self.attributes = set(rules.get("attributes") or ())
        self.members = set(rules.get("members") or ())
        self.aliases = {}  # a name bound by an import -> what it names, dotted
        self.callees = set()  # id() of each node that is a call's function
        self.judged = set()  # id() of each string a getattr-like call's name check saw
        self.found = []

    def check(self, tree):
        ast = self.ast
        nodes = list(ast.walk(tree))  # iterative: no recursion on deep trees
        for node in nodes:  # the imported names and the callees, in any scope, first
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = node.module + "." + alias.name
            elif isinstance(node, ast.Call):
                self.callees.add(id(node.func))
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
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.string(node)
            if len(self.found) >= 4 * POLICY_MAX_FINDINGS:
                break
        self.found.sort(key=lambda f: (f["line"], f["column"]))
        return self.found[:POLICY_MAX_FINDINGS]

    def module(self, node, name, how):
        top = name.split(".")[0]
        for blocked in (name, top):
            if blocked in self.modules:
                self.add(node, "blocked-import", "module %s %s (%s), by %s" % (blocked, self.blocked, self.preset, how))
                return

    def blocked_module_name(self, name):
        """The blocked module a bare name (an attribute, an imported member)
        is, or None: "os", and its private aliases in other modules ("_os"
        in tempfile, "_socket"), are the module itself."""
        for candidate in (name, name.lstrip("_")):
            if candidate in self.modules:
                return candidate
        return None

    def attribute_name(self, node, name, how):
        """Checks an attribute's name, written or given to getattr and its
        family as a literal: True if it was a finding."""
        if name.startswith("__") and name.endswith("__") and how != "attribute":
            self.add(node, "evasion-getattr", "%s with the name %r reaches what the policy blocks" % (how, name[:40]))
        elif name in self.attributes:
            rule = "evasion-attribute" if how == "attribute" else "evasion-getattr"
            self.add(node, rule, "attribute %s leads to the interpreter's internals (%s)" % (name, how))
        elif self.blocked_module_name(name):
            self.add(node, "blocked-import", "module %s %s (%s), reached as the attribute %s" % (self.blocked_module_name(name), self.blocked, self.preset, name))
        elif name in self.calls and how != "attribute":
            self.add(node, "evasion-getattr", "%s with the name %r reaches what the policy blocks" % (how, name[:40]))
        else:
            return False
        return True

    def last_name(self, node):
        """The last component of the dotted name node stands for: a Name's
        import (resolved through its alias), an Attribute's name."""
        ast = self.ast
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id).split(".")[-1]
        if isinstance(node, ast.Attribute):
            return node.attr
        return None

    def name(self, node):
        if self.last_name(node) in POLICY_GETATTRS and id(node) not in self.callees:
            self.add(node, "evasion-getattr", "%s named as a value, not called: the attribute names it gets cannot be checked" % node.id)
        if node.id in self.calls:
            self.add(node, "blocked-call", "%s %s (%s)" % (node.id, self.blocked, self.preset))
        elif node.id in self.introspection:
            self.add(node, "evasion-introspection", "%s() reaches a namespace by name" % node.id)
        elif node.id in self.attributes:
            self.add(node, "evasion-attribute", "%s leads to the interpreter's internals" % node.id)

    def attribute(self, node):
        if node.attr in POLICY_GETATTRS and id(node) not in self.callees:
            self.add(node, "evasion-getattr", "%s named as a value, not called: the attribute names it gets cannot be checked" % node.attr)
        if self.attribute_name(node, node.attr, "attribute"):
            return
        # A member is flagged on its module by any path: imported under
        # another name (import sys as s), or reached as another module's
        # attribute (pandas.io.common.sys, tempfile._sys).
        base = self.last_name(node.value)
        if base is not None:
            member = base.lstrip("_") + "." + node.attr
            if member in self.members:
                self.add(node, "evasion-member", "%s reaches what the policy blocks (%s)" % (member, self.preset))

    def string(self, node):
        if id(node) in self.judged:
            return
        # A literal string naming a blocked dunder ("0.__self__.__import__")
        # is how a name-resolving call that is not getattr (str.format's
        # fields, string.Formatter.get_field, operator.attrgetter's dotted
        # names) would be told to walk it.
        for attr in self.attributes:
            if attr.startswith("__") and attr in node.value:
                self.add(node, "evasion-attribute", "a string naming %s, which a call that resolves names could follow" % attr)
                return

    def imported_members(self, node):
        # A member is matched on its module's full name and on its last
        # component (from numpy.ctypeslib import load_library is
        # ctypeslib.load_library), as attribute() matches it.
        modules = (node.module, node.module.split(".")[-1].lstrip("_"))
        # from a blocked module, module() said it once: from socket import socket
        source_blocked = node.module in self.modules or node.module.split(".")[0] in self.modules
        for alias in node.names:
            blocked = not source_blocked and self.blocked_module_name(alias.name)
            member = node.module + "." + alias.name
            if blocked or (not source_blocked and member in self.modules):  # from pandas.io.common import os
                self.add(node, "blocked-import", "module %s %s (%s), by from-import of %s" % (blocked or member, self.blocked, self.preset, member))
            elif alias.name == "*":
                if any(m.startswith(mod + ".") for m in self.members for mod in modules):
                    self.add(node, "evasion-member", "%s reaches what the policy blocks (%s)" % (member, self.preset))
            elif any(mod + "." + alias.name in self.members for mod in modules):
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
        getter = self.last_name(func)
        if getter in POLICY_GETATTRS or getter == POLICY_HASATTR:
            self.getter(node, getter)

    def getter(self, node, getter):
        """Checks the names a getattr-like call gets: each must be a
        literal, checked like an attribute written in the code."""
        ast = self.ast
        if getter in ("attrgetter", "methodcaller"):
            names = node.args if getter == "attrgetter" else node.args[:1]
        else:
            names = node.args[1:2]
        starred = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        literal = names and not starred and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in names)
        if not literal:
            if getter != POLICY_HASATTR:
                self.add(node, "evasion-getattr", "%s() of a name computed at run time cannot be checked; write the attribute, or use a dict" % getter)
            return
        for a in names:
            self.judged.add(id(a))
            parts = a.value.split(".") if getter == "attrgetter" else [a.value]
            for part in parts:
                if self.attribute_name(node, part, getter + "()"):
                    return

    def add(self, node, rule, message):
        line = getattr(node, "lineno", 0) or 0
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        offset = getattr(node, "col_offset", 0) or 0
        column = len(text.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1
        snippet = text.strip()
        if len(snippet) > POLICY_MAX_SNIPPET:
            snippet = snippet[:POLICY_MAX_SNIPPET] + "\u2026"
        self.found.append({"rule": rule, "line": line, "column": column, "snippet": snippet, "message": message})
