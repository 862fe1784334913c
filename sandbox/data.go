package sandbox

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Data is a byte string that survives JSON unchanged. Valid UTF-8 is encoded
// as a plain JSON string, so the common case stays readable; anything else
// (binary stdin, a program that prints raw bytes) is encoded as
// {"base64": "..."}. Decoding accepts both forms.
type Data []byte

type base64Data struct {
	Base64 *string `json:"base64"`
}

// MarshalJSON encodes d as a JSON string, or as {"base64": ...} when d is not
// valid UTF-8.
func (d Data) MarshalJSON() ([]byte, error) {
	if utf8.Valid(d) {
		return json.Marshal(string(d))
	}
	s := base64.StdEncoding.EncodeToString(d)
	return json.Marshal(base64Data{Base64: &s})
}

// UnmarshalJSON accepts a JSON string, {"base64": "..."} or null.
func (d *Data) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		// A string without escapes is its own bytes: copy them once
		// (stdin and files may be tens of MiB). The decoder calling this
		// method has checked b is a valid JSON string.
		if len(b) >= 2 && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 && utf8.Valid(b[1:len(b)-1]) {
			*d = bytes.Clone(b[1 : len(b)-1])
			return nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = Data(s)
		return nil
	}
	var w base64Data
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil || w.Base64 == nil {
		return errors.New(`expected a string or {"base64": "..."}`)
	}
	raw, err := base64.StdEncoding.DecodeString(*w.Base64)
	if err != nil {
		return errors.New("base64: " + err.Error())
	}
	*d = raw
	return nil
}
