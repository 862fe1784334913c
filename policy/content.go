package policy

import (
	"errors"
	"mime"
	"strings"
	"unicode/utf8"
)

// ErrWithheld is the error of RedactContent for content that holds a
// secret and is not text.
var ErrWithheld = errors.New("content withheld: it holds a redacted secret and is not text, so hiding the secret would corrupt it")

// RedactContent redacts the content b of a file of media type mimeType,
// such as an artifact or a session's file. Text (text/*, JSON, or any
// content that is valid UTF-8) has each secret replaced by its marker, as
// output does. Other content that holds a secret is withheld whole: it
// returns nil and ErrWithheld. Replacing bytes inside an image, an archive
// or a compressed stream corrupts it without saying so, and a same-length
// mask would still corrupt it; withholding is honest, and the caller says
// why. Content without a secret is returned as it is. Either way the
// counts say what was found.
//
// Redaction finds secrets as they are written, not encoded: a program that
// compresses, encrypts or encodes a secret can still carry it out. It
// hides what a program lets slip, not what one smuggles.
func (r *Redactor) RedactContent(mimeType string, b []byte) ([]byte, Counts, error) {
	out, c := r.Redact(b)
	if c.Total() > 0 && !isText(mimeType, b) {
		return nil, c, ErrWithheld
	}
	return out, c, nil
}

// isText reports whether content b of media type mimeType is text, and so
// may hold secrets in readable form that markers can replace.
func isText(mimeType string, b []byte) bool {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err == nil && (strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return true
	}
	return utf8.Valid(b)
}
