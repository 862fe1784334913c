package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Fake credentials, built so that no scanner mistakes this file for a leak.
var (
	awsKeyID   = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSTSID   = "ASIA" + "Y34FZKBOKMUTVV7A"
	awsSecret  = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	gitSHA     = "3f786850e387550fdab836ed7e6dc881de23001b"
	ghToken    = "ghp_" + strings.Repeat("a1B2c3D4e5", 3) + "F6g7H8"
	ghPAT      = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
	glToken    = "glpat-" + "xYz12AbC-dEfGhIjKlMn"
	slackTok   = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKl"
	googleKey  = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
	openaiKey  = "sk-" + "abcDEF123ghiJKL456mnoPQR789stuVWX012yzaBCD345efg"
	openaiProj = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90_Kl12-Mn34Op56"
	antKey     = "sk-ant-" + "api03-AbCdEf0123456789_ghIJklMNopQRstUV-wx"
	stripeKey  = "sk_live_" + "51HxYzAbCdEfGh0123456789"
	stripeRKey = "rk_live_" + "51HxYzAbCdEfGh0123456789"
	jwtTok     = "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	bearerTok  = "mF_9.B5f-4.1JqM"
)

func pemBlock(typ string) string {
	return "-----BEGIN " + typ + " PRIVATE KEY-----\n" +
		"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n" +
		"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n" +
		"-----END " + typ + " PRIVATE KEY-----"
}

func mustRedactor(t testing.TB, cfg RedactConfig) *Redactor {
	t.Helper()
	r, err := NewRedactor(cfg)
	if err != nil {
		t.Fatalf("NewRedactor: %v", err)
	}
	return r
}

func TestPatterns(t *testing.T) {
	r := mustRedactor(t, DefaultRedactConfig())
	tests := []struct {
		name, in, want string
		kind           string // expected kind, "" for no redaction
	}{
		// True positives.
		{"aws key id", "key=" + awsKeyID + " ok", "key=[REDACTED:aws_access_key_id] ok", "aws_access_key_id"},
		{"aws sts key id", awsSTSID, "[REDACTED:aws_access_key_id]", "aws_access_key_id"},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_access_key]", "aws_secret_access_key"},
		{"aws secret ini", "aws_secret_access_key = " + awsSecret + "\n", "aws_secret_access_key = [REDACTED:aws_secret_access_key]\n", "aws_secret_access_key"},
		{"aws secret json", `{"SecretAccessKey": "` + awsSecret + `"}`, `{"SecretAccessKey": "[REDACTED:aws_secret_access_key]"}`, "aws_secret_access_key"},
		{"github classic", "token " + ghToken + ".", "token [REDACTED:github_token].", "github_token"},
		{"github pat", ghPAT, "[REDACTED:github_token]", "github_token"},
		{"gitlab", "GL " + glToken, "GL [REDACTED:gitlab_token]", "gitlab_token"},
		{"slack", "slack: " + slackTok, "slack: [REDACTED:slack_token]", "slack_token"},
		{"google", "k=" + googleKey + "&q=1", "k=[REDACTED:google_api_key]&q=1", "google_api_key"},
		{"openai", "OPENAI " + openaiKey, "OPENAI [REDACTED:openai_key]", "openai_key"},
		{"openai project", openaiProj, "[REDACTED:openai_key]", "openai_key"},
		{"anthropic", "key: " + antKey, "key: [REDACTED:anthropic_key]", "anthropic_key"},
		{"stripe secret", stripeKey, "[REDACTED:stripe_key]", "stripe_key"},
		{"stripe restricted", stripeRKey, "[REDACTED:stripe_key]", "stripe_key"},
		{"jwt", "jwt " + jwtTok + " end", "jwt [REDACTED:jwt] end", "jwt"},
		{"authorization header", "Authorization: Bearer " + bearerTok, "Authorization: Bearer [REDACTED:bearer_token]", "bearer_token"},
		{"authorization header any token", "authorization: bearer abcdefghij", "authorization: bearer [REDACTED:bearer_token]", "bearer_token"},
		{"bearer alone", "curl -H 'bearer " + bearerTok + "'", "curl -H 'bearer [REDACTED:bearer_token]'", "bearer_token"},
		{"bearer jwt", "Authorization: Bearer " + jwtTok, "Authorization: Bearer [REDACTED:jwt]", "jwt"},
		{"basic auth url", "GET https://alice:s3cr3t!@example.com/x", "GET https://alice:[REDACTED:basic_auth]@example.com/x", "basic_auth"},
		{"basic auth empty user", "redis://:hunter2@cache:6379", "redis://:[REDACTED:basic_auth]@cache:6379", "basic_auth"},
		{"password assignment", "password=hunter2hunter2 next", "password=[REDACTED:generic_secret] next", "generic_secret"},
		{"passwd colon", "passwd: correct-horse", "passwd: [REDACTED:generic_secret]", "generic_secret"},
		{"env password", "DB_PASSWORD=Tr0ub4dor&3", "DB_PASSWORD=[REDACTED:generic_secret]", "generic_secret"},
		{"secret", "secret=abcdefgh", "secret=[REDACTED:generic_secret]", "generic_secret"},
		{"api_key json", `{"api_key": "abc def ghi jkl"}`, `{"api_key": "[REDACTED:generic_secret]"}`, "generic_secret"},
		{"token python", "token = 'a1b2c3d4e5'", "token = '[REDACTED:generic_secret]'", "generic_secret"},
		{"go short assignment", `password := "letmein123"`, `password := "[REDACTED:generic_secret]"`, "generic_secret"},
		{"token holding github token", "token=" + ghToken, "token=[REDACTED:github_token]", "github_token"},

		// Near misses: nothing to hide.
		{"AKIA inside word", "XAKIA" + "IOSFODNN7EXAMPLE", "", ""},
		{"AKIA too long", awsKeyID + "X", "", ""},
		{"git sha", "commit " + gitSHA, "", ""},
		{"40 chars without context", "data " + awsSecret, "", ""},
		{"sk- in task-list", "task-list-" + "abcdefghijklmnopqrstuvwxyz0123", "", ""},
		{"sk- without digits", "sk-" + "some-long-hyphenated-identifier", "", ""},
		{"short sk-", "sk-" + "learn", "", ""},
		{"ghp short", "ghp_" + "short", "", ""},
		{"AIza short", "AIza" + "Sy", "", ""},
		{"eyJ alone", "eyJ" + "hbGciOi", "", ""},
		{"password without value", "Enter your password:", "", ""},
		{"password value on next line", "password:\n  username_field", "", ""},
		{"password too short", "password=hunter2", "", ""},
		{"tokens plural", "max_tokens=40960000", "", ""},
		{"bearer prose", "the bearer credentials are checked", "", ""},
		{"url without password", "https://example.com:8443/a@b", "", ""},
		{"url with user only", "ssh://git@github.com/x", "", ""},
		{"public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, counts := r.RedactString(tt.in)
			want := tt.want
			if tt.kind == "" {
				want = tt.in
			}
			if got != want {
				t.Errorf("RedactString(%q)\n got %q\nwant %q", tt.in, got, want)
			}
			if tt.kind == "" {
				if counts.Total() != 0 {
					t.Errorf("counts = %v, want none", counts)
				}
				return
			}
			if counts[tt.kind] != 1 || counts.Total() != 1 {
				t.Errorf("counts = %v, want one %s", counts, tt.kind)
			}
			again, c2 := r.RedactString(got)
			if again != got || c2.Total() != 0 {
				t.Errorf("second pass changed %q to %q (%v)", got, again, c2)
			}
		})
	}
}

func TestPrivateKey(t *testing.T) {
	r := mustRedactor(t, DefaultRedactConfig())
	for _, typ := range []string{"", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "} {
		key := strings.Replace(pemBlock(strings.TrimSpace(typ)), "BEGIN  PRIVATE", "BEGIN PRIVATE", 1)
		key = strings.Replace(key, "END  PRIVATE", "END PRIVATE", 1)
		in := "before\n" + key + "\nafter " + awsKeyID + "\n"
		got, counts := r.RedactString(in)
		want := "before\n[REDACTED:private_key]\nafter [REDACTED:aws_access_key_id]\n"
		if got != want {
			t.Errorf("%q key:\n got %q\nwant %q", typ, got, want)
		}
		if counts["private_key"] != 1 || counts["aws_access_key_id"] != 1 {
			t.Errorf("%q key: counts = %v", typ, counts)
		}
	}
	// Output cut by the output limit: no END line, key material still hidden.
	cut := "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\nAASCBKcwggSjAgEAAo"
	got, _ := r.RedactString(cut)
	if want := "x\n[REDACTED:private_key]"; got != want {
		t.Errorf("truncated key: got %q, want %q", got, want)
	}
	// Two blocks are two redactions, and the text between them stays.
	two := pemBlock("RSA") + "\nmiddle\n" + pemBlock("EC")
	got, counts := r.RedactString(two)
	if want := "[REDACTED:private_key]\nmiddle\n[REDACTED:private_key]"; got != want || counts["private_key"] != 2 {
		t.Errorf("two keys: got %q (%v)", got, counts)
	}
}

func TestBinaryInput(t *testing.T) {
	r := mustRedactor(t, RedactConfig{Patterns: true, Secrets: []string{"s3cr3t-value"}})
	head := []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe, 0x00, 0xc3, ' '}
	tail := []byte{' ', 0x80, 0x00, 0xe2, 0x82, 0xff}
	var in []byte
	in = append(in, head...)
	in = append(in, awsKeyID...)
	in = append(in, tail...)
	in = append(in, "s3cr3t-value"...)
	in = append(in, 0xfe)
	got, counts := r.Redact(in)
	var want []byte
	want = append(want, head...)
	want = append(want, "[REDACTED:aws_access_key_id]"...)
	want = append(want, tail...)
	want = append(want, "[REDACTED:secret]"...)
	want = append(want, 0xfe)
	if !bytes.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if counts.Total() != 2 {
		t.Errorf("counts = %v", counts)
	}
	clean := []byte{0xff, 0x00, 0x80, 'a', 0xc3}
	if out, c := r.Redact(clean); !bytes.Equal(out, clean) || c.Total() != 0 {
		t.Errorf("clean binary changed: %q (%v)", out, c)
	}
}

func TestSecretsAndOverlap(t *testing.T) {
	r := mustRedactor(t, RedactConfig{
		Patterns: true,
		Secrets:  []string{"correct-horse-battery", "horse-battery-staple", openaiKey},
	})
	tests := []struct{ in, want string }{
		{"pw correct-horse-battery!", "pw [REDACTED:secret]!"},
		// Overlapping configured secrets: one marker covers both.
		{"correct-horse-battery-staple end", "[REDACTED:secret] end"},
		// A configured secret that is also a pattern match is counted once, as secret.
		{"k " + openaiKey, "k [REDACTED:secret]"},
		// The generic assignment's value overlaps a configured secret.
		{"password=xx" + "correct-horse-battery", "password=[REDACTED:generic_secret]"},
		{"a correct-horse-battery b correct-horse-battery", "a [REDACTED:secret] b [REDACTED:secret]"},
	}
	for _, tt := range tests {
		got, counts := r.RedactString(tt.in)
		if got != tt.want {
			t.Errorf("RedactString(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		if n := strings.Count(got, "[REDACTED:"); counts.Total() != n {
			t.Errorf("RedactString(%q): counts %v, %d markers", tt.in, counts, n)
		}
	}
	// Patterns off: only configured values.
	r = mustRedactor(t, RedactConfig{Secrets: []string{"correct-horse-battery"}})
	got, _ := r.RedactString(awsKeyID + " correct-horse-battery")
	if want := awsKeyID + " [REDACTED:secret]"; got != want {
		t.Errorf("patterns off: got %q, want %q", got, want)
	}
}

func TestHostPaths(t *testing.T) {
	r := mustRedactor(t, RedactConfig{HostPaths: []string{"/root", "/home/alice/", "/var/lib/crucible", "/var/lib/crucible/runs"}})
	tests := []struct{ in, want string }{
		{"/root", "[HOST_PATH]"},
		{"open /root/.ssh/id_rsa failed", "open [HOST_PATH]/.ssh/id_rsa failed"},
		{"/rooted/x", "/rooted/x"},
		{"/srv/root/x", "/srv/root/x"},
		{"'/root'", "'[HOST_PATH]'"},
		{"file:///root/a", "file://[HOST_PATH]/a"},
		{"/home/alice/data.csv and /home/alice", "[HOST_PATH]/data.csv and [HOST_PATH]"},
		{"/home/alicex", "/home/alicex"},
		{"/var/lib/crucible/runs/42", "[HOST_PATH]/42"},
		{"/var/lib/crucible/cache", "[HOST_PATH]/cache"},
		{"/root /root:/root", "[HOST_PATH] [HOST_PATH]:[HOST_PATH]"},
	}
	for _, tt := range tests {
		got, counts := r.RedactString(tt.in)
		if got != tt.want {
			t.Errorf("RedactString(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n := strings.Count(got, HostPathMarker); counts[KindHostPath] != n {
			t.Errorf("RedactString(%q): counts %v, %d markers", tt.in, counts, n)
		}
	}
}

func TestExtra(t *testing.T) {
	r := mustRedactor(t, RedactConfig{Extra: []string{`INTERNAL-\d{6}`, `tenant=(\w+)`}})
	got, counts := r.RedactString("id INTERNAL-123456 tenant=acme.")
	if want := "id [REDACTED:extra] tenant=[REDACTED:extra]."; got != want || counts[KindExtra] != 2 {
		t.Errorf("got %q (%v), want %q", got, counts, want)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  RedactConfig
		want string
	}{
		{"short secret", RedactConfig{Secrets: []string{"long-enough", "short"}}, "Secrets[1]"},
		{"empty secret", RedactConfig{Secrets: []string{""}}, "Secrets[0]"},
		{"bad regexp", RedactConfig{Extra: []string{`ok`, `(unclosed`}}, "Extra[1]"},
		{"relative host path", RedactConfig{HostPaths: []string{"/root", "home/alice"}}, "HostPaths[1]"},
		{"root host path", RedactConfig{HostPaths: []string{"//"}}, "HostPaths[0]"},
	}
	for _, tt := range tests {
		r, err := NewRedactor(tt.cfg)
		if err == nil || r != nil {
			t.Errorf("%s: NewRedactor = %v, %v; want an error", tt.name, r, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q does not name %s", tt.name, err, tt.want)
		}
	}
	if _, err := NewRedactor(RedactConfig{Secrets: []string{"12345678"}}); err != nil {
		t.Errorf("8-byte secret rejected: %v", err)
	}
}

func TestRedactResult(t *testing.T) {
	r := mustRedactor(t, RedactConfig{Patterns: true, HostPaths: []string{"/home/alice"}})
	png := []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}
	png = append(png, awsKeyID...) // a binary artifact holding a secret is withheld
	digest := func(b []byte) string {
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	csv := []byte("name,key\nprod," + awsKeyID + "\n")
	clean := []byte(`{"ok": true}`)
	res := &sandbox.Result{
		Stdout: sandbox.Data("token " + ghToken + "\n"),
		Stderr: sandbox.Data("File \"/home/alice/x.py\", line 1\n"),
		Error: &sandbox.ExecError{
			Type:      "ValueError",
			Message:   "bad key " + stripeKey,
			Traceback: "Traceback:\n  File \"/home/alice/x.py\"\nValueError: bad key " + stripeKey,
		},
		Value:     "'" + jwtTok + "'",
		ValueHTML: "<td>" + googleKey + "</td>",
		Displays: []sandbox.Display{
			{MIME: "text/html", Data: sandbox.Data("<td>" + ghToken + "</td>"), Text: "t " + ghToken},
			{MIME: "image/png", Data: sandbox.Data(png), Text: "<Figure>"},
		},
		Artifacts: []sandbox.Artifact{
			{Name: "chart.png", MIME: "image/png", Content: png, Size: int64(len(png)), SHA256: digest(png)},
			{Name: "keys.csv", MIME: "text/csv; charset=utf-8", Content: csv, Size: int64(len(csv)), SHA256: digest(csv)},
			{Name: "ok.json", MIME: "application/json", Content: clean, Size: int64(len(clean)), SHA256: digest(clean)},
			{Name: "notes", MIME: "application/octet-stream", Content: []byte("pw: " + slackTok)},
		},
	}
	counts := r.RedactResult(res)
	checks := []struct{ field, got, want string }{
		{"Stdout", string(res.Stdout), "token [REDACTED:github_token]\n"},
		{"Stderr", string(res.Stderr), "File \"[HOST_PATH]/x.py\", line 1\n"},
		{"Error.Message", res.Error.Message, "bad key [REDACTED:stripe_key]"},
		{"Error.Traceback", res.Error.Traceback, "Traceback:\n  File \"[HOST_PATH]/x.py\"\nValueError: bad key [REDACTED:stripe_key]"},
		{"Value", res.Value, "'[REDACTED:jwt]'"},
		{"ValueHTML", res.ValueHTML, "<td>[REDACTED:google_api_key]</td>"},
		{"display html", string(res.Displays[0].Data), "<td>[REDACTED:github_token]</td>"},
		{"display text", res.Displays[0].Text, "t [REDACTED:github_token]"},
		{"display png", string(res.Displays[1].Data), ""},
		{"display png withheld", res.Displays[1].Omitted, "withheld: " + ErrWithheld.Error()},
		{"png", string(res.Artifacts[0].Content), ""},
		{"png withheld", res.Artifacts[0].Withheld, ErrWithheld.Error()},
		{"png digest", res.Artifacts[0].SHA256, ""},
		{"csv", string(res.Artifacts[1].Content), "name,key\nprod,[REDACTED:aws_access_key_id]\n"},
		{"json", string(res.Artifacts[2].Content), string(clean)},
		{"utf-8 octet-stream", string(res.Artifacts[3].Content), "pw: [REDACTED:slack_token]"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	for _, a := range res.Artifacts[1:3] {
		if a.Size != int64(len(a.Content)) || a.SHA256 != digest(a.Content) {
			t.Errorf("artifact %s: size %d sha %s do not match its content", a.Name, a.Size, a.SHA256)
		}
	}
	want := Counts{"github_token": 3, "host_path": 2, "stripe_key": 2, "jwt": 1, "google_api_key": 1, "aws_access_key_id": 3, "slack_token": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
	if counts.Total() != 13 {
		t.Errorf("Total = %d, want 13", counts.Total())
	}
	// A result without an error or output is fine.
	if c := r.RedactResult(&sandbox.Result{}); c.Total() != 0 {
		t.Errorf("empty result: %v", c)
	}
}

func TestCounts(t *testing.T) {
	c := Counts{"a": 1}
	c.Add(Counts{"a": 2, "b": 3})
	c.Add(nil)
	if c["a"] != 3 || c["b"] != 3 || c.Total() != 6 {
		t.Errorf("counts = %v", c)
	}
	if Counts(nil).Total() != 0 {
		t.Error("nil Total")
	}
}

// benchInput is 1 MiB of program output: log lines, tracebacks with host
// paths, and a credential every few hundred lines.
func benchInput() []byte {
	lines := []string{
		"2024-05-01T12:00:00Z INFO request id=7f3a path=/api/v1/items status=200 took=12ms",
		"  File \"/home/alice/project/analysis.py\", line 42, in <module>",
		"row 1234: 3.14159, 2.71828, 1.41421, token_count=17, https://example.com/data.csv",
		"Epoch 3/10 - loss: 0.2345 - accuracy: 0.9123 - commit " + gitSHA,
	}
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
		if i%500 == 0 {
			b.WriteString("export AWS_ACCESS_KEY_ID=" + awsKeyID + " password=hunter2hunter2 Authorization: Bearer " + jwtTok + "\n")
		}
	}
	return b.Bytes()[:1<<20]
}

func BenchmarkRedact1MiB(b *testing.B) {
	r := mustRedactor(b, RedactConfig{Patterns: true, Secrets: []string{"s3cr3t-value-123"}, HostPaths: []string{"/home/alice", "/root"}})
	in := benchInput()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.Redact(in)
	}
}

// TestHostileOutputStaysLinear feeds inputs built to make a per-candidate
// search quadratic (an output is untrusted). Quadratic work took over 30s on
// the first of these at 256 KiB; linear work takes well under a second.
func TestHostileOutputStaysLinear(t *testing.T) {
	r := mustRedactor(t, DefaultRedactConfig())
	units := []string{"-----BEGIN RSA PRIVATE KEY-----!\n", `password="`, "eyJ-", "secret", "bearer a-", "sk-a", "://a:", "github_pat_"}
	for _, u := range units {
		in := []byte(strings.Repeat(u, (256<<10)/len(u)))
		start := time.Now()
		r.Redact(in)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q × %d: %v", u, len(in)/len(u), d)
		}
	}
}
