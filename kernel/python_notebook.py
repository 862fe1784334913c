"""Notebook habits for Crucible's Python kernel.

What code written for Jupyter expects, without IPython:

- display(obj, ...), a builtin: in a session cell, each object becomes one
  display of the cell's reply, in order (its richest representation and
  its text); in a stateless run, display prints the text form, as
  IPython's display does outside a notebook, and writes images as files.
- "!cmd" lines, "x = !cmd", and the line magics %time, %timeit, %who,
  %pwd, %ls, %matplotlib (a no-op: figures are always returned), and the
  cell magic %%time, in session cells only (a stateless program is a
  script, and a script with "!ls" is a SyntaxError, as under python3).
  nb_transform rewrites them line for line before the cell is compiled,
  so that tracebacks keep the cell's line numbers.
- the open matplotlib figures, returned as PNG images at the end of a
  cell (the reply's figures) and of a stateless run (files in /work).
- IPython.display (HTML, Markdown, Image, SVG, JSON, clear_output...),
  from a stand-in the kernel offers when IPython is not installed
  (python_ipython.py, loaded by NbIPythonLoader).

The kernel compiles this file on first use (python_notebook_boot.py's
nb_load). It runs in the kernel's process, with the user's code: a
convenience, never a security boundary. Everything it returns is bounded here, and
bounded again by the host, which trusts none of it.
"""

NB_MAX_DISPLAYS = 50  # per cell; one more says the rest was dropped
NB_MAX_RICH = 512 * 1024  # an HTML, Markdown, SVG or JSON form, in characters
NB_MAX_IMAGE = 4 << 20  # a PNG or JPEG, in bytes
NB_MAX_FIGURES = 20  # open figures returned per cell or run
NB_MAX_PIXELS = 25_000_000  # a figure larger is not rendered (memory)
NB_WORK = "/work"
# NB_IMAGES are the binary representations (bytes, base64 in a reply); a
# session's host keeps PNG and shows a JPEG as its text form
# (sandbox.DisplayMIMEs). NB_IMAGE_FILES are the file extensions of the
# images a stateless run's display writes.
NB_IMAGES = ("image/png", "image/jpeg")
NB_IMAGE_FILES = {"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg"}

# NB_DISPLAYS collects a session cell's displays; None in a stateless run,
# whose displays are printed (nb_display).
NB_DISPLAYS = None


def nb_is_figure(obj):
    """Whether obj is a matplotlib Figure (without importing matplotlib)."""
    figure = sys.modules.get("matplotlib.figure")
    return figure is not None and isinstance(obj, figure.Figure)


def nb_figure_png(fig):
    """fig as PNG bytes with its labels (figure_labels) in a text chunk, or
    None when it is too large to render or cannot be saved (said on the
    interpreter's stderr)."""
    import io
    try:
        width, height = fig.get_size_inches() * fig.dpi
        if width * height > NB_MAX_PIXELS:
            print("crucible: a figure of %dx%d pixels is too large to return (at most %d pixels)"
                  % (width, height, NB_MAX_PIXELS), file=sys.__stderr__)
            return None
        try:
            metadata = {FIGURE_KEY: figure_labels(fig)}
        except Exception:  # a broken artist must not lose the figure
            metadata = None
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata=metadata)
        return buf.getvalue()
    except Exception as exc:
        print("crucible: a figure could not be saved: %s" % exc, file=sys.__stderr__)
        return None


def nb_open_figures():
    """The PNG bytes of the open figures the program drew on since they
    were last saved, at most NB_MAX_FIGURES; then every figure is closed.

    A figure saved with savefig into the working directory and unchanged
    since is not stale (drawing it clears the flag, any change sets it):
    it is not returned again, so a program that saved its chart to a file
    gets that file, not a second copy. A figure changed after its savefig
    is returned, and so is one last saved elsewhere (nb_saved_in_work
    false: /tmp/chart.png never comes back as a file).
    """
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    images = []
    try:
        numbers = plt.get_fignums()
        for number in numbers:
            fig = plt.figure(number)
            if not fig.stale and getattr(fig, "nb_saved_in_work", True):
                continue
            if len(images) == NB_MAX_FIGURES:
                print("crucible: only the first %d open figures are returned" % NB_MAX_FIGURES, file=sys.__stderr__)
                break
            png = nb_figure_png(fig)
            if png is not None:
                images.append(png)
    finally:
        try:
            plt.close("all")
        except Exception:
            pass
    return images


def nb_series_html(obj):
    """A pandas Series' table (a Series has no _repr_html_), or None."""
    cls = type(obj)
    if cls.__name__ == "Series" and cls.__module__.startswith("pandas") and hasattr(obj, "to_frame"):
        return obj.to_frame()._repr_html_()
    return None


def nb_rich(obj):
    """obj's richest representation as (mime, data), data text or bytes;
    None when it has none within the bounds. The order is JupyterLab's."""
    if nb_is_figure(obj):
        png = nb_figure_png(obj)
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close(obj)  # shown: not returned again at the cell's end
        return ("image/png", png) if png is not None else None
    bundle = {}
    mimebundle = getattr(obj, "_repr_mimebundle_", None)
    if callable(mimebundle) and not isinstance(obj, type):
        try:
            got = mimebundle()
            bundle = got[0] if isinstance(got, tuple) else got
        except Exception:
            bundle = {}
        if not isinstance(bundle, dict):
            bundle = {}
    methods = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
               ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"), ("image/jpeg", "_repr_jpeg_"),
               ("application/json", "_repr_json_"))
    for mime, name in methods:
        data = bundle.get(mime)
        if data is None and not isinstance(obj, type):
            method = getattr(obj, name, None)
            try:
                data = method() if callable(method) else None
                if data is None and mime == "text/html":
                    data = nb_series_html(obj)
            except Exception:  # a broken repr falls back to the next one
                data = None
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        if mime == "application/json" and data is not None:
            try:
                data = json_dumps(data)
            except Exception:
                data = None
        if mime in NB_IMAGES and isinstance(data, (bytes, bytearray)) and len(data) <= NB_MAX_IMAGE:
            return mime, bytes(data)
        if mime not in NB_IMAGES and isinstance(data, str) and len(data) <= NB_MAX_RICH:
            return mime, data
    return None


def nb_display(*objs):
    """display(obj, ...): show each object as a notebook does.

    In a session cell, each object is one display of the reply: its
    richest representation (nb_rich) and its text form. In a stateless
    run, the text form is printed on stdout, and an image is also written
    to /work as figure-N.png, .jpg or .svg (an artifact of the run).
    """
    import base64
    for obj in objs:
        rich = nb_rich(obj)
        text = safe_repr(obj)
        if NB_DISPLAYS is None:
            print(text)
            if rich is not None and rich[0] in NB_IMAGE_FILES:
                data = rich[1] if isinstance(rich[1], bytes) else rich[1].encode("utf-8")
                nb_write_image(data, NB_IMAGE_FILES[rich[0]])
            continue
        if len(NB_DISPLAYS) > NB_MAX_DISPLAYS:
            continue
        if len(NB_DISPLAYS) == NB_MAX_DISPLAYS:
            NB_DISPLAYS.append({"mime": "text/plain", "data": "",
                                "text": "crucible: only the first %d displays of a cell are shown" % NB_MAX_DISPLAYS})
            continue
        item = {"mime": "text/plain", "data": "", "text": text}
        if rich is not None:
            mime, data = rich
            item["mime"] = mime
            if isinstance(data, bytes):
                item["data"], item["base64"] = base64.b64encode(data).decode("ascii"), True
            else:
                item["data"] = data
        NB_DISPLAYS.append(item)


def nb_clear_output():
    """IPython's clear_output (python_ipython.py): forget the displays the
    running cell has shown so far; what it printed stays, and a stateless
    run's displays, printed already, stay too."""
    if NB_DISPLAYS is not None:
        del NB_DISPLAYS[:]


# IPY_FILE names the IPython stand-in's code in tracebacks.
IPY_FILE = "<crucible: IPython stand-in>"


def nb_ipython_spec(name, package):
    """The spec of a module of the IPython stand-in (python_ipython.py),
    which python_notebook_boot.py's NbIPythonFinder offers last."""
    import importlib.machinery
    return importlib.machinery.ModuleSpec(name, NbIPythonLoader(), origin=IPY_FILE, is_package=package)


class NbIPythonLoader:
    """Fills a module of the IPython stand-in: IPython.core.display runs
    the stand-in's code, decoded and compiled only now (IPY_SOURCE: its
    text compressed, which the kernel's start reads fastest);
    IPython.display holds its names; the package IPython get_ipython and,
    as the real one, its display submodule. The code policy's rules on
    imports are unchanged: the stand-in holds no module among its names
    and offers the user's display, nothing a program could not reach; it
    is imported under IPython's names, which no preset blocks."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        import importlib
        name = module.__name__
        if name == "IPython.core.display":
            import binascii
            import zlib
            source = zlib.decompress(binascii.a2b_base64(IPY_SOURCE)).decode("utf-8")
            module.__dict__.update(_show=display, _clear=nb_clear_output)
            exec(compile(source, IPY_FILE, "exec"), module.__dict__)
        elif name == "IPython.display":
            core = importlib.import_module("IPython.core.display")
            for key in core.__all__ + ["__all__", "__getattr__"]:
                setattr(module, key, getattr(core, key))
            module.__doc__ = core.__doc__
        elif name == "IPython":
            module.__doc__ = "Crucible's stand-in for IPython: IPython is not installed (python_ipython.py)."
            module.get_ipython = importlib.import_module("IPython.display").get_ipython


def nb_write_image(data, ext):
    """Write an image of a stateless run to /work, as figure-N.ext, N the
    first number free; the run's artifacts collect it."""
    for n in range(1, 10000):
        path = "%s/figure-%d.%s" % (NB_WORK, n, ext)
        try:
            with open(path, "xb") as f:
                f.write(data)
            return
        except FileExistsError:
            continue
        except OSError as exc:
            print("crucible: a figure could not be written: %s" % exc, file=sys.__stderr__)
            return


def nb_save_open_figures():
    """At a stateless run's end: its open figures as files (nb_open_figures)."""
    if "matplotlib.pyplot" not in sys.modules:
        return
    for png in nb_open_figures():
        nb_write_image(png, "png")


# Magics. NB_LINE_MAGICS are the line magics a cell may use; a payload
# magic runs code given after its name, which the code policy checks as
# code (see nb_transform).
NB_LINE_MAGICS = ("time", "timeit", "who", "pwd", "ls", "matplotlib")
NB_PAYLOAD_MAGICS = ("time", "timeit")
NB_CELL_MAGICS = ("time",)
NB_NOT_HERE = {
    "pip": "packages come with the image (crucible image ls); nothing is installed at run time",
    "conda": "packages come with the image (crucible image ls); nothing is installed at run time",
    "load_ext": "no IPython extensions are loaded", "reload_ext": "no IPython extensions are loaded",
    "autoreload": "no IPython extensions are loaded", "run": "import the module instead",
    "load": "no network; paste the code in the cell", "env": "use os.environ",
}


class UsageError(Exception):
    """A magic the kernel does not support, or one used wrongly; line is
    the cell's line that has it."""

    line = 0


def nb_supported():
    return ("supported: !cmd, x = !cmd, %time, %timeit, %who, %pwd, %ls, %matplotlib (a no-op), "
            "and %%time as a cell's first line")


def nb_unknown(kind, name):
    why = NB_NOT_HERE.get(name)
    return UsageError("%s magic %s%s is not supported in Crucible%s; %s" % (
        kind, "%%" if kind == "cell" else "%", name, " (" + why + ")" if why else "", nb_supported()))


class NbTransform:
    """The result of nb_transform: the code to run, the code the policy
    checks (each a line for each of the cell's lines), the lines that run
    a shell, and whether %%time wraps the cell."""

    def __init__(self, code, policy_code, shell_lines, cell_time):
        self.code, self.policy_code = code, policy_code
        self.shell_lines, self.cell_time = shell_lines, cell_time


def nb_transform(code):
    """Rewrite a cell's "!" and "%" lines into Python, line for line.

    Only a line that starts a statement is a magic or shell line: the
    tokenizer says where statements start, so a "!" or "%" inside a
    string, a bracket or a continued line is left alone. Each rewritten
    line keeps its indentation and its number. For the policy, a payload
    magic's line is its payload (the code it runs) and a shell line is
    "pass" (run_cell reports it as a finding of its own where the policy
    blocks subprocess). Raises UsageError for an unsupported magic.
    """
    if "!" not in code and "%" not in code:
        return NbTransform(code, code, [], False)
    import tokenize
    # Lines as the tokenizer and the compiler count them: at "\n" only
    # (str.splitlines also splits at form feeds and U+2028, which may sit
    # inside a string).
    lines = [line + "\n" for line in code.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    cell_time = False
    first = next((i for i, l in enumerate(lines) if l.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        words = lines[first].strip()[2:].split(None, 1)
        name = words[0] if words else ""
        if name not in NB_CELL_MAGICS or len(words) > 1:
            exc = nb_unknown("cell", name)
            exc.line = first + 1
            raise exc
        cell_time = True
        lines[first] = "\n"
    run_lines, policy_lines, shell_lines = [], [], []
    # At a statement's start the tokenizer has ended the line before
    # with NEWLINE (or NL: a blank or comment line), outside brackets; in
    # a string running over lines it asks for the next line with no token
    # on the last one read.
    state = {"last": tokenize.NEWLINE, "row": 0, "depth": 0}
    source = iter(lines)

    def readline():
        line = next(source, "")
        if line and state["last"] in (tokenize.NEWLINE, tokenize.NL) and state["depth"] == 0 \
                and state["row"] == len(run_lines):
            number = len(run_lines) + 1
            try:
                rewritten = nb_rewrite(line, number)
            except UsageError as exc:
                exc.line = number
                raise
            if rewritten is not None:
                run, checked, shell = rewritten
                run_lines.append(run)
                policy_lines.append(checked)
                if shell:
                    shell_lines.append(number)
                return run
        if line:
            run_lines.append(line)
            policy_lines.append(line)
        return line

    try:
        for tok in tokenize.generate_tokens(readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                state["depth"] += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                state["depth"] = max(0, state["depth"] - 1)
            state["last"], state["row"] = tok.type, tok.end[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the rest stays as written: compiling it reports the error
    rest = list(source)
    run_lines += rest
    policy_lines += rest
    return NbTransform("".join(run_lines), "".join(policy_lines), shell_lines, cell_time)


def nb_rewrite(line, number):
    """A statement line's rewriting as (run, policy, is_shell), or None
    when it is plain Python."""
    body = line.lstrip(" \t")
    indent = line[:len(line) - len(body)]
    body = body.rstrip("\r\n")
    end = line[len(indent) + len(body):] or "\n"
    target = None
    head, sep, tail = body.partition("=")
    if sep and head.strip().isidentifier() and tail.lstrip().startswith("!"):
        target, body = head.strip(), tail.lstrip()
    if body.startswith("!"):
        call = "__crucible__.shell(%r, capture=%r)" % (body[1:], target is not None)
        if target:  # the policy sees the name bound
            return indent + target + " = " + call + end, indent + target + " = None" + end, True
        return indent + call + end, indent + "pass" + end, True
    if target is not None or not body.startswith("%") or body.startswith("%%"):
        if body.startswith("%%"):
            raise nb_unknown("cell", body[2:].split(None, 1)[0] if body[2:].split() else "")
        return None
    words = body[1:].split(None, 1)
    name = words[0] if words else ""
    arg = words[1] if len(words) > 1 else ""
    if name not in NB_LINE_MAGICS:
        raise nb_unknown("line", name)
    if name == "ls":
        call = "__crucible__.shell(%r, capture=False)" % ("ls " + arg).strip()
        return indent + call + end, indent + "pass" + end, True
    if name in NB_PAYLOAD_MAGICS:
        if not arg.strip():
            raise UsageError("%%%s needs a statement after it, as in %%%s sum(range(10))" % (name, name))
        call = "__crucible__.%s(%r, %d)" % (name, arg, number)
        return indent + call + end, indent + arg + end, False
    call = "__crucible__.%s(%r)" % (name, arg)
    return indent + call + end, indent + "pass" + end, False


class NbMagics:
    """__crucible__, the builtin a rewritten line calls."""

    def shell(self, command, capture=False):
        """Run command through /bin/sh in the sandbox, its output the
        cell's (captured as a list of lines with capture); the exit code
        is left in _exit_code, as IPython does."""
        import subprocess
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        out = subprocess.PIPE if capture else sys.stdout
        err = sys.stderr
        proc = None
        try:
            proc = subprocess.run(["/bin/sh", "-c", command], stdout=nb_stream(out), stderr=nb_stream(err))
        finally:
            NAMESPACE["_exit_code"] = proc.returncode if proc is not None else -1
        if capture:
            return proc.stdout.decode("utf-8", "replace").splitlines()
        return None

    def time(self, payload, line):
        """%time: run payload once and print its CPU and wall times; an
        expression's value is returned."""
        code, is_expr = nb_compile(payload, line)
        cpu0, wall0 = nb_clock()
        try:
            return eval(code, NAMESPACE) if is_expr else exec(code, NAMESPACE)
        finally:
            nb_print_times(cpu0, wall0)

    def timeit(self, payload, line):
        """%timeit: run payload in loops, as timeit does (names it binds
        are local to the loop), and print the time per run."""
        import time as clock
        loop = nb_loop(payload, line)
        number = 1
        while True:  # as timeit.Timer.autorange: a loop of at least 0.2 s
            elapsed = loop(number, clock.perf_counter)
            if elapsed >= 0.2 or number >= 10 ** 7:
                break
            number *= 10
        per = [elapsed / number] + [loop(number, clock.perf_counter) / number for _ in range(4)]
        mean = sum(per) / len(per)
        std = (sum((p - mean) ** 2 for p in per) / len(per)) ** 0.5
        print("%s ± %s per loop (mean ± std. dev. of %d runs, %d loop%s each)" % (
            nb_duration(mean), nb_duration(std), len(per), number, "" if number == 1 else "s"))

    def who(self, arg):
        """%who: the names the cells defined, sorted."""
        names = sorted(k for k in NAMESPACE if not k.startswith("_") and k not in ("In", "Out"))
        print("\t".join(names) if names else "Interactive namespace is empty.")

    def pwd(self, arg):
        """%pwd: the working directory."""
        return os.getcwd()

    def matplotlib(self, arg):
        """%matplotlib: a no-op; open figures are always returned."""


def nb_stream(stream):
    """A stream a child process can write to: its file descriptor, or the
    process's own stdout or stderr when the cell replaced it."""
    if not hasattr(stream, "fileno"):
        return stream
    try:
        return stream.fileno()
    except Exception:
        return 1 if stream is sys.stdout else 2


def nb_compile(payload, line):
    """Compile a magic's payload as the cell's line `line`: an expression
    for eval when it is one, else statements."""
    import ast
    filename = "<cell-%d>" % NB_CELL_ID
    try:
        tree, is_expr = ast.parse(payload, filename, "eval"), True
    except SyntaxError:
        tree, is_expr = ast.parse(payload, filename, "exec"), False
    ast.increment_lineno(tree, line - 1)
    return compile(tree, filename, "eval" if is_expr else "exec"), is_expr


def nb_loop(payload, line):
    """A function of (n, timer) that runs payload n times, compiled as the
    cell's line `line`, and returns the time the loop took."""
    import ast
    filename = "<cell-%d>" % NB_CELL_ID
    body = ast.parse(payload, filename, "exec").body
    func = ast.parse("def loop(_n, _timer):\n    _t0 = _timer()\n    for _ in range(_n):\n        pass\n"
                     "    return _timer() - _t0\n", filename, "exec")
    func.body[0].body[1].body = body or [ast.Pass()]
    ast.fix_missing_locations(func)
    ast.increment_lineno(func, line - 1)
    scope = {}
    exec(compile(func, filename, "exec"), NAMESPACE, scope)
    return scope["loop"]


def nb_clock():
    import time as clock
    return clock.process_time(), clock.perf_counter()


def nb_print_times(cpu0, wall0):
    cpu1, wall1 = nb_clock()
    print("CPU times: total: %s\nWall time: %s" % (nb_duration(cpu1 - cpu0), nb_duration(wall1 - wall0)))


def nb_duration(seconds):
    """A duration as IPython prints it: s, ms, µs or ns, 3 significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return "%.3g %s" % (seconds / scale, unit)
    return "%.3g ns" % (seconds * 1e9)


# NB_CELL_ID names the running cell for a magic's payload ("<cell-N>").
NB_CELL_ID = 0


builtins.__crucible__ = NbMagics()
