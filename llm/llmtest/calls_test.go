package llmtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestOpenAICalls: the call answered is the one of the conversation's
// turn (its assistant replies so far), the last once the script is used
// up, whatever other conversations came between; a request without the
// key is refused.
func TestOpenAICalls(t *testing.T) {
	srv := OpenAICalls(t, "k", Call{Name: "bash", Args: map[string]string{"command": "ls"}}, Call{Name: "submit", Args: map[string]string{}})
	user := map[string]any{"role": "user", "content": "the task"}
	reply := map[string]any{"role": "assistant", "content": "x"}
	post := func(key string, messages ...any) (int, string, string) {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": messages})
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, "", ""
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 || len(out.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("reply %+v: %v", out, err)
		}
		f := out.Choices[0].Message.ToolCalls[0].Function
		return resp.StatusCode, f.Name, f.Arguments
	}
	for _, tc := range []struct {
		name     string
		key      string
		messages []any
		status   int
		call     string
		args     string
	}{
		{"first turn", "k", []any{user}, 200, "bash", `{"command":"ls"}`},
		{"second turn", "k", []any{user, reply, user}, 200, "submit", `{}`},
		{"another conversation's first turn", "k", []any{user}, 200, "bash", `{"command":"ls"}`},
		{"past the script", "k", []any{user, reply, user, reply, user}, 200, "submit", `{}`},
		{"a wrong key", "nope", []any{user}, 401, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, call, args := post(tc.key, tc.messages...)
			if status != tc.status || call != tc.call || args != tc.args {
				t.Errorf("got %d %s %s, want %d %s %s", status, call, args, tc.status, tc.call, tc.args)
			}
		})
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d requests recorded, want the 4 served", n)
	}
}
