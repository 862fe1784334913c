package ids

import (
	"regexp"
	"testing"
)

// TestForms pins each kind's form to the one its stored IDs and URLs
// have, and checks that IDs do not repeat.
func TestForms(t *testing.T) {
	cases := []struct {
		kind Kind
		form string
	}{
		{Run, `^[0-9a-f]{32}$`},
		{Session, `^ses_[0-9a-f]{24}$`},
		{AgentRun, `^agt_[0-9a-f]{16}$`},
		{Analysis, `^ana_[0-9a-f]{16}$`},
		{Approval, `^apr_[0-9a-f]{16}$`},
		{APIKey, `^key_[0-9a-f]{12}$`},
	}
	if len(cases) != len(forms) {
		t.Fatalf("%d kinds tested, %d defined", len(cases), len(forms))
	}
	for _, c := range cases {
		re := regexp.MustCompile(c.form)
		seen := map[string]bool{}
		for range 1000 {
			id := New(c.kind)
			if !re.MatchString(id) {
				t.Fatalf("kind %d: %q does not match %s", c.kind, id, c.form)
			}
			if seen[id] {
				t.Fatalf("kind %d: %q repeated", c.kind, id)
			}
			seen[id] = true
		}
	}
}
