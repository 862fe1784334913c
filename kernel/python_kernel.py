"""Crucible's Python session kernel.

Runs cells in one persistent namespace. Requests arrive as JSON lines on
fd 3 and replies leave on fd 4: a private channel, never the user's
stdout. The program's own stdout and stderr stay the user's; after each
cell the kernel writes the host's end-of-cell marker on both, so the host
can tell which output belongs to which cell.

This program runs inside the sandbox as the unprivileged user, with every
restriction already in place: it is a convenience for the user's code,
not a security boundary.
"""

import ast
import base64
import builtins
import fcntl
import importlib
import io
import json
import linecache
import os
import resource
import signal
import sys
import traceback
import types

MAX_REPR = 64 * 1024


def private_fd(fd, mode):
    """Move a channel fd out of the user's way (fds 3 and 4 are theirs)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return os.fdopen(high, mode, encoding="utf-8")


REQUESTS = private_fd(3, "r")
REPLIES = private_fd(4, "w")
NAMESPACE = {"__name__": "__main__", "__builtins__": __builtins__}
KERNEL_FILE = __file__


def send(message):
    REPLIES.write(json.dumps(message) + "\n")
    REPLIES.flush()


def type_name(exc):
    cls = type(exc)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return cls.__module__ + "." + cls.__qualname__


def describe(exc, filename):
    """The structured error of an exception raised by a cell."""
    tb = traceback.TracebackException.from_exception(exc)
    tb.stack = traceback.StackSummary.from_list(
        [f for f in tb.stack if f.filename != KERNEL_FILE])
    error = {"type": type_name(exc), "message": str(exc),
             "traceback": "".join(tb.format()).rstrip()}
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        error["line"] = exc.lineno or 0
        error["column"] = exc.offset or 0
        error["message"] = exc.msg
    else:
        for frame in reversed(tb.stack):
            if frame.filename == filename:
                error["line"] = frame.lineno
                break
    return error


def safe_repr(value):
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break the kernel
        text = "<repr failed: %s>" % type_name(exc)
    if len(text) > MAX_REPR:
        text = text[:MAX_REPR] + "…"
    return text


def figures():
    """Every open matplotlib figure as PNG (base64), then closed."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    images = []
    for number in plt.get_fignums():
        buf = io.BytesIO()
        try:
            plt.figure(number).savefig(buf, format="png")
            images.append(base64.b64encode(buf.getvalue()).decode("ascii"))
        except Exception as exc:
            print("crucible: figure %d could not be saved: %s" % (number, exc), file=sys.__stderr__)
    plt.close("all")
    return images


def run_cell(request):
    """Run one cell and return its reply."""
    filename = "<cell-%d>" % request["id"]
    reply = {"id": request["id"], "status": "ok"}
    try:
        tree = ast.parse(request["code"], filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), NAMESPACE)
        if last is not None:
            value = eval(compile(last, filename, "eval"), NAMESPACE)
            if value is not None:
                NAMESPACE["_"] = value
                reply["value"] = safe_repr(value)
                html = getattr(value, "_repr_html_", None)
                if callable(html):
                    try:
                        text = html()
                        if isinstance(text, str):
                            reply["html"] = text
                    except Exception:
                        pass
    except BaseException as exc:  # KeyboardInterrupt and SystemExit included
        reply["status"] = "error"
        reply["error"] = describe(exc, filename)
    return reply


def finish(request, reply):
    """Flush the cell's output, collect figures, mark the streams, reply."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        try:
            reply["figures"] = figures()
        except Exception:
            reply["figures"] = []
        marker = request["marker"].encode()
        for fd in (1, 2):
            try:
                os.write(fd, marker)
            except OSError:
                pass
        send(reply)
    finally:
        signal.signal(signal.SIGINT, previous)


def preload(names):
    """Import the modules a warm sandbox keeps ready; absent ones are skipped."""
    loaded = []
    for name in names:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:
            pass
    return loaded


def run_main(request):
    """Run a stateless program as a script would run, then exit.

    The program becomes __main__ at /code/main.py; an uncaught exception
    is printed as the interpreter prints it and exits with 1; sys.exit
    works as usual. The channel is closed first: the program never sees it.
    """
    limits = request.get("limits") or {}
    if limits.get("cpu_seconds"):
        # RLIMIT_CPU counts from the process's start: add what starting and
        # preloading used. Lowering one's own limits needs no privilege;
        # the program cannot raise the hard limits back.
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = int(usage.ru_utime + usage.ru_stime) + 1 + limits["cpu_seconds"]
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for key, which in (("file_size_bytes", resource.RLIMIT_FSIZE), ("open_files", resource.RLIMIT_NOFILE)):
        if limits.get(key):
            resource.setrlimit(which, (limits[key], limits[key]))
    os.environ.update(request.get("env") or {})
    code = request["code"]
    filename = request.get("filename") or "/code/main.py"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    main = types.ModuleType("__main__")
    main.__file__ = filename
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    sys.argv = [filename]
    REQUESTS.close()
    REPLIES.close()
    status = 0
    try:
        exec(compile(code, filename, "exec"), main.__dict__)
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException as exc:
        tb = traceback.TracebackException.from_exception(exc)
        tb.stack = traceback.StackSummary.from_list(
            [f for f in tb.stack if f.filename != KERNEL_FILE])
        sys.stderr.write("".join(tb.format()))
        status = 1
    exit_now(status)


def exit_status(exc):
    """The exit status sys.exit(arg) gives, printing a non-integer arg."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def exit_now(status):
    """End the process as the interpreter's shutdown would, as seen from
    outside: wait for non-daemon threads, run atexit handlers, flush the
    streams. Module teardown is skipped: the sandbox is destroyed next."""
    import atexit
    import threading
    try:
        threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


def main():
    names = []
    if len(sys.argv) > 2 and sys.argv[1] == "--preload":
        names = [n for n in sys.argv[2].split(",") if n]
    send({"ready": True, "python": sys.version.split()[0], "preloaded": preload(names)})
    while True:
        try:
            line = REQUESTS.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        request = json.loads(line)
        if request.get("op") == "run":
            run_main(request)
        reply = {"id": request.get("id"), "status": "error"}
        try:
            reply = run_cell(request)
        except KeyboardInterrupt:  # arrived between the cell and its reply
            reply = {"id": request["id"], "status": "error",
                     "error": {"type": "KeyboardInterrupt", "message": ""}}
        finish(request, reply)


main()
