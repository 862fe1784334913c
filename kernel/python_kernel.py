"""Crucible's Python session kernel.

Runs cells in one persistent namespace, or one per named context.
Requests arrive as JSON lines on fd 3 and replies leave on fd 4: a
private channel, never the user's stdout. The program's own stdout and
stderr stay the user's; the host tells which output belongs to which
cell by itself (what the pipes hold when the reply comes), so the kernel
only flushes them before it replies. A reply carries its request's id
and token.

This program runs inside the sandbox as the unprivileged user, with every
restriction already in place: it is a convenience for the user's code,
not a security boundary.
"""

# Only what a stateless run needs is imported here: a warm sandbox pays
# every import before it can serve, and the json package alone (through re
# and enum) costs more CPU than the rest of the kernel's start. What cells
# need is imported by import_cell_modules; signal is its C core, _signal,
# for the same reason.
import _signal as signal
import builtins
import fcntl
import importlib.machinery
import os
import resource
import sys
import types

MAX_REPR = 64 * 1024


def import_cell_modules():
    """Import what session cells need (a session kernel does it at start)."""
    global ast, base64, io, traceback
    import ast
    import base64
    import io
    import traceback


def json_codec():
    """Return compact JSON dumps and loads functions.

    They use the json package's C accelerator directly, without importing
    the package; if the accelerator is missing or its interface differs,
    they are the package's own.
    """
    try:
        import _json

        class Context:  # the attributes the C scanner reads
            strict = True
            object_hook = object_pairs_hook = None
            parse_float, parse_int, parse_constant = float, int, float
            memo = {}

        def unserializable(value):
            raise TypeError("not JSON serializable: %s" % type(value).__name__)

        scan = _json.make_scanner(Context())
        encode = _json.make_encoder(None, unserializable, _json.encode_basestring_ascii,
                                    None, ":", ",", False, False, True)

        def dumps(value):
            return "".join(encode(value, 0))

        def loads(text):
            value, _ = scan(text, 0)
            return value

        probe = {"a": [1, 2.5, None, True, "\u00e9\n\"x"], "b": {}}
        if loads(dumps(probe)) != probe:
            raise ValueError("the C codec does not round-trip")
        return dumps, loads
    except Exception:
        import json
        return json.dumps, json.loads


json_dumps, json_loads = json_codec()


def private_fd(fd, mode):
    """Move a channel fd out of the user's way (fds 3 and 4 are theirs):
    to fd 100 or above, or, under a lower open-files limit, to the top two
    fds it allows (a session may have as few as 16)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    low = 100 if soft == resource.RLIM_INFINITY else max(5, min(100, soft - 2))
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low)
    os.close(fd)
    return os.fdopen(high, mode, encoding="utf-8")


REQUESTS = private_fd(3, "r")
REPLIES = private_fd(4, "w")
KERNEL_FILE = __file__


def fresh_namespace():
    """An empty namespace for cells, as a script's __main__ starts."""
    return {"__name__": "__main__", "__builtins__": __builtins__}


# NAMESPACE is the namespace of the running cell's context, and between
# cells the default context's: what the notebook habits (a "!" line's
# _exit_code, %who, %time) act on. CONTEXTS holds every context's by name,
# the default's under "", each made on first use; MAX_CONTEXTS bounds the
# named ones (sandbox.MaxCellContexts), so that a caller cannot make the
# kernel keep namespaces without end. Contexts share the interpreter, its
# modules and the files: they are no boundary, only separate variables.
NAMESPACE = fresh_namespace()
CONTEXTS = {"": NAMESPACE}
MAX_CONTEXTS = 64


class ContextError(Exception):
    """A cell's context cannot be made: the session holds MAX_CONTEXTS."""


def enter_context(request):
    """Make the request's context the cell's: NAMESPACE its namespace,
    emptied first if the request resets it. Returns False when nothing is
    left to run: an empty cell that only reset a named context, whose
    place is then free. Raises ContextError for one context too many."""
    global NAMESPACE
    name = request.get("context") or ""
    if request.get("reset_context"):
        CONTEXTS.pop(name, None)
        if name and not request["code"].strip():
            return False
    namespace = CONTEXTS.get(name)
    if namespace is None:
        if name and len(CONTEXTS) - 1 >= MAX_CONTEXTS:
            raise ContextError("a session holds at most %d contexts besides the default one, and %r would be "
                               "one more: reset a context with no code to free its place" % (MAX_CONTEXTS, name))
        namespace = CONTEXTS[name] = fresh_namespace()
    NAMESPACE = namespace
    return True


def leave_context():
    """Make the default context's namespace NAMESPACE again."""
    global NAMESPACE
    NAMESPACE = CONTEXTS[""]


def read_to_end(fd):
    """Read fd to its end-of-file, close it, and return what it held."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def send(message):
    REPLIES.write(json_dumps(message) + "\n")
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


# FIGURE_KEY is the PNG text chunk holding a figure's labels (the Go
# side's kernel.FigureLabelsKey); MAX_LABEL and MAX_AXES bound them.
FIGURE_KEY = "crucible:figure"
MAX_LABEL = 200
MAX_AXES = 16


def figure_labels(fig):
    """A figure's title and its axes' titles and labels, as ASCII JSON."""
    def cut(text):
        return str(text)[:MAX_LABEL]
    axes = []
    for ax in fig.get_axes()[:MAX_AXES]:
        title = ax.get_title() or ax.get_title(loc="left") or ax.get_title(loc="right")
        axes.append({"title": cut(title), "xlabel": cut(ax.get_xlabel()), "ylabel": cut(ax.get_ylabel())})
    suptitle = getattr(fig, "_suptitle", None)
    return json_dumps({"title": cut(suptitle.get_text()) if suptitle is not None else "", "axes": axes})


def figures():
    """The open matplotlib figures as PNG (base64), then closed: those
    drawn on since they were last saved (nb_open_figures). Each PNG holds
    the figure's labels (figure_labels) in a FIGURE_KEY text chunk, unless
    they could not be read."""
    return [base64.b64encode(png).decode("ascii") for png in nb_open_figures()]


# CELL_RUNNING is true while a cell's own code runs. The host interrupts a
# cell with SIGINT, and a SIGINT can arrive late: after the cell ended,
# while the kernel replies or reads the next request. A KeyboardInterrupt
# raised there would end the kernel or drop the request it had just read
# (the host would wait for a reply that never comes), so the kernel's
# handler raises it only inside a cell, and once per cell.
CELL_RUNNING = False


def on_interrupt(signum, frame):
    """SIGINT handler of a session kernel: interrupt the running cell, if any."""
    global CELL_RUNNING
    if CELL_RUNNING:
        CELL_RUNNING = False
        raise KeyboardInterrupt


def run_cell(request):
    """Run one cell, in its context's namespace (enter_context), and
    return its reply; none of it when the policy blocks it.

    The cell's "!" and "%" lines are rewritten first (nb_transform); the
    policy checks the rewritten cell as nb_transform gives it for the
    policy, so a magic's payload is checked as code and a "!" line is a
    finding of its own where the policy blocks subprocess: the shell is
    subprocess by another name.
    """
    global CELL_RUNNING, NB_DISPLAYS, NB_CELL_ID
    filename = "<cell-%d>" % request["id"]
    reply = {"id": request["id"], "token": request["token"], "status": "ok"}
    NB_DISPLAYS, NB_CELL_ID = [], request["id"]
    try:
        cell = nb_transform(request["code"])
    except UsageError as exc:
        reply["status"] = "error"
        reply["error"] = {"type": "UsageError", "message": str(exc), "line": exc.line}
        return reply
    rules = request.get("policy")
    if rules:
        findings = check_policy(cell.policy_code, rules) + shell_findings(cell, rules)
        if findings:
            findings.sort(key=lambda f: (f["line"], f["column"]))
            reply["findings"] = findings[:POLICY_MAX_FINDINGS]
            if rules.get("mode") == "block":
                reply["status"] = "blocked"
                return reply
    try:
        if not enter_context(request):
            return reply
    except ContextError as exc:
        reply["status"] = "error"
        reply["error"] = {"type": "ContextError", "message": str(exc)}
        return reply
    cpu0, wall0 = nb_clock() if cell.cell_time else (0, 0)
    try:
        CELL_RUNNING = True
        tree = ast.parse(cell.code, filename, "exec")
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
        CELL_RUNNING = False
        reply["status"] = "error"
        reply["error"] = describe(exc, filename)
    finally:
        CELL_RUNNING = False
        # A cell may have replaced the handler: the kernel's is back before
        # the reply, so that a late SIGINT cannot end the kernel.
        try:
            signal.signal(signal.SIGINT, on_interrupt)
        except BaseException:
            pass
    if cell.cell_time:
        nb_print_times(cpu0, wall0)
    leave_context()
    if NB_DISPLAYS:
        reply["displays"] = NB_DISPLAYS
    NB_DISPLAYS = []
    return reply


def shell_findings(cell, rules):
    """A finding for each "!" or %ls line of a cell whose policy blocks
    subprocess (or os, through which a shell also runs)."""
    blocked = [m for m in ("subprocess", "os") if m in (rules.get("modules") or ())]
    if not blocked:
        return []
    lines = cell.code.split("\n")
    return [{"rule": "blocked-shell", "line": n, "column": 1, "snippet": request_line(lines, n),
             "message": "a shell line runs a command through module %s, which is blocked (%s)" % (
                 blocked[0], rules.get("preset") or "policy")} for n in cell.shell_lines]


def request_line(lines, n):
    return lines[n - 1].strip()[:POLICY_MAX_SNIPPET] if 0 < n <= len(lines) else ""


def finish(reply):
    """Flush the cell's output, collect figures, reply.

    The host takes the cell's output to be what is in the pipes once the
    reply has come: every buffer the cell may have written to is flushed
    first, the cell's own streams and the interpreter's.
    """
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    try:
        reply["figures"] = figures()
    except Exception:
        reply["figures"] = []
    send(reply)


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


def run_main(request, end=os._exit):
    """Run a stateless program as a script would run, then exit.

    The host has put the program at /code/main.py; it becomes __main__
    with a script's globals, an uncaught exception goes to sys.excepthook,
    and the process ends the way the interpreter's shutdown would be seen
    from outside (see exit_like_interpreter). The channel is closed first:
    the program never sees it.
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
    buffer_stdio_as(bool(os.environ.get("PYTHONUNBUFFERED")))
    code = request["code"]
    filename = request.get("filename") or "/code/main.py"
    rules = request.get("policy")
    if rules:
        # Checked before anything of the program runs, and answered on the
        # channel while the kernel alone holds it.
        findings = check_policy(code, rules)
        blocked = bool(findings) and rules.get("mode") == "block"
        send({"id": 0, "token": "", "status": "blocked" if blocked else "checked", "findings": findings})
        if blocked:
            os._exit(0)
    main = types.ModuleType("__main__")
    main.__dict__.update({
        "__file__": filename, "__cached__": None, "__annotations__": {},
        "__builtins__": builtins, "__package__": None, "__spec__": None,
        "__loader__": importlib.machinery.SourceFileLoader("__main__", filename),
    })
    sys.modules["__main__"] = main
    sys.argv = [filename]
    REQUESTS.close()
    REPLIES.close()
    status, interrupted = 0, False
    try:
        exec(compile(code, filename, "exec"), main.__dict__)
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == KERNEL_FILE:
            tb = tb.tb_next
        # The default hook prints the exception's own __traceback__, not
        # the one it is given: the kernel's frames leave both.
        exc.__traceback__ = tb
        try:
            sys.excepthook(type(exc), exc, tb)
        except BaseException:
            pass
        status, interrupted = 1, isinstance(exc, KeyboardInterrupt)
        del exc, tb
    nb_run_ended()
    exit_like_interpreter(status, main, interrupted, end)


def setup(request):
    """Make a warm session kernel the session it was taken for.

    The kernel started with the largest rlimits a session may have and
    the image's environment; the host sends the session's before its
    first cell: the rlimits are lowered to the session's (the kernel
    cannot raise them back, nor can a cell), the environment added, and
    the standard streams buffered as the session's PYTHONUNBUFFERED asks.
    """
    reply = {"id": request["id"], "token": request["token"], "status": "ok"}
    try:
        limits = request.get("limits") or {}
        for key, which in (("file_size_bytes", resource.RLIMIT_FSIZE), ("open_files", resource.RLIMIT_NOFILE),
                           ("processes", resource.RLIMIT_NPROC)):
            if limits.get(key):
                resource.setrlimit(which, (limits[key], limits[key]))
        os.environ.update(request.get("env") or {})
        buffer_stdio_as(bool(os.environ.get("PYTHONUNBUFFERED")))
    except Exception as exc:
        reply["status"] = "error"
        reply["error"] = {"type": type_name(exc), "message": str(exc)}
    return reply


def buffer_stdio_as(unbuffered):
    """Buffer stdout and stderr as an interpreter started with the
    program's environment would: PYTHONUNBUFFERED (non-empty) means no
    buffer at all, as `python -u`; else a block-buffered stdout and a
    line-buffered stderr. The kernel started with the language's default,
    so this only acts on a request that sets the variable otherwise.
    """
    if unbuffered == getattr(sys.stdout, "write_through", unbuffered):
        return
    import io  # loaded already: the interpreter's own stdio is made of it
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        try:
            old.flush()
        except BaseException:
            pass
        binary = open(fd, "wb", buffering=0 if unbuffered else -1, closefd=False)
        stream = io.TextIOWrapper(binary, encoding=old.encoding, errors=old.errors,
                                  line_buffering=name == "stderr" and not unbuffered,
                                  write_through=unbuffered)
        setattr(sys, name, stream)
        setattr(sys, "__" + name + "__", stream)


def exit_status(exc):
    """The exit status sys.exit(arg) gives, printing a non-integer arg."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def exit_like_interpreter(status, main, interrupted, end=os._exit):
    """End the process as the interpreter's shutdown is seen from outside.

    Non-daemon threads are joined and atexit handlers run; then the
    program's globals are released in CPython's order (single-underscore
    names first, __builtins__ last) and cycles collected, so finalizers run
    and files left open are flushed and closed; then the standard streams
    are flushed (exit status 120 if that fails, as CPython does). What is
    skipped is the teardown of every other module, which nothing outside
    can observe and which costs milliseconds: the sandbox is destroyed
    next. An uncaught KeyboardInterrupt ends the process by SIGINT, as
    CPython does. end(status) ends the process (os._exit; a zygote's
    rehearsal measures it first: learn_run_pages).
    """
    import atexit
    import gc
    # As CPython's shutdown: threads are joined only if the program
    # imported threading (importing it here would cost the run
    # milliseconds).
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    names = main.__dict__
    for phase in (lambda k: k.startswith("_") and not k.startswith("__"), lambda k: k != "__builtins__"):
        for key in [k for k in names if phase(k)]:
            try:
                names[key] = None
            except BaseException:
                pass
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            status = 120
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    end(status)


# A zygote serves the stateless runs of one sandbox slot, each in a fork
# of itself (the host side's zygote.go says why it is safe). It runs with
# real and saved ids the slot's zygote user and effective ids the run
# user, so that a child can become the run user for good without any
# privilege, and a process of the run user can neither signal, trace nor
# read it. It never runs user code.
ZYGOTE_FDS = 4  # a run's stdin, stdout, stderr and gate, in order
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
PR_CAPBSET_DROP = 24


def become_zygote(ids):
    """Take the zygote's ids, "zygote-uid:run-uid" (gids alike).

    Init started the interpreter as root with only the capabilities this
    needs. It drops them all from its bounding set, its supplementary
    groups, then takes real and effective ids the run user's, saved ids
    the zygote user's: leaving uid 0 clears every capability it had left.
    No process may trace or read it (not dumpable). No run exists yet: the
    preload runs as the run user would, access(2) included, and
    set_zygote_ids makes the real ids the zygote user's once it is done.
    Returns the C library, for the forks' prctl.
    """
    import ctypes
    import errno
    zygote_id, run_id = (int(n) for n in ids.split(":"))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:
                break  # past the last capability the kernel knows
            raise OSError(ctypes.get_errno(), "drop capability %d from the bounding set" % cap)
    os.setgroups([])
    os.setresgid(run_id, run_id, zygote_id)
    os.setresuid(run_id, run_id, zygote_id)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    return libc


MADV_COLLAPSE = 25
HUGE_PAGE = 2 << 20


def collapse_heap(libc):
    """Move the zygote's heap into huge pages, where whole ones fit.

    Every fork copies the page table of the zygote's private writable
    memory: with a preload of hundreds of modules, tens of megabytes,
    thousands of entries per fork, and as many for the fork to tear down
    and fault on. A huge page is one entry instead of 512; a fork splits
    one into small pages only where it writes (a write copies one small
    page, as before). In the data-science image this cut the CPU of a
    fork and its run by a few milliseconds. Only what is there is
    collapsed (MADV_COLLAPSE works on memory a process has and does not
    mark the mapping: memory touched later, the runs' among it, still
    comes in small pages, never a 2 MiB page zeroed for a few bytes).
    Nothing of it is seen by a program: the same memory, the same
    contents. A kernel without it refuses, and the zygote goes on as it
    was.
    """
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        # The private writable memory without a file: the C heap and the
        # anonymous mappings (Python's arenas, numpy's buffers).
        if not fields[1].startswith("rw") or fields[1][3] != "p" or len(fields) > 5 and fields[5] != "[heap]":
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        start, end = (start + HUGE_PAGE - 1) & -HUGE_PAGE, end & -HUGE_PAGE
        if start < end:
            libc.madvise(start, end - start, MADV_COLLAPSE)


def set_zygote_ids():
    """Make the real ids the zygote user's (the saved ones are): from
    here on no process of the run user may signal the zygote."""
    uid, gid = os.getresuid()[2], os.getresgid()[2]
    os.setresgid(gid, -1, -1)
    os.setresuid(uid, -1, -1)


def zygote(preloaded, libc):
    """Serve runs until the host closes the request socket.

    A request is one datagram carrying the file descriptors of a run to
    come: its stdin, stdout, stderr and gate. The zygote forks, reports
    the child's pid, waits for it and reports its wait status; the child
    makes itself the run (zygote_child).
    """
    import socket
    requests = socket.socket(fileno=REQUESTS.fileno())
    os.chdir("/")  # the working directory is the runs': replaced after each
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    hot = learn_run_pages(requests, libc)
    send({"ready": True, "python": sys.version.split()[0], "preloaded": preloaded,
          "prefaulted": sum(length for _, length in hot) // resource.getpagesize()})
    while True:
        message, fds, _, _ = socket.recv_fds(requests, 1 << 20, ZYGOTE_FDS)
        if not message:
            return
        if len(fds) != ZYGOTE_FDS:
            for fd in fds:
                os.close(fd)
            send({"status": "error", "error": {"type": "ValueError", "message": "a run needs %d file descriptors, got %d" % (ZYGOTE_FDS, len(fds))}})
            continue
        pid = os.fork()
        if pid == 0:
            zygote_child(fds, requests, libc, hot)
        for fd in fds:
            os.close(fd)
        send({"fork": {"pid": pid}})
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        send({"fork": {"exited": True, "wait_status": status}})


def zygote_child(fds, requests, libc, hot):
    """Become the run, then run it as run_main does a stateless program.

    At once: the ids become the run user's for good (real, effective and
    saved: nothing of the zygote user is left), the process leads a
    session of its own, the run's descriptors replace the standard
    streams, the zygote's channel is closed. The host moves the process
    into the run's cgroup; the process warms up (warm_up) and says on the
    gate, a stream socket, that it is ready. Before that, every random
    generator the preload seeded is reseeded (reseed): each fork draws
    its own seeds from the kernel, and seeding numpy's generator in a
    fresh fork costs a millisecond of copy-on-write faults, which are
    off the run's path here, as are the faults of the pages a run is
    known to write (prefault). When the run comes the host writes it on
    the gate (as run_main takes it, the program's code with it, which
    the host also put at /code/main.py) and ends it. Then, before the
    program's first line, the process is made dumpable again as any
    program is.
    """
    try:
        stdin, stdout, stderr, gate = fds
        gid, uid = os.getegid(), os.geteuid()
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        os.setsid()
        for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
            os.dup2(fd, target)
            os.close(fd)
        requests.detach()  # the descriptor is REQUESTS'
        REQUESTS.close()
        REPLIES.close()
        os.chdir("/work")
        reseed()
        warm_up(libc)
        prefault(libc, hot)
        os.write(gate, b"r")
        message = read_to_end(gate)
        if not message:
            os._exit(126)  # the slot is closing
        request = json_loads(message.decode())
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    except BaseException:
        os._exit(126)
    run_main(request)


WARM_UP = compile("import sys\nx = [str(i) for i in range(8)]\nsys.stdout.write('')\n", "<warm-up>", "exec")
WARM_UP_REQUEST = '{"op":"run","code":"","env":{},"limits":{"cpu_seconds":1,"file_size_bytes":1,"open_files":1}}'


def warm_up(libc):
    """Rehearse, while the fork waits for its run, what a run does first
    (decode the request, call prctl, read the limits and the environment,
    build __main__, compile and run code), with nothing of it kept: a fork copies a page the first time it writes to
    it, and this moves those copies off the run's path. It runs the
    kernel's own code, in namespaces thrown away. What it made is then
    frozen with the zygote's objects, so that the collection at the run's
    end scans the program's objects alone."""
    json_loads(WARM_UP_REQUEST)
    libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    resource.getrusage(resource.RUSAGE_SELF)
    for which in (resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE):
        resource.getrlimit(which)
    os.environ.update({})
    buffer_stdio_as(bool(os.environ.get("PYTHONUNBUFFERED")))
    types.ModuleType("__main__").__dict__.update({
        "__loader__": importlib.machinery.SourceFileLoader("__main__", "/code/main.py")})
    exec(compile("print(end='')", "<warm-up>", "exec"), {"__builtins__": builtins})
    exec(WARM_UP, {"__builtins__": builtins})
    import atexit
    import gc
    atexit._ncallbacks()
    gc.collect()
    gc.freeze()


# A run of a zygote slot is a fork: each page of the zygote's memory it
# writes is copied at the first write, a fault that costs microseconds
# (more in a virtual machine). The zygote learns once which pages the
# run's own path writes (the kernel's code from the request to the exit,
# atexit handlers and the threads' shutdown included) by rehearsing it in
# a fork of its own; every fork then copies those pages while it waits
# for its run, off the run's path.
PAGEMAP_PRESENT, PAGEMAP_EXCLUSIVE = 1 << 63, 1 << 56
MADV_POPULATE_WRITE = 23
REHEARSAL_CODE = "print(1)\n"


def own_pages():
    """The pages of this process's private writable memory that are its
    own, as /proc/self/pagemap says: present and mapped by this process
    alone (after a fork, those it wrote), by page number."""
    import array
    page = resource.getpagesize()
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    own = array.array("Q")
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        for fields in regions:
            if not fields[1].startswith("rw") or fields[1][3] != "p":
                continue
            start, end = (int(x, 16) // page for x in fields[0].split("-"))
            entries = memoryview(os.pread(fd, (end - start) * 8, start * 8)).cast("Q")
            own.extend(start + i for i, e in enumerate(entries)
                       if e & PAGEMAP_PRESENT and e & PAGEMAP_EXCLUSIVE)
    finally:
        os.close(fd)
    return own


def learn_run_pages(requests, libc):
    """Rehearse a run in a fork and return the page ranges it wrote,
    [(address, length)], for prefault; [] if the rehearsal failed.

    The fork does what a run's fork does before the run (zygote_child:
    reseed, warm up, and the channel closed), notes the pages it has of
    its own, then runs REHEARSAL_CODE as run_main runs a program, to the
    exit, and reports the pages it has of its own that it had not: those
    the run's path wrote. It runs only the kernel's code (the zygote
    never runs a user's) before any run exists, with the streams on
    /dev/null; it writes nothing but its report, on a pipe to the zygote.
    """
    import array
    page = resource.getpagesize()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            requests.detach()
            REQUESTS.close()
            REPLIES.close()
            # Its /proc/self/pagemap is root's while it is not dumpable;
            # no process but the zygote and init exists in the sandbox.
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            reseed()
            warm_up(libc)
            before = set(own_pages())
            fsize, nofile = resource.getrlimit(resource.RLIMIT_FSIZE)[0], resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            limits = {"cpu_seconds": 30}
            if fsize != resource.RLIM_INFINITY:
                limits["file_size_bytes"] = fsize
            if nofile != resource.RLIM_INFINITY:
                limits["open_files"] = nofile
            request = json_loads(json_dumps({"op": "run", "code": REHEARSAL_CODE, "env": {}, "limits": limits}))

            def report(status):
                wrote = array.array("Q", (n for n in own_pages() if n not in before))
                os.write(w, wrote.tobytes())
                os._exit(0)
            run_main(request, report)
        finally:
            os._exit(1)
    os.close(w)
    wrote = read_to_end(r)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return []
    pages = array.array("Q")
    pages.frombytes(wrote)
    ranges = []
    for n in sorted(pages):
        if ranges and ranges[-1][1] == n:
            ranges[-1][1] = n + 1
        else:
            ranges.append([n, n + 1])
    return [(first * page, (end - first) * page) for first, end in ranges]


def prefault(libc, hot):
    """Write-fault the pages hot lists (learn_run_pages) in this fork,
    contents unchanged: MADV_POPULATE_WRITE copies a page shared with
    the zygote as a write would, without writing. A range no longer
    mapped as it was is refused, and left to fault when written."""
    for address, length in hot:
        libc.madvise(address, length, MADV_POPULATE_WRITE)


def reseed():
    """Give the fork random generators of its own: the stdlib's shared
    one (which reseeds itself at fork too) and numpy's global state."""
    rand = sys.modules.get("random")
    if rand is not None:
        rand.seed()
    nprand = sys.modules.get("numpy.random")
    if nprand is not None:
        nprand.seed()


def main():
    names, stateless, zygote_ids = [], False, None
    args = sys.argv[1:]
    while args:
        if args[0] == "--stateless":
            stateless, args = True, args[1:]
        elif args[0] == "--zygote" and len(args) > 1:
            stateless, zygote_ids, args = True, args[1], args[2:]
        elif args[0] == "--preload" and len(args) > 1:
            names, args = [n for n in args[1].split(",") if n], args[2:]
        else:
            args = args[1:]
    if zygote_ids:
        libc = become_zygote(zygote_ids)
    nb_install()
    if not stateless:
        import_cell_modules()
    if not stateless or names:
        nb_load()
        signal.signal(signal.SIGINT, on_interrupt)
    loaded = preload(names)
    # What the kernel and the preloaded modules made lives as long as the
    # process: move it out of the collector's sight, so that collections
    # (the program's, and the one at its end) scan only the program's own
    # objects, not pandas' hundreds of thousands.
    import gc
    gc.freeze()
    if zygote_ids:
        collapse_heap(libc)
        set_zygote_ids()
        zygote(loaded, libc)
        return
    send({"ready": True, "python": sys.version.split()[0], "preloaded": loaded})
    while True:
        try:
            line = REQUESTS.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            return
        request = json_loads(line)
        if request.get("op") == "run":
            run_main(request)
        if request.get("op") == "setup":
            send(setup(request))
            continue
        try:
            reply = run_cell(request)
        except KeyboardInterrupt:  # arrived between the cell and its reply
            reply = {"id": request["id"], "token": request["token"], "status": "error",
                     "error": {"type": "KeyboardInterrupt", "message": ""}}
        finish(reply)


main()
