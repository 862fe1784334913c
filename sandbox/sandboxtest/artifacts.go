package sandboxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// testArtifacts: files the program creates or changes in the working
// directory come back with exact content and digest; unchanged inputs do
// not; links the program plants (to a host secret by absolute path, or to
// the host through /proc) are not followed by the runtime, which reads the
// files with more privilege than the program; special files are skipped;
// and contents beyond the artifact budget are omitted, not truncated.
func testArtifacts(t *testing.T, s *suite) {
	tok := newToken()
	// The decoy's name must not carry the token: the host check would
	// (rightly) report a token-named file on the host.
	marker := newToken()
	secret := "/tmp/crucible-decoy-" + marker
	if err := os.WriteFile(secret, []byte("host secret "+marker), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	code := program(`import os
open("result.txt", "w").write("42\n")
os.makedirs("charts/deep", exist_ok=True)
open("charts/deep/plot.svg", "w").write("<svg/>")
open("changed.csv", "w").write("a,b\n1,2\n")
open("big.bin", "wb").write(b"x" * 3000)
os.symlink("{{SECRET}}", "secret-link")
os.symlink("/proc/1/root/etc/hostname", "proc-link")
os.symlink("/etc", "etc-dir-link")
os.mkfifo("fifo")
`, map[string]string{"SECRET": secret})
	req := sandbox.Request{
		Language: sandbox.Python,
		Code:     code,
		Files: []sandbox.File{
			{Name: "unchanged.txt", Content: sandbox.Data("same\n")},
			{Name: "changed.csv", Content: sandbox.Data("old\n")},
		},
		Limits: sandbox.Limits{ArtifactBytes: 2048},
	}
	res, _ := s.run(t, req, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	got := map[string]sandbox.Artifact{}
	var names []string
	for _, a := range res.Artifacts {
		got[a.Name] = a
		names = append(names, a.Name)
		if strings.Contains(string(a.Content), marker) {
			t.Errorf("artifact %s holds the host secret: a planted link was followed", a.Name)
		}
	}
	want := map[string]string{"big.bin": "", "changed.csv": "a,b\n1,2\n", "charts/deep/plot.svg": "<svg/>", "result.txt": "42\n"}
	if len(got) != len(want) {
		t.Errorf("artifacts %v, want exactly %d: big.bin changed.csv charts/deep/plot.svg result.txt", names, len(want))
	}
	for name, content := range want {
		a, ok := got[name]
		if !ok {
			t.Errorf("missing artifact %s (got %v)", name, names)
			continue
		}
		if name == "big.bin" {
			sum := sha256.Sum256([]byte(strings.Repeat("x", 3000)))
			if !a.ContentOmitted || len(a.Content) != 0 || a.Size != 3000 || a.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("big.bin over the 2048-byte budget: omitted=%v len=%d size=%d sha=%s", a.ContentOmitted, len(a.Content), a.Size, a.SHA256)
			}
			continue
		}
		sum := sha256.Sum256([]byte(content))
		if string(a.Content) != content || a.Size != int64(len(content)) || a.SHA256 != hex.EncodeToString(sum[:]) || a.ContentOmitted {
			t.Errorf("artifact %s = %q (size %d, sha %s, omitted %v), want %q", name, a.Content, a.Size, a.SHA256, a.ContentOmitted, content)
		}
	}
	if a := got["charts/deep/plot.svg"]; a.MIME != "image/svg+xml" {
		t.Errorf("plot.svg MIME %q", a.MIME)
	}
}
