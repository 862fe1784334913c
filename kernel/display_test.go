package kernel

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestResultDisplays proves the host keeps of a reply's displays only
// what the bounds allow, whatever the kernel (the cell's process) sends.
func TestResultDisplays(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nrest"))
	big := strings.Repeat("x", sandbox.MaxDisplayRich+1)
	for _, tc := range []struct {
		name    string
		in      Display
		budget  int64
		mime    string
		data    string
		omitted string // a substring; empty: nothing omitted
	}{
		{"html", Display{MIME: "text/html", Data: "<table></table>", Text: "df"}, 1 << 20, "text/html", "<table></table>", ""},
		{"png", Display{MIME: "image/png", Data: png, Base64: true}, 1 << 20, "image/png", "\x89PNG\r\n\x1a\nrest", ""},
		{"unknown type", Display{MIME: "application/javascript", Data: "alert(1)", Text: "x"}, 1 << 20, "text/plain", "", ""},
		{"png not base64", Display{MIME: "image/png", Data: "\x89PNG"}, 1 << 20, "image/png", "", "not in base64"},
		{"png not a png", Display{MIME: "image/png", Data: base64.StdEncoding.EncodeToString([]byte("GIF89a")), Base64: true}, 1 << 20, "image/png", "", "not a PNG"},
		{"png too large", Display{MIME: "image/png", Data: strings.Repeat("A", 6<<20), Base64: true}, 64 << 20, "image/png", "", "over the"},
		{"html too large", Display{MIME: "text/html", Data: big}, 64 << 20, "text/html", "", "over the 524288"},
		{"not utf-8", Display{MIME: "text/markdown", Data: "\xff"}, 1 << 20, "text/markdown", "", "not UTF-8"},
		{"over the budget", Display{MIME: "text/html", Data: "<table></table>"}, 4, "text/html", "", "artifact budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, used := ResultDisplays([]Display{tc.in}, tc.budget)
			if len(got) != 1 {
				t.Fatalf("%d displays, want 1", len(got))
			}
			d := got[0]
			if d.MIME != tc.mime || string(d.Data) != tc.data || (tc.omitted == "") != (d.Omitted == "") || !strings.Contains(d.Omitted, tc.omitted) {
				t.Errorf("got %s %q omitted %q; want %s %q omitted %q", d.MIME, d.Data, d.Omitted, tc.mime, tc.data, tc.omitted)
			}
			if used != int64(len(d.Data)) {
				t.Errorf("used %d, want %d", used, len(d.Data))
			}
		})
	}
	many := make([]Display, 1000)
	for i := range many {
		many[i] = Display{MIME: "text/plain", Text: strings.Repeat("é", sandbox.MaxDisplayText+5)}
	}
	got, _ := ResultDisplays(many, 1<<20)
	if len(got) != sandbox.MaxDisplays {
		t.Errorf("%d displays kept of 1000, want %d", len(got), sandbox.MaxDisplays)
	}
	if n := len([]rune(got[0].Text)); n != sandbox.MaxDisplayText+1 {
		t.Errorf("a text of %d characters kept %d, want %d and the cut mark", sandbox.MaxDisplayText+5, n, sandbox.MaxDisplayText+1)
	}
}
