package jsonbody

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestExplain(t *testing.T) {
	type body struct {
		Code  string            `json:"code"`
		Files []struct{ N int } `json:"files"`
		Env   map[string]string `json:"env"`
	}
	for _, tc := range []struct {
		in, field, rule string
	}{
		{`{"code": 1}`, "code", "must be a string, got a JSON number"},
		{`{"files": [{"N": "x"}]}`, "files[0].N", "must be an integer, got a JSON string"},
		{`{"env": {"A": true}}`, "env.A", "must be a string, got a JSON boolean"},
		{`{"nope": 1}`, "nope", "is not a field here"},
		{`{"code": "a", "code": "b"}`, "code", "appears more than once"},
		{``, "body", "must be one JSON object; it is empty"},
		{`{"code": "a"} {}`, "body", "must be one JSON value and nothing after it"},
		{"{\"code\": \"\xff\"}", "code", "must be valid UTF-8"},
	} {
		var v body
		err := json.Unmarshal([]byte(tc.in), &v, json.RejectUnknownMembers(true))
		field, rule, ok := Explain(err)
		if !ok || field != tc.field || !strings.HasPrefix(rule, tc.rule) {
			t.Errorf("%q: field %q, rule %q, ok %v; want %q, %q...", tc.in, field, rule, ok, tc.field, tc.rule)
		}
	}
	if _, _, ok := Explain(errors.New("connection reset")); ok {
		t.Error("a read error was explained as JSON")
	}
}
