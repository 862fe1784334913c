"""Every public name of the SDK has a docstring and type hints (the
reference is read with pydoc)."""

from __future__ import annotations

import inspect

import crucible


def public_members(obj):
    for name, member in inspect.getmembers(obj):
        if name.startswith("_"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def test_docstrings_and_hints() -> None:
    missing = []
    for name in crucible.__all__:
        if name == "__version__":
            continue
        obj = getattr(crucible, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue  # type aliases (Union)
        if not inspect.getdoc(obj):
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        for mname, m in public_members(obj):
            fn = m.fget if isinstance(m, property) else m
            if fn.__qualname__.split(".")[0] not in {c.__name__ for c in obj.__mro__}:
                continue  # inherited from the standard library (Exception, ...)
            if not (fn.__doc__ or "").strip():
                missing.append(f"{name}.{mname}")
            if "return" not in fn.__annotations__:
                missing.append(f"{name}.{mname} (no return type)")
    assert missing == []
