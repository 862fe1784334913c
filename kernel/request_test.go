package kernel

import (
	"encoding/json"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestNewRequest proves a cell's context reaches the kernel under the
// names python_kernel.py reads ("context", "reset_context"), and is left
// out for the default context.
func TestNewRequest(t *testing.T) {
	rules := &sandbox.CodeRules{Mode: sandbox.PolicyBlock}
	for _, tc := range []struct {
		name string
		cell sandbox.Cell
		want string
	}{
		{"default context", sandbox.Cell{Code: "1"}, `{"id":7,"code":"1","token":"tok"}`},
		{"named context", sandbox.Cell{Code: "x", Context: "a"}, `{"id":7,"code":"x","token":"tok","context":"a"}`},
		{"reset", sandbox.Cell{Context: "a", ResetContext: true}, `{"id":7,"code":"","token":"tok","context":"a","reset_context":true}`},
		{"reset default", sandbox.Cell{ResetContext: true}, `{"id":7,"code":"","token":"tok","reset_context":true}`},
		{"policy", sandbox.Cell{Code: "1", Context: "b", Rules: rules},
			`{"id":7,"code":"1","token":"tok","policy":{"mode":"block","preset":"","modules":null,"calls":null,"introspection":null,"attributes":null,"members":null},"context":"b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(NewRequest(7, tc.cell, "tok"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}
