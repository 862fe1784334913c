package main

import (
	"strings"
	"testing"
)

// TestHelpHidesKeys: the API keys the environment gives are never printed
// as a flag's default in --help, for every command that takes a model.
func TestHelpHidesKeys(t *testing.T) {
	const openai, crucibleKey = "sk-help-secret-openai-0123", "crk_help-secret-crucible-0123"
	for _, command := range []string{"agent", "analyst", "swe"} {
		cmd := crucibleCmd(command, "--help")
		cmd.Env = append(cmd.Env, "OPENAI_API_KEY="+openai, "CRUCIBLE_API_KEY="+crucibleKey)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crucible %s --help: %v\n%s", command, err, out)
		}
		for _, key := range []string{openai, crucibleKey} {
			if strings.Contains(string(out), key) {
				t.Errorf("crucible %s --help shows the key %s:\n%s", command, key, out)
			}
		}
	}
}
