package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

const contentSecret = "content-Secret-5ee1"

// TestRedactContent: text has each secret replaced; other content holding
// a secret is withheld whole, never altered; clean content is kept as it
// is.
func TestRedactContent(t *testing.T) {
	r := mustRedactor(t, RedactConfig{Secrets: []string{contentSecret}, Patterns: true})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x19tEXtTitle\x00")
	cases := []struct {
		name, mime string
		in         []byte
		want       []byte
		withheld   bool
	}{
		{"text", "text/plain; charset=utf-8", []byte("k=" + contentSecret), []byte("k=[REDACTED:secret]"), false},
		{"text/* that is not UTF-8", "text/csv", []byte("\xff," + contentSecret), []byte("\xff,[REDACTED:secret]"), false},
		{"UTF-8 of an unknown type", "application/octet-stream", []byte(contentSecret + "\n"), []byte("[REDACTED:secret]\n"), false},
		{"JSON", "application/ld+json", []byte(`{"k":"` + contentSecret + `"}`), []byte(`{"k":"[REDACTED:secret]"}`), false},
		{"image holding the secret", "image/png", append(png, contentSecret+"\x00\xff"...), nil, true},
		{"image holding a credential pattern", "image/png", append(png, awsKeyID+"\xff"...), nil, true},
		{"binary holding a secret split by nothing", "application/octet-stream", []byte("\xff\xfe" + contentSecret), nil, true},
		{"clean image", "image/png", append(png, "\x00\xff"...), append(png, "\x00\xff"...), false},
		{"empty", "", nil, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, counts, err := r.RedactContent(c.mime, c.in)
			if withheld := errors.Is(err, ErrWithheld); withheld != c.withheld {
				t.Fatalf("err %v, want withheld %v", err, c.withheld)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("content %q, want %q", got, c.want)
			}
			if found := bytes.Contains(c.in, []byte(contentSecret)) || bytes.Contains(c.in, []byte(awsKeyID)); found != (counts.Total() > 0) {
				t.Errorf("counts %v for input %q", counts, c.in)
			}
		})
	}
}

// TestRedactResultEveryProgramField: a result with the secret in every
// field a program controls (output, reason, the error's type, message and
// traceback, value, artifact names and contents) has it nowhere after
// RedactResult; artifact names stay unique, and each artifact's digest
// matches the content it carries.
func TestRedactResultEveryProgramField(t *testing.T) {
	r := mustRedactor(t, RedactConfig{Secrets: []string{contentSecret}})
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	text, bin := []byte("v="+contentSecret), []byte("\xff\x00"+contentSecret)
	res := &sandbox.Result{
		Stdout: sandbox.Data(contentSecret), Stderr: sandbox.Data(contentSecret), Reason: "killed: " + contentSecret,
		Error: &sandbox.ExecError{Type: "E" + contentSecret, Message: contentSecret, Traceback: contentSecret},
		Value: contentSecret, ValueHTML: contentSecret,
		Artifacts: []sandbox.Artifact{
			{Name: "a-" + contentSecret, MIME: "text/plain", Content: text, Size: int64(len(text)), SHA256: sum(text)},
			{Name: "a-" + contentSecret + "x", MIME: "text/plain", ContentOmitted: true},
			{Name: "a-[REDACTED:secret]", MIME: "application/octet-stream", Content: bin, Size: int64(len(bin)), SHA256: sum(bin)},
		},
	}
	r.RedactResult(res)
	if got := res.Error.Type; got != "E[REDACTED:secret]" {
		t.Errorf("Error.Type = %q", got)
	}
	if got := res.Reason; got != "killed: [REDACTED:secret]" {
		t.Errorf("Reason = %q", got)
	}
	names := map[string]bool{}
	for _, a := range res.Artifacts {
		if names[a.Name] {
			t.Errorf("two artifacts named %q", a.Name)
		}
		names[a.Name] = true
		if a.Withheld == "" && len(a.Content) > 0 && (a.SHA256 != sum(a.Content) || a.Size != int64(len(a.Content))) {
			t.Errorf("artifact %s: digest %s, size %d do not match its content %q", a.Name, a.SHA256, a.Size, a.Content)
		}
	}
	if a := res.Artifacts[2]; a.Withheld == "" || !a.ContentOmitted || a.Content != nil || a.SHA256 != "" || a.Size != int64(len(bin)) {
		t.Errorf("binary artifact holding the secret: %+v, want withheld, without content or digest, its size kept", a)
	}
	fields := []string{string(res.Stdout), string(res.Stderr), res.Reason, res.Error.Type, res.Error.Message,
		res.Error.Traceback, res.Value, res.ValueHTML}
	for _, a := range res.Artifacts {
		fields = append(fields, a.Name, string(a.Content), a.Withheld)
	}
	if s := strings.Join(fields, "|"); strings.Contains(s, contentSecret) {
		t.Errorf("the secret survived: %q", s)
	}
}
