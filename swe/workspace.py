# The platform's side of a swe workspace, run as session cells inside the
# sandbox (see workspace.go): unpack the repository, record the baseline,
# take the diff, apply a diff, run the tests and read their JUnit report.
# main takes one JSON document and writes one JSON answer to a file.
import json, os, shutil, signal, stat, subprocess, tarfile, time

REPO = "/work/repo"
STATE = "/tmp/.swe"  # outside /work: never in the agent's listing, never an artifact
BASE = STATE + "/base.git"
MAX_MEMBERS = 200000
MAX_JUNIT = 16 << 20
MAX_CASES = 100000
MAX_ID = 1024
CLIP = 32 << 10


class Refused(Exception):
    """The input (the archive, the diff) cannot be used; the message says why."""


def git_env():
    # git ignores the system's and the user's config (a ~/.gitconfig the
    # agent wrote cannot change how the platform's git diffs or applies),
    # never prompts, and never looks for a repository above /work.
    env = dict(os.environ)
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_EXTERNAL_DIFF"):
        env.pop(k, None)
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
                "GIT_CEILING_DIRECTORIES": "/work", "LC_ALL": "C",
                "GIT_AUTHOR_NAME": "crucible", "GIT_AUTHOR_EMAIL": "swe@crucible.invalid",
                "GIT_COMMITTER_NAME": "crucible", "GIT_COMMITTER_EMAIL": "swe@crucible.invalid",
                "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"})
    return env


def run(args, cwd=REPO, stdout=subprocess.PIPE):
    p = subprocess.run(args, cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL, stdout=stdout,
                       stderr=subprocess.STDOUT if stdout == subprocess.PIPE else subprocess.PIPE)
    out = p.stdout if stdout == subprocess.PIPE else p.stderr
    return p.returncode, clip((out or b"").decode("utf-8", "replace"), 4096)


def clip(s, n):
    if len(s) <= n:
        return s
    return s[: n // 2] + "\n[... %d characters cut ...]\n" % (len(s) - n) + s[-n // 2:]


def base_git(*args):
    return ["git", "--git-dir=" + BASE, "--work-tree=" + REPO, "-c", "core.hooksPath=/dev/null"] + list(args)


def within(path, root):
    return path == root or path.startswith(root + "/")


def check_member(m, dest):
    # Each member is checked against what is already on disk before it is
    # extracted: its path and, resolved through every link extracted so
    # far, where it lands; a link's target too. A member that would land
    # outside the repository, or that is not a file, a directory or a
    # link, refuses the whole archive.
    name = m.name
    if name.startswith("/"):
        raise Refused("member %r has an absolute path" % name)
    if ".." in name.split("/"):
        raise Refused("member %r leads out of the repository (a '..' element)" % name)
    if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
        raise Refused("member %r is a device, a FIFO or another special file, which a repository does not hold" % name)
    where = os.path.realpath(os.path.join(dest, name))
    if not within(where, dest):
        raise Refused("member %r would be written outside the repository (through a link)" % name)
    if m.issym() or m.islnk():
        base = os.path.dirname(os.path.join(dest, name)) if m.issym() else dest
        if m.linkname.startswith("/") or not within(os.path.realpath(os.path.join(base, m.linkname)), dest):
            raise Refused("member %r links to %r, outside the repository" % (name, m.linkname))
    # Owned by the sandbox's user, no set-id, sticky or group/other write
    # bits; directories always writable by their owner so later members
    # (and the agent) can be written into them.
    m.uid, m.gid, m.uname, m.gname = os.getuid(), os.getgid(), "", ""
    m.mode &= 0o755
    if m.isdir():
        m.mode |= 0o700
    elif m.isreg():
        m.mode |= 0o600


def unpack_tar(archive, dest):
    try:
        with tarfile.open(archive, "r:*") as tf:
            n = 0
            for m in tf:
                n += 1
                if n > MAX_MEMBERS:
                    raise Refused("it holds more than %d members" % MAX_MEMBERS)
                check_member(m, dest)
                tf.extract(m, dest, set_attrs=not m.issym(), numeric_owner=True)
    except Refused:
        raise
    except Exception as e:  # a corrupt or truncated archive, a full disk: tarfile's many errors
        raise Refused("it could not be unpacked as a tar: %s: %s" % (type(e).__name__, e))


def unpack_bundle(archive, dest):
    code, out = run(["git", "-c", "core.hooksPath=/dev/null", "clone", "--quiet", "--", archive, dest], cwd="/work")
    if code != 0:
        raise Refused("git clone of the bundle failed (exit %d): %s" % (code, out.strip()))


def unpack(spec):
    # A refused archive leaves nothing behind: what was unpacked of it is
    # removed (a disk it filled is free again for the answer).
    os.makedirs(REPO)
    try:
        if spec["format"] == "bundle":
            unpack_bundle(spec["archive"], REPO)
        else:
            unpack_tar(spec["archive"], REPO)
    except BaseException:
        shutil.rmtree(REPO, ignore_errors=True)
        raise


def baseline():
    # The baseline is a git directory of the platform's own, outside the
    # repository (the repository's own .git, if a bundle gave one, is the
    # agent's to use and never read): the agent's git commands do not
    # touch it, and git never adds a path named .git. Every file of the
    # input is in it, ignored ones too (-f); the repository's attributes
    # are overridden so that no filter, EOL conversion or diff driver
    # changes what the diff says.
    os.makedirs(STATE, exist_ok=True)
    for args in (base_git("init", "--quiet"),
                 base_git("config", "core.autocrlf", "false"),
                 base_git("config", "core.fileMode", "true"),
                 base_git("config", "core.symlinks", "true"),
                 base_git("config", "gc.auto", "0")):
        code, out = run(args)
        if code != 0:
            raise RuntimeError("%s: %s" % (" ".join(args), out))
    os.makedirs(BASE + "/info", exist_ok=True)
    with open(BASE + "/info/exclude", "w") as f:
        f.write("__pycache__/\n*.py[co]\n.pytest_cache/\n")
    with open(BASE + "/info/attributes", "w") as f:
        f.write("* -text -filter -ident !eol !diff !merge !working-tree-encoding\n")
    for args in (base_git("add", "-A", "-f"), base_git("commit", "--quiet", "--no-verify", "--allow-empty", "-m", "input")):
        code, out = run(args)
        if code != 0:
            raise RuntimeError("%s: %s" % (" ".join(args), out))


def take_diff(spec):
    # Every change of the working tree against the baseline, new, deleted
    # and binary files and mode changes included, written to spec["out"];
    # past spec["limit"] bytes it is refused.
    out = spec["out"]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.lexists(out):
        os.unlink(out)
    code, msg = run(base_git("add", "-A"))
    if code != 0:
        return {"error": "git add -A: " + msg.strip()}
    with open(out, "wb") as f:
        code, msg = run(base_git("diff", "--cached", "--binary", "--no-ext-diff", "--no-color", "--no-renames",
                                 "--no-textconv", "HEAD"), stdout=f)
    if code != 0:
        return {"error": "git diff: " + msg.strip()}
    size = os.path.getsize(out)
    if size > spec["limit"]:
        os.unlink(out)
        return {"error": "the diff is %d bytes, more than the %d a change may be" % (size, spec["limit"])}
    return {"size": size}


def apply_diff(path):
    code, git_out = run(["git", "apply", "--whitespace=nowarn", "-p1", path])
    if code == 0:
        return "git apply", ""
    # git apply changes nothing when it fails, so patch starts from the
    # pristine tree; it keeps no backups and writes no rejects.
    code, patch_out = run(["patch", "-p1", "--fuzz=3", "--batch", "--forward", "--no-backup-if-mismatch",
                           "--reject-file=-", "-i", path])
    if code == 0:
        return "patch --fuzz", ""
    return "", "git apply: %s; patch --fuzz=3: %s" % (git_out.strip(), patch_out.strip())


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def run_tests(spec):
    # The command runs through bash from the repository's root in a process
    # group of its own, its output to a file (clipped in the answer), with
    # PYTEST_ADDOPTS asking any pytest it starts for a JUnit report at a
    # path outside the repository, removed first so that a stale report
    # never counts. At the timeout, and when the cell is interrupted, the
    # whole group is killed; so is what the command left running.
    os.makedirs(STATE, exist_ok=True)
    junit, out = spec["junit"], spec["output"]
    for p in (junit, out):
        if os.path.lexists(p):
            os.unlink(p)
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ beside the sources
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " --junitxml=" + junit + " -o junit_family=xunit1").strip()
    timed_out = False
    start = time.monotonic()
    with open(out, "wb") as f:
        child = subprocess.Popen(["bash", "-c", spec["command"]], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                 stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = child.wait(timeout=spec["timeout"])
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(child.pid)
            code = child.wait()
        except BaseException:
            kill_group(child.pid)
            child.wait()
            raise
        finally:
            kill_group(child.pid)
    took = time.monotonic() - start
    with open(out, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(CLIP // 2)
        tail = b""
        if size > CLIP:
            f.seek(size - CLIP // 2)
            tail = f.read(CLIP // 2)
    output = head.decode("utf-8", "replace")
    if tail:
        output += "\n[... %d bytes cut ...]\n" % (size - CLIP) + tail.decode("utf-8", "replace")
    cases, note = read_junit(junit)
    return {"exit": code, "timed_out": timed_out, "output": output, "cases": cases, "junit": note, "seconds": took}


def read_junit(path):
    # The report is written by the code under test's process, so it may
    # hold anything: it is opened without following a link, must be a
    # regular file of at most MAX_JUNIT bytes and parse as XML; otherwise
    # there are no cases. IDs are pytest's node IDs, rebuilt from the
    # xunit1 attributes (file, classname, name).
    import xml.etree.ElementTree as ET
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return [], "no JUnit report was written"
    except OSError as e:
        return [], "the JUnit report could not be opened: %s" % e
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return [], "the JUnit report is not a regular file"
        data = f.read(MAX_JUNIT + 1)
    if len(data) > MAX_JUNIT:
        return [], "the JUnit report is larger than %d bytes" % MAX_JUNIT
    try:
        root = ET.fromstring(data)
    except Exception as e:
        return [], "the JUnit report is not XML: %s" % e
    rank = {"failed": 2, "passed": 1, "skipped": 0}
    cases = {}
    for tc in root.iter("testcase"):
        cid = case_id(tc.get("file") or "", tc.get("classname") or "", tc.get("name") or "")
        if cid is None:
            continue
        outcome = "passed"
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        if cid not in cases and len(cases) >= MAX_CASES:
            return [[k, v] for k, v in cases.items()], "the JUnit report holds more than %d cases; the rest were left out" % MAX_CASES
        if cid not in cases or rank[outcome] > rank[cases[cid]]:
            cases[cid] = outcome
    return [[k, v] for k, v in cases.items()], ""


def case_id(file, classname, name):
    for s in (file, classname, name):
        if len(s) > MAX_ID or "\n" in s or "\r" in s or "\0" in s:
            return None
    if not name:
        return None
    if not file:
        return classname + "::" + name if classname else name
    module = (file[:-3] if file.endswith(".py") else file).replace("/", ".")
    if classname.startswith(module + "."):
        return "::".join([file] + classname[len(module) + 1:].split(".") + [name])
    return file + "::" + name


def main(spec):
    # One answer, a JSON document written to spec["answer"] (in /work, for
    # the host to read): an exception is an answer too (error), never a
    # silent end.
    spec = json.loads(spec)
    answer = {}
    try:
        os.makedirs(os.path.dirname(spec["answer"]), exist_ok=True)
        if os.path.lexists(spec["answer"]):
            os.unlink(spec["answer"])
        if spec["op"] == "open":
            unpack(spec)
            baseline()
        elif spec["op"] == "diff":
            answer = take_diff(spec)
        elif spec["op"] == "test":
            answer = run_tests(spec)
        elif spec["op"] == "verify":
            unpack(spec)
            if spec.get("diff"):
                answer["applied"], answer["apply_error"] = apply_diff(spec["diff"])
            if not answer.get("apply_error"):
                answer.update(run_tests(spec))
    except Refused as e:
        answer = {"refused": str(e)}
    except Exception as e:
        answer = {"error": "%s: %s" % (type(e).__name__, e)}
    with open(spec["answer"], "w") as f:
        json.dump(answer, f)
