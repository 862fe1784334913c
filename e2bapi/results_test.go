package e2bapi

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestResultMsgs: a cell's displays, value and PNG artifacts become the
// code interpreter's results, in a notebook's order, each representation
// in its field; other artifacts and omitted content are not results.
func TestResultMsgs(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	res := sandbox.Result{
		Displays: []sandbox.Display{
			{MIME: "text/html", Data: sandbox.Data("<b>x</b>"), Text: "x"},
			{MIME: "image/png", Data: sandbox.Data(png), Text: "<Figure>"},
			{MIME: "application/json", Data: sandbox.Data(`{"a":1}`), Text: "{'a': 1}"},
			{MIME: "text/markdown", Data: sandbox.Data("# t"), Text: "t"},
			{MIME: "text/html", Text: "big", Omitted: "over the bound"},
		},
		Value: "42", ValueHTML: "<i>42</i>",
		Artifacts: []sandbox.Artifact{
			{Name: "figure-1.png", MIME: "image/png", Content: png},
			{Name: "out.csv", MIME: "text/csv", Content: sandbox.Data("a\n")},
			{Name: "chart.png", MIME: "image/png", ContentOmitted: true},
		},
	}
	got, err := json.Marshal(resultMsgs(res))
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(png)
	want := `[{"type":"result","text":"x","html":"\u003cb\u003ex\u003c/b\u003e","is_main_result":false},` +
		`{"type":"result","text":"\u003cFigure\u003e","png":"` + b64 + `","is_main_result":false},` +
		`{"type":"result","text":"{'a': 1}","json":{"a":1},"is_main_result":false},` +
		`{"type":"result","text":"t","markdown":"# t","is_main_result":false},` +
		`{"type":"result","text":"big","is_main_result":false},` +
		`{"type":"result","text":"42","html":"\u003ci\u003e42\u003c/i\u003e","is_main_result":true},` +
		`{"type":"result","png":"` + b64 + `","is_main_result":false}]`
	if string(got) != want {
		t.Errorf("resultMsgs:\n got %s\nwant %s", got, want)
	}
	if got := resultMsgs(sandbox.Result{Status: sandbox.StatusOK}); len(got) != 0 {
		t.Errorf("a cell with nothing to show has results %+v", got)
	}
}

// TestErrorOf: the error message of each way a cell ends.
func TestErrorOf(t *testing.T) {
	tb := "Traceback (most recent call last):\nNameError: name 'y' is not defined\n"
	for _, tc := range []struct {
		name string
		res  sandbox.Result
		want *errorMsg
	}{
		{"ok", sandbox.Result{Status: sandbox.StatusOK}, nil},
		{"exception", sandbox.Result{Status: sandbox.StatusError, Error: &sandbox.ExecError{Type: "NameError", Message: "name 'y' is not defined", Traceback: tb}},
			&errorMsg{"error", "NameError", "name 'y' is not defined", tb}},
		{"hint", sandbox.Result{Status: sandbox.StatusError, Error: &sandbox.ExecError{Type: "ModuleNotFoundError", Message: "No module named 'x'", Traceback: "T\n", Hint: "x is not installed"}},
			&errorMsg{"error", "ModuleNotFoundError", "No module named 'x'", "T\n\nHint: x is not installed"}},
		{"exit", sandbox.Result{Status: sandbox.StatusError, Reason: "the interpreter exited with code 3; the session is closed"},
			&errorMsg{"error", "Error", "the interpreter exited with code 3; the session is closed", ""}},
		{"timeout", sandbox.Result{Status: sandbox.StatusTimeout, Reason: "wall-time limit of 2s reached", Error: &sandbox.ExecError{Type: "KeyboardInterrupt", Traceback: "K\n"}},
			&errorMsg{"error", "TimeoutError", "wall-time limit of 2s reached", "K\n"}},
		{"memory", sandbox.Result{Status: sandbox.StatusMemoryLimit, Reason: "out of memory"}, &errorMsg{"error", "MemoryError", "out of memory", ""}},
		{"cpu", sandbox.Result{Status: sandbox.StatusCPULimit}, &errorMsg{"error", "CPUTimeLimitError", "the cell ended with status cpu_limit", ""}},
		{"output", sandbox.Result{Status: sandbox.StatusOutputLimit, Reason: "output limit"}, &errorMsg{"error", "OutputLimitError", "output limit", ""}},
		{"blocked", sandbox.Result{Status: sandbox.StatusBlocked, Reason: "the code policy blocked the cell", Findings: []sandbox.Finding{{Message: "import of socket"}}},
			&errorMsg{"error", "PolicyError", "the code policy blocked the cell\nimport of socket", ""}},
		{"internal", sandbox.Result{Status: sandbox.StatusInternal, Reason: "boom"}, &errorMsg{"error", "InternalError", "boom", ""}},
	} {
		got := errorOf(tc.res)
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%s: errorOf = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestTextStream: a UTF-8 sequence cut between chunks is held back and
// sent whole with the next; at the end nothing is held.
func TestTextStream(t *testing.T) {
	euro := []byte("€") // 3 bytes
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		want   []string
	}{
		{"ascii", [][]byte{[]byte("ab"), []byte("c\n")}, []string{"ab", "c\n", ""}},
		{"cut after 1", [][]byte{append([]byte("a"), euro[:1]...), euro[1:]}, []string{"a", "€", ""}},
		{"cut after 2", [][]byte{append([]byte("a"), euro[:2]...), append(euro[2:], 'b')}, []string{"a", "€b", ""}},
		{"only a part", [][]byte{euro[:2], euro[2:3]}, []string{"", "€", ""}},
		{"cut at the end", [][]byte{[]byte("x"), euro[:2]}, []string{"x", "", "\xe2\x82"}},
	} {
		var s textStream
		var got []string
		for _, c := range tc.chunks {
			got = append(got, s.text(c, false))
		}
		got = append(got, s.text(nil, true))
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
