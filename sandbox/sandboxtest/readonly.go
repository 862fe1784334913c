package sandboxtest

import (
	"bytes"
	"context"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Read-only input files (sandbox.File.ReadOnly): a hostile program tries
// every way to change one, or to put other bytes at its name, and the
// host then checks the bytes at that name are the ones it placed.

// readOnlyFiles are the inputs of the read-only tests: two files in a
// directory, one at the top of the working directory, and a writable one
// beside them.
func readOnlyFiles() []sandbox.File {
	return []sandbox.File{
		{Name: "data/in.csv", Content: sandbox.Data("a,b\n1,2\n"), ReadOnly: true},
		{Name: "data/more.csv", Content: sandbox.Data("c\n3\n"), ReadOnly: true},
		{Name: "top.txt", Content: sandbox.Data("top\n"), ReadOnly: true},
		{Name: "scratch.txt", Content: sandbox.Data("mine\n")},
	}
}

// readOnlyAttack tries to change the read-only files; it prints one JSON
// object naming each attempt that succeeded, and whether the program can
// still read them.
const readOnlyAttack = `import fcntl, json, os, shutil, struct
won = []
def attempt(name, fn):
    try:
        fn()
        won.append(name)
    except OSError:
        pass
def write(path, mode):
    with open(path, mode) as f:
        f.write("evil")
def clear_flags():
    fd = os.open("data/in.csv", os.O_RDONLY)
    try:
        fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0))  # FS_IOC_SETFLAGS
    finally:
        os.close(fd)
def replace_dir():
    os.rename("data", "data_old")
    os.mkdir("data")
    write("data/in.csv", "w")
with open("other.csv", "w") as f:
    f.write("evil")
for path in ("data/in.csv", "top.txt"):
    attempt("write " + path, lambda: write(path, "w"))
    attempt("append " + path, lambda: write(path, "a"))
    attempt("open r+ " + path, lambda: write(path, "r+"))
    attempt("truncate " + path, lambda: os.truncate(path, 0))
    attempt("chmod " + path, lambda: os.chmod(path, 0o666))
    attempt("chown " + path, lambda: os.chown(path, os.getuid(), os.getgid()))
    attempt("utime " + path, lambda: os.utime(path, (0, 0)))
    attempt("rename " + path, lambda: os.rename(path, path + ".moved"))
    attempt("replace " + path, lambda: os.replace("other.csv", path))
    attempt("link " + path, lambda: os.link(path, path + ".link"))
    attempt("remove " + path, lambda: os.remove(path))
attempt("clear the file's flags", clear_flags)
attempt("add a file to data", lambda: write("data/new.csv", "w"))
attempt("rename data", lambda: os.rename("data", "data2"))
attempt("replace data", replace_dir)
attempt("rmtree data", lambda: shutil.rmtree("data"))
attempt("rmdir data", lambda: os.rmdir("data"))
attempt("write the writable file", lambda: write("scratch.txt", "w"))
def read(path):
    try:
        return open(path).read()
    except OSError as e:
        return repr(e)
print(json.dumps({"won": won, "csv": read("data/in.csv"), "top": read("top.txt")}))
`

// readOnlyReport is what readOnlyAttack prints.
type readOnlyReport struct {
	Won []string `json:"won"`
	CSV string   `json:"csv"`
	Top string   `json:"top"`
}

// checkReadOnlyReport fails t unless the only attempt that succeeded is
// writing the writable file, and the program read the placed bytes.
func checkReadOnlyReport(t *testing.T, rep readOnlyReport) {
	t.Helper()
	if len(rep.Won) != 1 || rep.Won[0] != "write the writable file" {
		t.Errorf("attempts that succeeded: %q; want only %q", rep.Won, "write the writable file")
	}
	if rep.CSV != "a,b\n1,2\n" || rep.Top != "top\n" {
		t.Errorf("the program read data/in.csv %q and top.txt %q, want the placed bytes", rep.CSV, rep.Top)
	}
}

// testReadOnlyInputs: in a run, the hostile program fails at every
// attempt, and the artifacts (files created or changed) name neither
// read-only file: the bytes at their names are the placed ones.
func testReadOnlyInputs(t *testing.T, s *suite) {
	tok := newToken()
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: readOnlyAttack, Files: readOnlyFiles()}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep readOnlyReport
	decodeReport(t, res, &rep)
	checkReadOnlyReport(t, rep)
	for _, a := range res.Artifacts {
		if a.Name == "data/in.csv" || a.Name == "top.txt" {
			t.Errorf("artifact %q: a read-only input was changed (content %q)", a.Name, a.Content)
		}
	}
}

// testSessionReadOnlyInputs: in a session, the same attack fails, the
// host reads the placed bytes back afterwards, and the host's WriteFile
// is refused as input, naming the file read-only.
func testSessionReadOnlyInputs(t *testing.T, s *suite) {
	sr, ok := s.rt.(sandbox.SessionRuntime)
	if !ok {
		t.Skip("the runtime has no sessions")
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	files := readOnlyFiles()
	ses, err := sr.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Files: files})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer ses.Close()
	res, err := execCell(t, ses, sandbox.Cell{Code: readOnlyAttack})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("attack cell: err %v, %s", err, describeCell(res))
	}
	var rep readOnlyReport
	decodeReport(t, res, &rep)
	checkReadOnlyReport(t, rep)
	for _, f := range files[:3] {
		got, err := ses.ReadFile(ctx, f.Name)
		if err != nil || !bytes.Equal(got, f.Content) {
			t.Errorf("host reads %s back as %q (err %v), want the placed %q", f.Name, got, err, f.Content)
		}
		if err := ses.WriteFile(ctx, f.Name, []byte("host")); !sandbox.IsInputError(err) {
			t.Errorf("WriteFile(%s) of a read-only file: err %v, want an input error", f.Name, err)
		}
	}
}
