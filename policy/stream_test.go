package policy

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// streamSecret is the configured secret of streamRedactor; it has a space
// so that a cut at white space could split it.
const streamSecret = "s3cr3t value-123"

// streamRedactor hides every kind of item: patterns, a configured secret, a
// host path and an Extra expression.
func streamRedactor(t testing.TB) *Redactor {
	return mustRedactor(t, RedactConfig{
		Patterns:  true,
		Secrets:   []string{streamSecret},
		HostPaths: []string{"/home/alice"},
		Extra:     []string{`INTERNAL-\d{6}`},
	})
}

// streamRun writes chunks to a new StreamRedactor, flushes it and returns
// what it emitted, call by call, with its counts. It keeps the emitted slices
// without copying them, as NewStream allows.
func streamRun(t testing.TB, r *Redactor, chunks [][]byte) ([][]byte, Counts) {
	t.Helper()
	var out [][]byte
	s := r.NewStream(func(b []byte) {
		if len(b) == 0 {
			t.Errorf("emit called with nothing")
		}
		out = append(out, b)
	})
	for _, c := range chunks {
		if n, err := s.Write(c); n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(c))
		}
		if len(s.buf) > streamHold {
			t.Fatalf("holding %d bytes, more than %d", len(s.buf), streamHold)
		}
	}
	s.Flush()
	return out, s.Counts()
}

// pieces returns every 8-byte substring of secret, or secret itself when it
// is shorter: no part of a secret that long may show.
func pieces(secret string) []string {
	if len(secret) <= 8 {
		return []string{secret}
	}
	var ps []string
	for i := 0; i+8 <= len(secret); i++ {
		ps = append(ps, secret[i:i+8])
	}
	return ps
}

// checkStream checks the output of one split of in: it equals Redact of the
// whole, with the same counts, shows no piece of secret in any emitted chunk,
// and every chunk but the one Flush emitted ends a line.
func checkStream(t *testing.T, r *Redactor, in []byte, secret, split string, chunks [][]byte) {
	t.Helper()
	want, wantCounts := r.Redact(in)
	out, counts := streamRun(t, r, chunks)
	got := bytes.Join(out, nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %q\nwant %q", split, got, want)
	}
	if !maps.Equal(counts, wantCounts) {
		t.Fatalf("%s: counts %v, want %v", split, counts, wantCounts)
	}
	for i, o := range append(out, got) {
		for _, p := range pieces(secret) {
			if bytes.Contains(o, []byte(p)) {
				t.Fatalf("%s: emitted chunk %d %q shows %q", split, i, o, p)
			}
		}
	}
	for i, o := range out[:max(len(out)-1, 0)] {
		if o[len(o)-1] != '\n' {
			t.Fatalf("%s: chunk %d %q does not end a line", split, i, o)
		}
	}
}

func TestStreamSplits(t *testing.T) {
	r := streamRedactor(t)
	pem := pemBlock("RSA")
	tests := []struct {
		name, in, secret string
	}{
		{"aws key id", "start\nexport AWS_ACCESS_KEY_ID=" + awsKeyID + " next\nend\n", awsKeyID},
		{"aws sts key id", "id: " + awsSTSID + "\n", awsSTSID},
		{"aws secret", "x\naws_secret_access_key = " + awsSecret + "\ny\n", awsSecret},
		{"github token", "clone with " + ghToken + ".\n", ghToken},
		{"github pat", "GH=" + ghPAT + "\n", ghPAT},
		{"gitlab token", "GL " + glToken + "\n", glToken},
		{"slack token", "slack: " + slackTok + "\n", slackTok},
		{"google api key", "https://maps.example.com/?k=" + googleKey + "&q=1\n", googleKey},
		{"openai key", "OPENAI " + openaiKey + "\n", openaiKey},
		{"openai project key", "k\n" + openaiProj + "\n", openaiProj},
		{"anthropic key", "key: " + antKey + "\n", antKey},
		{"stripe key", "stripe " + stripeKey + "\n", stripeKey},
		{"stripe restricted key", "stripe " + stripeRKey + "\n", stripeRKey},
		{"jwt", "jwt " + jwtTok + " end\n", jwtTok},
		{"authorization header", "GET /\r\nAuthorization: Bearer " + bearerTok + "\r\n\r\n", bearerTok},
		{"bearer", "curl -H 'bearer " + bearerTok + "'\n", bearerTok},
		{"basic auth", "fetching https://alice:pa55w0rd-x@example.com/x\n", "pa55w0rd-x"},
		{"generic secret", "DB_PASSWORD=Tr0ub4dor&3xyz\n", "Tr0ub4dor&3xyz"},
		{"generic secret quoted with spaces", `{"api_key": "abc def ghi jkl"}` + "\n", "abc def ghi jkl"},
		{"private key", "before\n" + pem + "\nafter\n", pem},
		{"private key inline", "key=" + strings.ReplaceAll(pem, "\n", `\n`) + " done\n", pem[len("-----BEGIN RSA PRIVATE KEY-----\n"):][:40]},
		{"private key without END", "x\n-----BEGIN EC PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\nAASCBKcwggSjAgEAAo", "MIIEvQIBADANBgkqhkiG9w0BAQEF\nAASCBKcwggSjAgEAAo"},
		{"private key opened on the line another closes", "x\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY----------BEGIN PRIVATE KEY-----\nAASCBKcwggSjAgEAAo\n", "MIIEvQIBADANBgkq"},
		{"two private keys", pemBlock("RSA") + "\nmiddle " + awsKeyID + "\n" + pemBlock("EC") + "\n", awsKeyID},
		{"configured secret", "the value is " + streamSecret + ", twice: " + streamSecret + "\n", streamSecret},
		{"host path", "open /home/alice/.ssh/id_rsa: denied\n/home/alice\n", "/home/alice"},
		{"extra", "id INTERNAL-123456\n", "INTERNAL-123456"},
		{"binary", "\x89PNG\xff\xfe\x00 " + awsKeyID + " \x80\n\xc3", awsKeyID},
		{"no trailing newline", "line\npassword=hunter2hunter2", "hunter2hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if whole, _ := r.Redact(in); bytes.Contains(whole, []byte(tt.secret)) {
				t.Fatalf("Redact itself shows the secret: %q", whole)
			}
			checkStream(t, r, in, tt.secret, "whole", [][]byte{in})
			for i := range len(in) + 1 {
				checkStream(t, r, in, tt.secret, "split at "+strconv.Itoa(i), [][]byte{in[:i], in[i:]})
			}
			bytewise := make([][]byte, len(in))
			for i := range in {
				bytewise[i] = in[i : i+1]
			}
			checkStream(t, r, in, tt.secret, "byte by byte", bytewise)
		})
	}
}

// filler returns n bytes of words and spaces, without a newline.
func filler(n int) []byte {
	const words = "lorem ipsum dolor sit amet consectetur adipiscing elit "
	return []byte(strings.Repeat(words, n/len(words)+1)[:n])
}

// chunked splits b into chunks of size n.
func chunked(b []byte, n int) [][]byte {
	var cs [][]byte
	for len(b) > 0 {
		k := min(n, len(b))
		cs = append(cs, b[:k])
		b = b[k:]
	}
	return cs
}

// TestStreamLongLine checks that a 200 KiB line without a newline is emitted
// in pieces, cut at white space, while it is written, however it arrives.
func TestStreamLongLine(t *testing.T) {
	r := streamRedactor(t)
	in := filler(200 << 10)
	for _, size := range []int{1, 1000, 4096, len(in)} {
		var out [][]byte
		s := r.NewStream(func(b []byte) { out = append(out, b) })
		for _, c := range chunked(in, size) {
			s.Write(c)
			if len(s.buf) > streamHold {
				t.Fatalf("chunks of %d: holding %d bytes", size, len(s.buf))
			}
		}
		if len(out) < 3 {
			t.Errorf("chunks of %d: %d pieces emitted before Flush, want at least 3", size, len(out))
		}
		for i, o := range out {
			if len(o) > streamHold || o[len(o)-1] != ' ' {
				t.Errorf("chunks of %d: piece %d is %d bytes ending %q", size, i, len(o), o[len(o)-1])
			}
		}
		s.Flush()
		if got := bytes.Join(out, nil); !bytes.Equal(got, in) {
			t.Errorf("chunks of %d: output differs from the input", size)
		}
	}
}

// TestStreamLongLineWithoutSpace checks the cut of a line with no white
// space: memory stays bounded and no UTF-8 character is split.
func TestStreamLongLineWithoutSpace(t *testing.T) {
	r := streamRedactor(t)
	in := []byte(strings.Repeat("é€𝄞a", 200<<10/10))
	out, _ := streamRun(t, r, chunked(in, 777))
	if len(out) < 4 {
		t.Errorf("%d pieces, want at least 4", len(out))
	}
	for i, o := range out {
		if !utf8.Valid(o) {
			t.Errorf("piece %d splits a character", i)
		}
	}
	if got := bytes.Join(out, nil); !bytes.Equal(got, in) {
		t.Error("output differs from the input")
	}
}

// TestStreamCutKeepsMatchesWhole puts credentials holding white space (or
// preceded by context and white space) at every offset around where a long
// line is cut, where a cut at the last white space would split them.
func TestStreamCutKeepsMatchesWhole(t *testing.T) {
	r := streamRedactor(t)
	tests := []struct{ text, secret string }{
		{"Authorization: Bearer " + bearerTok, bearerTok},
		{`password = "correct horse battery staple"`, "correct horse battery staple"},
		{streamSecret, streamSecret},
	}
	for _, tt := range tests {
		for off := streamHold - streamMargin - len(tt.text) - 2; off <= streamHold-streamMargin+2; off++ {
			var in []byte
			in = append(in, filler(off-1)...)
			in = append(in, ' ')
			in = append(in, tt.text...)
			in = append(in, ' ')
			in = append(in, filler(2*streamMargin)...) // past streamHold: one cut
			want, wantCounts := r.Redact(in)
			out, counts := streamRun(t, r, [][]byte{in})
			if len(out) != 2 {
				t.Fatalf("%q at %d: %d pieces, want a cut and the rest", tt.text, off, len(out))
			}
			got := bytes.Join(out, nil)
			if bytes.Contains(got, []byte(tt.secret)) {
				t.Fatalf("%q at %d shows", tt.text, off)
			}
			if !bytes.Equal(got, want) || !maps.Equal(counts, wantCounts) {
				t.Fatalf("%q at %d: output or counts %v differ from Redact's %v", tt.text, off, counts, wantCounts)
			}
		}
	}
}

// TestStreamPrivateKeyHeld checks that nothing of a private key block is
// emitted before its END line arrives, while the lines before it are.
func TestStreamPrivateKeyHeld(t *testing.T) {
	r := streamRedactor(t)
	var out []string
	s := r.NewStream(func(b []byte) { out = append(out, string(b)) })
	lines := strings.SplitAfter("before\n"+pemBlock("RSA")+"\nafter\n", "\n")
	// Emitted after each line: "before", then nothing until the END line
	// brings the block, then "after".
	wantN := []int{1, 1, 1, 1, 2, 3}
	for i, l := range lines[:len(wantN)] {
		s.Write([]byte(l))
		if len(out) != wantN[i] {
			t.Fatalf("after line %d %q: emitted %q", i, l, out)
		}
	}
	s.Flush()
	if got, want := strings.Join(out, ""), "before\n[REDACTED:private_key]\nafter\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestStreamOpenKeyBounded checks that a BEGIN line without an END does not
// hold more than the bound, and that what it holds is redacted as a key.
func TestStreamOpenKeyBounded(t *testing.T) {
	r := streamRedactor(t)
	body := strings.Repeat("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n", 200<<10/53)
	in := []byte("x\n-----BEGIN RSA PRIVATE KEY-----\n" + body)
	out, counts := streamRun(t, r, chunked(in, 4096))
	if len(out) < 3 || string(out[0]) != "x\n" || string(out[1]) != "[REDACTED:private_key]" {
		t.Fatalf("emitted %d pieces starting %q", len(out), out[:min(len(out), 2)])
	}
	if counts["private_key"] < 1 {
		t.Errorf("counts = %v", counts)
	}
}

// TestStreamHostileStaysLinear feeds output built to make a stream's work
// quadratic: key blocks that stay open, markers on every line, a long line
// full of match starts, a byte at a time and at once. Linear work takes well
// under a second for each.
func TestStreamHostileStaysLinear(t *testing.T) {
	r := mustRedactor(t, DefaultRedactConfig())
	units := []string{"-----BEGIN RSA PRIVATE KEY-----\n", "-----BEGIN RSA PRIVATE KEY-----\n-----END PRIVATE KEY-----", "\n", "secret", `password="`}
	for _, u := range units {
		in := []byte(strings.Repeat(u, (128<<10)/len(u)))
		for _, size := range []int{1, len(in)} {
			start := time.Now()
			streamRun(t, r, chunked(in, size))
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%q × %d in chunks of %d: %v", u, len(in)/len(u), size, d)
			}
		}
	}
}

func TestStreamFlushEmpty(t *testing.T) {
	r := streamRedactor(t)
	calls := 0
	s := r.NewStream(func([]byte) { calls++ })
	s.Flush()
	s.Write(nil)
	s.Flush()
	if calls != 0 || s.Counts().Total() != 0 {
		t.Errorf("%d emits, counts %v; want none", calls, s.Counts())
	}
}

// TestStreamCountsCopy checks that Counts is a snapshot the caller may
// change.
func TestStreamCountsCopy(t *testing.T) {
	r := streamRedactor(t)
	s := r.NewStream(func([]byte) {})
	s.Write([]byte(awsKeyID + "\n"))
	c := s.Counts()
	c["aws_access_key_id"] = 100
	if got := s.Counts()["aws_access_key_id"]; got != 1 {
		t.Errorf("count = %d, want 1", got)
	}
}

// fitsHold reports whether no part of in that a StreamRedactor holds back
// exceeds streamHold: no line is longer, and no private key block either
// (checked crudely: an input holding a key marker is small).
func fitsHold(in []byte) bool {
	if len(in) <= streamHold {
		return true
	}
	if bytes.Contains(in, privateKeyMarker) {
		return false
	}
	for l := range bytes.SplitSeq(in, []byte("\n")) {
		if len(l) > streamHold {
			return false
		}
	}
	return true
}

// FuzzStreamRedactor splits input at random points and checks that the
// streamed output equals Redact of the whole whenever no held part had to
// be cut.
func FuzzStreamRedactor(f *testing.F) {
	r := streamRedactor(f)
	seeds := []string{
		"",
		"a\nb\n",
		"export AWS_ACCESS_KEY_ID=" + awsKeyID + "\nAuthorization: Bearer " + jwtTok + "\n",
		"before\n" + pemBlock("RSA") + "\nafter " + ghToken + "\n" + pemBlock("EC"),
		"x\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\n",
		"-----END PRIVATE KEY-----BEGIN PRIVATE KEY-----END PRIVATE KEY-----END PRIVATE KEY-----\nabc\n",
		"open /home/alice/x " + streamSecret + " INTERNAL-123456 https://u:pa55w0rd-x@h/\n",
		`password = "a b c d e f g h" token='` + slackTok + "'\r\n\xff\xfe",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		var chunks [][]byte
		for rest := in; len(rest) > 0; {
			n := 1 + rng.IntN(min(len(rest), 1+rng.IntN(64)))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		out, counts := streamRun(t, r, chunks)
		if !fitsHold(in) {
			return
		}
		want, wantCounts := r.Redact(in)
		if got := bytes.Join(out, nil); !bytes.Equal(got, want) {
			t.Fatalf("chunks %q:\n got %q\nwant %q", chunks, got, want)
		}
		if !maps.Equal(counts, wantCounts) {
			t.Fatalf("chunks %q: counts %v, want %v", chunks, counts, wantCounts)
		}
	})
}

// TestStreamNothingToHide checks that a StreamRedactor whose Redactor hides
// nothing (the CLI's, run by the operator) emits every chunk as it comes,
// a partial line included: holding it back would only delay a prompt or a
// progress line, never hide anything.
func TestStreamNothingToHide(t *testing.T) {
	var out []string
	s := mustRedactor(t, RedactConfig{}).NewStream(func(b []byte) { out = append(out, string(b)) })
	for _, chunk := range []string{"Name: ", "50%\r", "\n", ""} {
		s.Write([]byte(chunk))
	}
	if want := []string{"Name: ", "50%\r", "\n"}; !slices.Equal(out, want) {
		t.Errorf("emitted before Flush: %q, want each chunk at once: %q", out, want)
	}
	n := len(out)
	s.Flush()
	if len(out) != n {
		t.Errorf("Flush emitted %q, want nothing more", out[n:])
	}
}
