package e2bapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// TestEnvdFilesystem drives filesystem.Filesystem over a real session as
// E2B's files.makeDir, exists, getInfo, list, rename and remove do.
func TestEnvdFilesystem(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ss := f.sb.ss
	if err := ss.WriteFile(ctx, "top.txt", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	stat := func(p string) (*envdEntry, error) {
		r, err := envdUnary[statRequest, statResponse](f, ctx, "/filesystem.Filesystem/Stat", &statRequest{Path: p})
		if err != nil {
			return nil, err
		}
		return r.Entry, nil
	}
	mkdir := func(p string) (*envdEntry, error) {
		r, err := envdUnary[makeDirRequest, makeDirResponse](f, ctx, "/filesystem.Filesystem/MakeDir", &makeDirRequest{Path: p})
		if err != nil {
			return nil, err
		}
		return r.Entry, nil
	}
	list := func(p string, depth uint32) ([]string, error) {
		r, err := envdUnary[listDirRequest, listDirResponse](f, ctx, "/filesystem.Filesystem/ListDir", &listDirRequest{Path: p, Depth: depth})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range r.Entries {
			out = append(out, e.Path+":"+strings.TrimPrefix(string(e.Type), "FILE_TYPE_"))
		}
		return out, nil
	}
	move := func(from, to string) (*envdEntry, error) {
		r, err := envdUnary[moveRequest, moveResponse](f, ctx, "/filesystem.Filesystem/Move", &moveRequest{Source: from, Destination: to})
		if err != nil {
			return nil, err
		}
		return r.Entry, nil
	}
	remove := func(p string) error {
		_, err := envdUnary[removeRequest, removeResponse](f, ctx, "/filesystem.Filesystem/Remove", &removeRequest{Path: p})
		return err
	}
	wantCode := func(what string, err error, code connect.Code, says string) {
		t.Helper()
		if connect.CodeOf(err) != code || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want %v saying %q", what, err, code, says)
		}
	}

	// Stat: a file, the home directory, a missing path.
	if e, err := stat("/home/user/top.txt"); err != nil || e.Type != envdFileTypeFile || e.Size != 5 || e.Name != "top.txt" || e.Path != "/home/user/top.txt" || e.ModifiedTime == nil {
		t.Errorf("Stat top.txt: %+v, %v", e, err)
	}
	if e, err := stat("/home/user"); err != nil || e.Type != envdFileTypeDir {
		t.Errorf("Stat /home/user: %+v, %v", e, err)
	}
	_, err := stat("missing.txt")
	wantCode("Stat of a missing file", err, connect.CodeNotFound, "missing.txt")

	// MakeDir makes the parents; a second time, AlreadyExists.
	if e, err := mkdir("/home/user/a/b/c"); err != nil || e.Type != envdFileTypeDir || e.Path != "/home/user/a/b/c" {
		t.Fatalf("MakeDir a/b/c: %+v, %v", e, err)
	}
	_, err = mkdir("a/b")
	wantCode("MakeDir of an existing directory", err, connect.CodeAlreadyExists, "already exists")
	_, err = mkdir("top.txt/x")
	wantCode("MakeDir under a file", err, connect.CodeInvalidArgument, "not a directory")
	if err := ss.WriteFile(ctx, "a/b/f.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}

	// ListDir by depth.
	got, err := list("/home/user", 1)
	if want := "/home/user/a:DIRECTORY /home/user/top.txt:FILE"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("ListDir depth 1: %v, %v; want %s", got, err, want)
	}
	got, err = list("a", 2)
	if want := "/home/user/a/b:DIRECTORY /home/user/a/b/c:DIRECTORY /home/user/a/b/f.txt:FILE"; err != nil || strings.Join(got, " ") != want {
		t.Errorf("ListDir a depth 2: %v, %v; want %s", got, err, want)
	}
	_, err = list("top.txt", 1)
	wantCode("ListDir of a file", err, connect.CodeInvalidArgument, "must be a directory")
	_, err = list("nope", 1)
	wantCode("ListDir of a missing directory", err, connect.CodeNotFound, "nope")

	// Move a file into a new directory, then a directory.
	if e, err := move("/home/user/top.txt", "/home/user/moved/top2.txt"); err != nil || e.Path != "/home/user/moved/top2.txt" || e.Size != 5 {
		t.Errorf("Move: %+v, %v", e, err)
	}
	if b, err := ss.ReadFile(ctx, "moved/top2.txt"); err != nil || string(b) != "12345" {
		t.Errorf("the moved file: %q, %v", b, err)
	}
	_, err = move("top.txt", "again.txt")
	wantCode("Move of a missing file", err, connect.CodeNotFound, "source")
	if _, err := move("a", "z"); err != nil {
		t.Errorf("Move of a directory: %v", err)
	}

	// Remove a file, a directory with everything in it, a missing path.
	if err := remove("moved/top2.txt"); err != nil {
		t.Errorf("Remove a file: %v", err)
	}
	if err := remove("/home/user/z"); err != nil {
		t.Errorf("Remove a directory: %v", err)
	}
	wantCode("Remove of a missing path", remove("z"), connect.CodeNotFound, "no such file")
	if got, err := list(".", 10); err != nil || strings.Join(got, " ") != "/home/user/moved:DIRECTORY" {
		t.Errorf("what is left: %v, %v", got, err)
	}

	// Paths outside the working directory, and the directory itself.
	_, err = stat("/etc/passwd")
	wantCode("Stat outside", err, connect.CodeInvalidArgument, "path: must be under /home/user")
	_, err = mkdir("/tmp/x")
	wantCode("MakeDir outside", err, connect.CodeInvalidArgument, "path: must be under /home/user")
	_, err = move("moved", "../../etc/x")
	wantCode("Move outside", err, connect.CodeInvalidArgument, "destination: must be under /home/user")
	wantCode("Remove of the home directory", remove("/home/user"), connect.CodeInvalidArgument, "must not be /home/user itself")

	// A symbolic link the sandbox's code made does not lead the file
	// operations out of the working directory.
	evs, err := f.run(ctx, "ln -s /tmp /work/out && touch /tmp/keep", nil)
	if err != nil || envdOutcomeOf(t, evs).end.ExitCode != 0 {
		t.Fatalf("ln: %v %+v", err, evs)
	}
	_, err = mkdir("out/made")
	wantCode("MakeDir through a link out", err, connect.CodeInvalidArgument, "symbolic link")
	wantCode("Remove through a link out", remove("out/keep"), connect.CodeInvalidArgument, "symbolic link")
	evs, err = f.run(ctx, "test -e /tmp/keep && test ! -e /tmp/made", nil)
	if err != nil || envdOutcomeOf(t, evs).end.ExitCode != 0 {
		t.Errorf("the link's target changed: %v %+v", err, envdOutcomeOf(t, evs).end)
	}
	if err := remove("out"); err != nil {
		t.Errorf("Remove the link itself: %v", err)
	}
	evs, _ = f.run(ctx, "test ! -e /work/out && test -e /tmp/keep", nil)
	if o := envdOutcomeOf(t, evs); o.end == nil || o.end.ExitCode != 0 {
		t.Errorf("removing the link removed its target, or not the link: %+v", o.end)
	}
}
