package e2bapi

import (
	"net/http"
	"testing"
)

func TestSandboxID(t *testing.T) {
	for _, tc := range []struct {
		path, header, want string
	}{
		{"/sandboxes/ses_1", "", "ses_1"},
		{"/sandboxes/ses_1/timeout", "", "ses_1"},
		{"/v2/sandboxes/ses_1/connect", "", "ses_1"},
		{"/execute", "ses_2", "ses_2"},               // the code interpreter, by header
		{"/process.Process/Start", "ses_3", "ses_3"}, // envd, by header
		{"/sandboxes", "", ""},                       // create, list: this node's
		{"/v2/sandboxes", "", ""},
		{"/templates/x", "", ""},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(headerSandboxID, tc.header)
		}
		if got := SandboxID(tc.path, h); got != tc.want {
			t.Errorf("SandboxID(%q, %q) = %q, want %q", tc.path, tc.header, got, tc.want)
		}
	}
}
