package policy

import (
	"bytes"
	"regexp"
	"sync"
)

// pattern is one single-line credential detector. It runs only on the rest
// of the lines where one of its starts occurs, so the regexp engine never
// walks the bulk of a large output, and each line at most once, so the work
// stays linear in the input whatever the input.
type pattern struct {
	// kind names what was found, as in "[REDACTED:kind]" and in Counts.
	kind string
	// re finds candidates. When it has capturing groups, the first group that matched non-empty is the
	// secret and only it is hidden; the rest of the match (a key name,
	// "Bearer ", a URL's user) is context and stays.
	re *regexp.Regexp
	// starts are the literals every match begins with. With fold they are
	// lower-case and looked up in an ASCII-lower-cased copy of the input.
	starts []string
	fold   bool
	// valid, when set, must accept the secret for the candidate to count.
	valid func(secret []byte) bool
}

// hasDigit reports whether b holds an ASCII digit. Real keys and tokens
// almost always do; words that merely look like them ("bearer credentials",
// "sk-some-long-identifier") usually do not.
func hasDigit(b []byte) bool {
	return bytes.ContainsAny(b, "0123456789")
}

// builtinPatterns returns the credential formats RedactConfig.Patterns
// enables, most specific first: of two matches with the same span, the
// earlier entry names the kind. They are compiled on first use: every
// command of the crucible binary initialises this package, and most (such
// as `crucible run`, which redacts nothing) never need them.
var builtinPatterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{
			kind:   "aws_access_key_id",
			re:     regexp.MustCompile(`\b((?:AKIA|ASIA)[A-Z0-9]{16})(?:[^A-Za-z0-9]|$)`),
			starts: []string{"AKIA", "ASIA"},
		},
		{
			kind:   "github_token",
			re:     regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?:[^A-Za-z0-9_]|$)`),
			starts: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		},
		{
			kind:   "gitlab_token",
			re:     regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
			starts: []string{"glpat-"},
		},
		{
			kind:   "slack_token",
			re:     regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9\-]{10,}`),
			starts: []string{"xox"},
		},
		{
			kind:   "google_api_key",
			re:     regexp.MustCompile(`\b(AIza[0-9A-Za-z_\-]{35})(?:[^0-9A-Za-z_\-]|$)`),
			starts: []string{"AIza"},
		},
		{
			kind:   "anthropic_key",
			re:     regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{20,}`),
			starts: []string{"sk-ant-"},
		},
		{
			kind:   "openai_key",
			re:     regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`),
			starts: []string{"sk-"},
			valid:  hasDigit,
		},
		{
			kind:   "stripe_key",
			re:     regexp.MustCompile(`\b(?:sk|rk)_live_[A-Za-z0-9]{16,}`),
			starts: []string{"sk_live_", "rk_live_"},
		},
		{
			kind:   "jwt",
			re:     regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*`),
			starts: []string{"eyJ"},
		},
		{
			kind: "aws_secret_access_key",
			// 40 base64 characters only right after a key name holding "secret"
			// (aws_secret_access_key, SecretAccessKey, secret): a bare 40-hex git
			// SHA must not match.
			re:     regexp.MustCompile(`(?i)secret[a-z_\-]*["']?[ \t]*(?::=|=>|[:=])[ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
			starts: []string{"secret"},
			fold:   true,
		},
		{
			kind:   "bearer_token",
			re:     regexp.MustCompile(`(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?bearer[ \t]+([^\s"',;]+)`),
			starts: []string{"authorization"},
			fold:   true,
		},
		{
			kind:   "bearer_token",
			re:     regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9\-._~+/]{8,}=*)`),
			starts: []string{"bearer"},
			fold:   true,
			valid:  hasDigit,
		},
		{
			kind: "basic_auth",
			// The password of scheme://user:password@host.
			re:     regexp.MustCompile(`://[^\s/?#@:]*:([^\s/?#@]+)@`),
			starts: []string{"://"},
		},
		{
			kind:   "generic_secret",
			re:     regexp.MustCompile(`(?i)(?:password|passwd|secret|api[_\-]?key|token)["']?[ \t]*(?::=|=>|[:=])[ \t]*(?:"([^"\r\n]{8,})"|'([^'\r\n]{8,})'|([^\s"']{8,}))`),
			starts: []string{"password", "passwd", "secret", "api_key", "api-key", "apikey", "token"},
			fold:   true,
		},
	}
})

// Private keys span lines, so they are found apart from the patterns.
var (
	pemBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)
	// pemBody is what still looks like key material after a BEGIN line whose
	// END line is missing (output cut at the output limit).
	pemBody = regexp.MustCompile(`^[A-Za-z0-9+/=\s:,\\-]*`)
)

// privateKeys returns the spans of b's PEM private key blocks, each from its
// BEGIN line through the next END line or, without one, through the key
// material that follows. Each byte of b is examined a bounded number of times.
func privateKeys(b []byte) [][2]int {
	if !bytes.Contains(b, []byte("PRIVATE KEY")) {
		return nil
	}
	ends := pemEnd.FindAllIndex(b, -1)
	var out [][2]int
	pos, k := 0, 0
	for _, bg := range pemBegin.FindAllIndex(b, -1) {
		if bg[0] < pos {
			continue // inside the previous block
		}
		for k < len(ends) && ends[k][0] < bg[1] {
			k++
		}
		if k < len(ends) {
			pos = ends[k][1]
		} else {
			pos = bg[1] + pemBody.FindIndex(b[bg[1]:])[1]
		}
		out = append(out, [2]int{bg[0], pos})
	}
	return out
}
