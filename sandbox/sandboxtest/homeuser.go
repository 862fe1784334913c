package sandboxtest

import (
	"context"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// homeUserProgram writes through lang.HomeUser and reads through
// lang.WorkDir, and the other way round, then prints where HomeUser leads
// and what it is; /home, which holds nothing else, cannot be written.
const homeUserProgram = `import os
name = os.environ["SANDBOXTEST_TOKEN"] + ".txt"
open("/home/user/" + name, "w").write("via home")
print(open("/work/" + name).read())
open("/work/" + name, "a").write(", then via work")
print(open("/home/user/" + name).read())
print(os.path.realpath("/home/user"), os.path.islink("/home/user"), os.getcwd())
for attempt in (lambda: os.unlink("/home/user"), lambda: os.mkdir("/home/other"),
                lambda: open("/home/other", "w")):
    try:
        attempt()
        print("the link's directory is writable")
    except OSError:
        pass
print(sorted(os.listdir("/home")))
`

// homeUserWant is what homeUserProgram prints where lang.HomeUser is a
// link to the working directory.
const homeUserWant = "via home\nvia home, then via work\n/work True /work\n['user']\n"

// testHomeUser: in every sandbox, run and session, /home/user (where
// E2B's SDKs and the code written for them keep their files) is a
// symbolic link to the working directory: a file written through one path
// is read through the other, is the run's artifact, and is what the
// session's file API reads; the link cannot be removed, nor anything
// added beside it; nothing of it reaches the host's /home.
func testHomeUser(t *testing.T, s *suite) {
	t.Run("run", func(t *testing.T) {
		tok := newToken()
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: homeUserProgram},
			watch{token: tok, paths: []string{"/home/user/" + tok + ".txt"}})
		wantExit(t, res, sandbox.StatusOK, 0)
		if string(res.Stdout) != homeUserWant {
			t.Fatalf("stdout %q, stderr %q; want %q", res.Stdout, clip(res.Stderr), homeUserWant)
		}
		found := false
		for _, a := range res.Artifacts {
			found = found || a.Name == tok+".txt"
		}
		if !found {
			t.Errorf("the file written through %s is not among the run's artifacts %+v", lang.HomeUser, res.Artifacts)
		}
	})
	t.Run("session", func(t *testing.T) {
		ses := s.sessionOf(t, sandbox.Limits{})
		tok := newToken()
		s.remember(tok)
		res, err := execCell(t, ses, sandbox.Cell{Code: "import os\nos.environ['SANDBOXTEST_TOKEN'] = " + pyQuote(tok) + "\n" + homeUserProgram})
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != homeUserWant {
			t.Fatalf("want stdout %q, got err %v, %s", homeUserWant, err, describeCell(res))
		}
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		b, err := ses.ReadFile(ctx, tok+".txt")
		if err != nil || string(b) != "via home, then via work" {
			t.Fatalf("ReadFile of the file written through %s: %q, %v", lang.HomeUser, b, err)
		}
		if err := ses.WriteFile(ctx, "from-host.csv", []byte("a,b\n1,2\n")); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		res, err = execCell(t, ses, sandbox.Cell{Code: "open('/home/user/from-host.csv').read()"})
		if err != nil || res.Status != sandbox.StatusOK || res.Value != `'a,b\n1,2\n'` {
			t.Fatalf("reading through %s a file the host wrote: err %v, %s", lang.HomeUser, err, describeCell(res))
		}
	})
}

// pyQuote quotes s, made of letters and digits, as a Python string.
func pyQuote(s string) string { return "'" + s + "'" }
