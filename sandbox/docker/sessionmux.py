"""Crucible's session multiplexer, for the container runtimes.

A container's exec gives the host one ordered stream each way, where the
session kernel (package kernel) speaks on four: its request channel (fd
3), its reply channel (fd 4), the cell's stdout and stderr. This program
runs in the session's container as the sandbox's user, starts the kernel
(argv[1:]) with those four on pipes of its own and stdin on /dev/null,
and carries them over the exec's stdin and stdout:

  - each line of its stdin is a request, written on to the kernel's fd 3
    (buffered here, so that a kernel that stops reading never holds the
    host's writes), except the control line "!interrupt", which sends the
    kernel SIGINT;
  - the kernel's stdout, stderr and reply channel leave on its stdout as
    frames: one byte of kind ("o", "e", "r"), the payload's length as a
    4-byte big-endian number, the payload. Before it passes on bytes of the
    reply channel, it passes on every byte the stdout and stderr pipes hold
    then: the kernel flushes both before it replies, so the host has a
    cell's whole output before its reply, as the native runtime has it
    from the pipes it reads itself;
  - before the bytes of the reply channel that end a reply (a newline), the
    frame "w": a digest of what /work holds (each entry's name, type, size,
    inode, and modification and change times, which no process can set
    back), or nothing when it could not be read whole; the host reads
    /work back after a cell only when it changed (a cell's artifacts);
  - when the kernel has exited, what its pipes hold, then the frame "x"
    with its wait status in decimal, and this program exits. At the end of
    its stdin (the host is gone) it kills the kernel and exits.

It is not a security boundary: it runs as the cell's user. It makes itself
non-dumpable first, so that the cell's processes cannot open its
descriptors through /proc and write frames of their own into the host's
stream (ptrace is refused by the sandbox's seccomp policy).
"""

import ctypes
import fcntl
import hashlib
import os
import select
import signal
import struct
import sys
import termios

PR_SET_DUMPABLE = 4
WORK = "/work"
MAX_ENTRIES = 10000
HIGH_FD = 10
CHUNK = 1 << 16


def non_dumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")


def high(fd):
    """Move fd to HIGH_FD or above, close-on-exec."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    os.close(fd)
    return moved


def start_kernel(argv):
    """Fork and exec the kernel; return its pid and the host ends."""
    req_r, req_w = (high(fd) for fd in os.pipe())
    rep_r, rep_w = (high(fd) for fd in os.pipe())
    out_r, out_w = (high(fd) for fd in os.pipe())
    err_r, err_w = (high(fd) for fd in os.pipe())
    null = high(os.open("/dev/null", os.O_RDONLY))
    pid = os.fork()
    if pid == 0:
        try:
            for src, dst in ((null, 0), (out_w, 1), (err_w, 2), (req_r, 3), (rep_w, 4)):
                os.dup2(src, dst)  # inheritable; every source is close-on-exec
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    for fd in (req_r, rep_w, out_w, err_w, null):
        os.close(fd)
    os.set_blocking(req_w, False)
    return pid, req_w, rep_r, out_r, err_r


def send(kind, data):
    frame = kind + struct.pack(">I", len(data)) + data
    view = memoryview(frame)
    while view:
        view = view[os.write(1, view):]


def held(fd):
    """The bytes the pipe fd holds now."""
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return struct.unpack("i", buf)[0]


def work_digest():
    """A digest of /work's tree, b"" when it cannot be read whole."""
    h, count = hashlib.sha256(), 0
    stack = [WORK]
    try:
        while stack:
            top = stack.pop()
            with os.scandir(top) as entries:
                for e in sorted(entries, key=lambda e: e.name):
                    st = e.stat(follow_symlinks=False)
                    count += 1
                    if count > MAX_ENTRIES:
                        return b""
                    h.update(("%s\0%o %d %d %d %d\n" % (e.path, st.st_mode, st.st_size, st.st_ino,
                                                       st.st_mtime_ns, st.st_ctime_ns)).encode("utf-8", "surrogateescape"))
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
    except OSError:
        return b""
    return h.hexdigest().encode()


def main():
    non_dumpable()
    pid, req_w, rep_r, out_r, err_r = start_kernel(sys.argv[1:])
    kinds = {out_r: b"o", err_r: b"e", rep_r: b"r"}
    poller = select.poll()
    for fd in (0, out_r, err_r, rep_r):
        poller.register(fd, select.POLLIN)
    inbox, pending, waiting = b"", b"", False

    def drain(fd):
        """Pass on what fd holds now, and no more."""
        if fd not in kinds:
            return
        left = held(fd)
        while left > 0:
            data = os.read(fd, min(left, CHUNK))
            if not data:
                break
            send(kinds[fd], data)
            left -= len(data)

    def close(fd):
        poller.unregister(fd)
        del kinds[fd]
        os.close(fd)

    while True:
        events = dict(poller.poll(100))
        for fd in (out_r, err_r, rep_r):
            if fd not in kinds or not events.get(fd, 0):
                continue
            if fd == rep_r:
                drain(out_r)
                drain(err_r)
            data = os.read(fd, CHUNK)
            if data and fd == rep_r and b"\n" in data:
                send(b"w", work_digest())
            if data:
                send(kinds[fd], data)
            else:
                close(fd)
        if events.get(0, 0):
            data = os.read(0, CHUNK)
            if not data:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            inbox += data
            *lines, inbox = inbox.split(b"\n")
            for line in lines:
                if line == b"!interrupt":
                    os.kill(pid, signal.SIGINT)
                else:
                    pending += line + b"\n"
        if events.get(req_w, 0) & (select.POLLERR | select.POLLHUP):
            poller.unregister(req_w)
            os.close(req_w)
            req_w, pending, waiting = -1, b"", False
        if pending and req_w >= 0:
            try:
                pending = pending[os.write(req_w, pending):]
            except BlockingIOError:
                pass
            except BrokenPipeError:  # the kernel is exiting
                pending = b""
        if bool(pending) != waiting and req_w >= 0:
            waiting = bool(pending)
            if waiting:
                poller.register(req_w, select.POLLOUT)
            else:
                poller.unregister(req_w)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            for fd in (out_r, err_r, rep_r):
                drain(fd)
            send(b"x", str(status).encode())
            return


main()
