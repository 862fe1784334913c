package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// schemaName is what both APIs accept as a response format's or a tool's
// name.
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// check reports what is wrong with s for a request that also offers
// tools tools.
func (s *Schema) check(tools int) error {
	switch {
	case tools > 0:
		return errors.New("schema: a request has a schema or tools, not both")
	case !schemaName.MatchString(s.Name):
		return fmt.Errorf("schema: name %q: must be 1 to 64 letters, digits, '_' or '-'", s.Name)
	}
	var obj map[string]any
	if err := json.Unmarshal(s.Parameters, &obj); err != nil {
		return fmt.Errorf("schema %q: parameters: must be a JSON object: %v", s.Name, err)
	}
	return nil
}

// rejects reports whether err is a server's refusal of a request field:
// a 400 or 422 whose text (err's, which carries the API's message) names
// one of fields. Servers that do not know a field answer so (vLLM and
// llama.cpp name it in a validation error).
func rejects(err error, status int, fields ...string) bool {
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		return false
	}
	text := strings.ToLower(err.Error())
	for _, f := range fields {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// maxArgumentDecodes bounds how many layers of string encoding
// toolArguments peels off.
const maxArgumentDecodes = 3

// toolArguments normalises a tool call's arguments as a server sent them
// to the JSON object: OpenAI sends it as a string (the SDK gives its
// text; an object sent in its place gives the object's text), some
// servers encode that string twice, and an empty string means no
// arguments. Anything else is kept as it came, for the caller to judge.
func toolArguments(raw string) json.RawMessage {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}")
	}
	for range maxArgumentDecodes {
		var inner string
		if !strings.HasPrefix(s, `"`) || json.Unmarshal([]byte(s), &inner) != nil {
			break
		}
		s = strings.TrimSpace(inner)
	}
	if strings.HasPrefix(s, "{") && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return json.RawMessage(raw)
}
