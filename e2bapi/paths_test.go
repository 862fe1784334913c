package e2bapi

import (
	"strings"
	"testing"
)

// TestSessionPath: envd's paths map to the session's working directory
// (/home/user, or relative to it); nothing else is reachable.
func TestSessionPath(t *testing.T) {
	for _, tc := range []struct {
		path, want, refusal string
	}{
		{"/home/user/data.csv", "data.csv", ""},
		{"/home/user/a/b/c.txt", "a/b/c.txt", ""},
		{"/home/user//a/./b.txt", "a/b.txt", ""},
		{"data.csv", "data.csv", ""},
		{"./x/../y.txt", "y.txt", ""},
		{"/home/user/x/../../user/z", "z", ""},
		{"", "", "required"},
		{"/home/user", "", "not the directory"},
		{"/home/user/", "", "not the directory"},
		{".", "", "not the directory"},
		{"/etc/passwd", "", "only files under /home/user"},
		{"/tmp/x", "", "only files under /home/user"},
		{"/home/username/x", "", "only files under /home/user"},
		{"/home/user/../root/x", "", "only files under /home/user"},
		{"..", "", "'..'"},
		{"../etc/passwd", "", "'..'"},
		{"a/../../b", "", "'..'"},
	} {
		got, err := sessionPath(tc.path)
		if tc.refusal == "" {
			if err != nil || got != tc.want {
				t.Errorf("sessionPath(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
			continue
		}
		ae, ok := err.(*apiError)
		if !ok || ae.Code != 400 || ae.Field != "path" || !strings.Contains(ae.Rule, tc.refusal) {
			t.Errorf("sessionPath(%q) = %q, %v; want a 400 naming path, saying %q", tc.path, got, err, tc.refusal)
		}
	}
}

// TestTokensIn: a header's values are split into the tokens sent, so that
// a token appended twice is two tokens, each checked.
func TestTokensIn(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{"abc"}, "abc"},
		{[]string{"abc, abc"}, "abc|abc"},
		{[]string{"abc", "def"}, "abc|def"},
		{[]string{" abc ,def"}, "abc|def"},
	} {
		if got := strings.Join(tokensIn(tc.values), "|"); got != tc.want {
			t.Errorf("tokensIn(%q) = %q, want %q", tc.values, got, tc.want)
		}
	}
}
