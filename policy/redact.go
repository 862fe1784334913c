package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// MinSecretLen is the shortest configured secret a Redactor accepts. Shorter
// values would hide common words and numbers everywhere, and a hidden
// 3-byte value is easy to recover from the surrounding text anyway.
const MinSecretLen = 8

// Kinds a Redactor reports besides the built-in patterns' names.
const (
	// KindSecret counts occurrences of RedactConfig.Secrets.
	KindSecret = "secret"
	// KindHostPath counts occurrences of RedactConfig.HostPaths.
	KindHostPath = "host_path"
	// KindExtra counts matches of RedactConfig.Extra expressions.
	KindExtra = "extra"
)

// HostPathMarker replaces each occurrence of a configured host path.
const HostPathMarker = "[HOST_PATH]"

// redactedPrefix starts every replacement of a secret: "[REDACTED:kind]".
const redactedPrefix = "[REDACTED:"

// RedactConfig says what a Redactor hides.
type RedactConfig struct {
	// Secrets are exact values to hide wherever they occur, such as API keys
	// the server knows; each is replaced by "[REDACTED:secret]". Each must
	// be at least MinSecretLen bytes long.
	Secrets []string
	// Patterns enables the built-in credential patterns (cloud and API keys,
	// tokens, private keys, passwords in URLs and assignments).
	Patterns bool
	// HostPaths are absolute host directories, such as the server's data
	// directory or /home/alice, replaced by "[HOST_PATH]" wherever they occur
	// as a whole path prefix: /root hides the start of /root/x but not of
	// /rooted.
	HostPaths []string
	// Extra are additional regular expressions (Go syntax) to hide. When an
	// expression has capturing groups, only the first group that matched is
	// hidden; otherwise the whole match. Each is replaced by
	// "[REDACTED:extra]".
	Extra []string
}

// DefaultRedactConfig returns the recommended configuration: the built-in
// patterns on, no configured secrets, host paths or extra expressions.
func DefaultRedactConfig() RedactConfig {
	return RedactConfig{Patterns: true}
}

// Counts maps a kind of redacted item ("secret", "host_path", "jwt", ...) to
// how many replacements of that kind were made.
type Counts map[string]int

// Total returns the number of replacements of all kinds.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// Add adds o's counts to c, which must not be nil.
func (c Counts) Add(o Counts) {
	for k, v := range o {
		c[k] += v
	}
}

// Redactor hides secrets and host paths in run outputs. Its work is linear
// in the input, even for output written to defeat it. It is safe for
// concurrent use.
type Redactor struct {
	secrets   [][]byte
	hostPaths [][]byte
	patterns  []pattern // built-in (when enabled), then extra
	keys      bool      // find private keys (the built-in patterns are on)
	fold      bool      // some pattern's starts need the lower-cased input
}

// NewRedactor checks cfg and builds a Redactor from it. Errors name the
// offending field and index.
func NewRedactor(cfg RedactConfig) (*Redactor, error) {
	r := &Redactor{}
	for i, s := range cfg.Secrets {
		if len(s) < MinSecretLen {
			return nil, fmt.Errorf("policy: RedactConfig.Secrets[%d]: %d bytes is too short to redact safely (minimum %d)", i, len(s), MinSecretLen)
		}
		r.secrets = append(r.secrets, []byte(s))
	}
	for i, p := range cfg.HostPaths {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("policy: RedactConfig.HostPaths[%d]: %q is not an absolute path", i, p)
		}
		c := path.Clean(p)
		if c == "/" {
			return nil, fmt.Errorf("policy: RedactConfig.HostPaths[%d]: %q would hide every path", i, p)
		}
		r.hostPaths = append(r.hostPaths, []byte(c))
	}
	if cfg.Patterns {
		r.keys = true
		r.patterns = append(r.patterns, builtinPatterns()...)
	}
	for i, e := range cfg.Extra {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("policy: RedactConfig.Extra[%d]: %w", i, err)
		}
		r.patterns = append(r.patterns, pattern{kind: KindExtra, re: re})
	}
	for _, p := range r.patterns {
		r.fold = r.fold || p.fold
	}
	return r, nil
}

// hidesNothing reports whether r has nothing to look for, so that Redact
// returns its input unchanged.
func (r *Redactor) hidesNothing() bool {
	return len(r.secrets) == 0 && len(r.hostPaths) == 0 && len(r.patterns) == 0
}

// span is a part of the input to replace.
type span struct {
	start, end int
	prio       int // lower wins between spans with the same bounds
	kind       string
	// from and to bound the whole match, context included: a key name
	// before the secret, the '@' after a URL's password. A StreamRedactor
	// must not split the output between them, or neither side would match.
	from, to int
}

// Redact returns b with every secret and host path replaced, and how many
// replacements of each kind were made. Bytes outside the replaced parts are
// kept exactly, so binary (non-UTF-8) input stays intact. When nothing
// matched, b itself is returned. Overlapping matches are replaced once, by
// one marker covering all of them and named after the earliest (at equal
// starts, the longest) match, so no part of any secret is left visible. The
// result is stable: redacting it again changes nothing.
func (r *Redactor) Redact(b []byte) ([]byte, Counts) {
	counts := Counts{}
	spans := r.find(b)
	if len(spans) == 0 {
		return b, counts
	}
	sort.Slice(spans, func(i, j int) bool {
		a, c := spans[i], spans[j]
		if a.start != c.start {
			return a.start < c.start
		}
		if a.end != c.end {
			return a.end > c.end
		}
		return a.prio < c.prio
	})
	merged := spans[:1]
	for _, s := range spans[1:] {
		last := &merged[len(merged)-1]
		if s.start < last.end {
			last.end = max(last.end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	var out bytes.Buffer
	out.Grow(len(b))
	prev := 0
	for _, s := range merged {
		out.Write(b[prev:s.start])
		if s.kind == KindHostPath {
			out.WriteString(HostPathMarker)
		} else {
			out.WriteString(redactedPrefix + s.kind + "]")
		}
		counts[s.kind]++
		prev = s.end
	}
	out.Write(b[prev:])
	return out.Bytes(), counts
}

// RedactString is Redact for a string.
func (r *Redactor) RedactString(s string) (string, Counts) {
	out, c := r.Redact([]byte(s))
	return string(out), c
}

// find returns every candidate span in b, overlapping ones included.
func (r *Redactor) find(b []byte) []span {
	var spans []span
	prio := 0
	for _, s := range r.secrets {
		for i := 0; ; {
			j := bytes.Index(b[i:], s)
			if j < 0 {
				break
			}
			spans = append(spans, span{start: i + j, end: i + j + len(s), prio: prio, kind: KindSecret, from: i + j, to: i + j + len(s)})
			i += j + len(s)
		}
	}
	prio++
	if r.keys {
		for _, k := range privateKeys(b) {
			spans = append(spans, span{start: k[0], end: k[1], prio: prio, kind: "private_key", from: k[0], to: k[1]})
		}
	}
	var lower []byte
	if r.fold && len(r.patterns) > 0 {
		lower = asciiLower(b)
	}
	for _, p := range r.patterns {
		prio++
		for _, m := range p.matches(b, lower) {
			start, end := secretBounds(m)
			if start == end || bytes.HasPrefix(b[start:end], []byte(redactedPrefix)) {
				// Empty, or an earlier pass's marker ("password=[REDACTED:...]").
				continue
			}
			if p.valid != nil && !p.valid(b[start:end]) {
				continue
			}
			spans = append(spans, span{start: start, end: end, prio: prio, kind: p.kind, from: m[0], to: m[1]})
		}
	}
	prio++
	for _, h := range r.hostPaths {
		for i := 0; ; {
			j := bytes.Index(b[i:], h)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(h)
			if (start == 0 || !isPathByte(b[start-1])) && (end == len(b) || b[end] == '/' || !isPathByte(b[end])) {
				spans = append(spans, span{start: start, end: end, prio: prio, kind: KindHostPath, from: start, to: end})
			}
			i = end
		}
	}
	return spans
}

// matches returns p's matches in b as submatch index slices (see
// regexp.FindSubmatchIndex), offsets into b. A pattern without starts (an
// Extra expression) searches all of b; a built-in one searches, once per
// line, the part of each line from one byte before its first start to the
// line's end (the byte before keeps \b seeing the real neighbour). Starts
// are looked up in lower (b lower-cased) when the pattern folds case.
func (p *pattern) matches(b, lower []byte) [][]int {
	if len(p.starts) == 0 {
		return p.re.FindAllSubmatchIndex(b, -1)
	}
	in := b
	if p.fold {
		in = lower
	}
	// Window start by line end; a line's window starts at its first start.
	windows := map[int]int{}
	for _, s := range p.starts {
		for i := 0; ; {
			j := bytes.Index(in[i:], []byte(s))
			if j < 0 {
				break
			}
			j += i
			start := max(bytes.LastIndexByte(in[:j], '\n')+1, j-1)
			end := len(in)
			if k := bytes.IndexByte(in[j:], '\n'); k >= 0 {
				end = j + k
			}
			if w, ok := windows[end]; !ok || start < w {
				windows[end] = start
			}
			i = end
		}
	}
	var ms [][]int
	for end, start := range windows {
		for _, m := range p.re.FindAllSubmatchIndex(b[start:end], -1) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += start
				}
			}
			ms = append(ms, m)
		}
	}
	return ms
}

// secretBounds picks the hidden part of a match: the first capturing group
// that matched non-empty, else the whole match.
func secretBounds(m []int) (int, int) {
	for g := 2; g+1 < len(m); g += 2 {
		if m[g] >= 0 && m[g+1] > m[g] {
			return m[g], m[g+1]
		}
	}
	return m[0], m[1]
}

// asciiLower returns a copy of b with ASCII letters lower-cased and every
// other byte unchanged, so offsets into it are offsets into b.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// isPathByte reports whether c can continue a path component's name, so a
// host path followed (or preceded) by it is part of a longer name.
func isPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("._-~+@%", c) >= 0
}

// RedactResult redacts res in place: Stdout, Stderr, Reason, the error's
// Type, Message, Traceback and Hint, Value, ValueHTML, the displays (as
// artifacts' contents: text redacted, an image holding a secret
// withheld), the artifacts' names (the
// program chose them) and their contents (see RedactContent). An artifact
// whose content changed gets its Size and SHA256 recomputed, so the digest
// always matches the content given; one whose content is withheld loses
// its content and digest (a digest of bytes around a secret would let a
// reader confirm a guess of it) and says why in Withheld. A name that
// redaction makes equal to an earlier one gets a "~N" suffix, so names
// stay unique (the store keeps artifacts by name). It returns the counts
// over all fields.
func (r *Redactor) RedactResult(res *sandbox.Result) Counts {
	total := Counts{}
	redact := func(b []byte) []byte {
		out, c := r.Redact(b)
		total.Add(c)
		return out
	}
	redactString := func(s *string) {
		if *s != "" {
			out, c := r.RedactString(*s)
			total.Add(c)
			*s = out
		}
	}
	res.Stdout = redact(res.Stdout)
	res.Stderr = redact(res.Stderr)
	// A reason may quote the program or the platform's error, which may
	// name host paths.
	redactString(&res.Reason)
	if res.Error != nil {
		redactString(&res.Error.Type)
		redactString(&res.Error.Message)
		redactString(&res.Error.Traceback)
		redactString(&res.Error.Hint) // a runtime's own, such as a remote server's
	}
	redactString(&res.Value)
	redactString(&res.ValueHTML)
	for i := range res.Displays {
		d := &res.Displays[i]
		redactString(&d.Text)
		if len(d.Data) == 0 {
			continue
		}
		// As an artifact's content: text redacted, an image holding a
		// secret withheld.
		out, c, err := r.RedactContent(d.MIME, d.Data)
		total.Add(c)
		switch {
		case err != nil:
			d.Data, d.Omitted = nil, "withheld: "+err.Error()
		case c.Total() > 0:
			d.Data = out
		}
	}
	for i := range res.Findings { // they quote the code
		redactString(&res.Findings[i].Snippet)
		redactString(&res.Findings[i].Message)
	}
	names := make(map[string]bool, len(res.Artifacts))
	for i := range res.Artifacts {
		a := &res.Artifacts[i]
		name, c := r.RedactString(a.Name)
		total.Add(c)
		// A redacted name may equal another artifact's, even one the
		// program chose as "[REDACTED:secret]" itself: every name is
		// checked.
		a.Name = name
		for n := 2; names[a.Name]; n++ {
			a.Name = fmt.Sprintf("%s~%d", name, n)
		}
		names[a.Name] = true
		if len(a.Content) == 0 {
			continue
		}
		out, c, err := r.RedactContent(a.MIME, a.Content)
		if c.Total() == 0 {
			continue
		}
		total.Add(c)
		if err != nil {
			a.Content, a.ContentOmitted, a.SHA256, a.Withheld = nil, true, "", err.Error()
			continue
		}
		sum := sha256.Sum256(out)
		a.Content = out
		a.Size = int64(len(out))
		a.SHA256 = hex.EncodeToString(sum[:])
	}
	return total
}
