package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/policy"
)

// redactedTrace returns t as JSON with every string in it, keys included,
// redacted by r, and its artifacts without their contents (the records
// of the executions keep them). The output in a trace was redacted by
// the session already; the code, the model's replies and the task were
// not, and records redact code: so must the trace, which is kept and
// served as they are.
func redactedTrace(r *policy.Redactor, t *agent.Trace) (json.RawMessage, error) {
	for i := range t.Artifacts {
		t.Artifacts[i].Content = nil
	}
	for _, st := range t.Steps {
		if st.Result != nil {
			for i := range st.Result.Artifacts {
				st.Result.Artifacts[i].Content = nil
			}
		}
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	return redactJSON(r, b)
}

// redactJSON returns the JSON value b with every string in it redacted
// by r, token by token: the order of the members and the numbers stay as
// they are.
func redactJSON(r *policy.Redactor, b []byte) (json.RawMessage, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out)
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			return bytes.TrimSpace(out.Bytes()), nil
		}
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '"' {
			s, c := r.RedactString(tok.String())
			if c.Total() > 0 {
				tok = jsontext.String(s)
			}
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, err
		}
	}
}
