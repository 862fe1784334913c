package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerModel: the server's model is the environment's with the
// file's "model" over it; none without a model name; a key from the
// variable api_key_env names; bad settings refused naming the field.
func TestServerModel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		model    *modelConfig
		wantOn   bool
		wantKey  string
		wantURL  string
		wantErr  string
		provider string
	}{
		{name: "nothing", wantOn: false},
		{name: "the environment", env: map[string]string{"CRUCIBLE_MODEL": "m", "OPENAI_API_KEY": "sk-env-key-123"}, wantOn: true, wantKey: "sk-env-key-123", provider: "openai"},
		{name: "the file over the environment", env: map[string]string{"CRUCIBLE_MODEL": "m", "OPENAI_API_KEY": "sk-env-key-123"},
			model: &modelConfig{Model: "other", BaseURL: "http://localhost:11434/v1"}, wantOn: true, wantKey: "sk-env-key-123", wantURL: "http://localhost:11434/v1", provider: "openai"},
		{name: "a key from a named variable", env: map[string]string{"MY_KEY": "sk-named-key-456"},
			model: &modelConfig{Provider: "anthropic", Model: "claude", APIKeyEnv: "MY_KEY"}, wantOn: true, wantKey: "sk-named-key-456", provider: "anthropic"},
		{name: "another provider drops the environment's key", env: map[string]string{"OPENAI_API_KEY": "sk-env-key-123"},
			model: &modelConfig{Provider: "anthropic", Model: "claude"}, wantErr: "no API key"},
		{name: "an empty named variable", model: &modelConfig{Model: "m", APIKeyEnv: "CRUCIBLE_TEST_UNSET_KEY"}, wantErr: "api_key_env: the environment variable CRUCIBLE_TEST_UNSET_KEY is empty"},
		{name: "both keys", model: &modelConfig{Model: "m", APIKey: "sk-1234567890", APIKeyEnv: "X"}, wantErr: "exclude each other"},
		{name: "a bad URL", model: &modelConfig{Model: "m", BaseURL: "ftp://x"}, wantErr: "model: llm config: bad base URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"CRUCIBLE_PROVIDER", "CRUCIBLE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MY_KEY", "CRUCIBLE_TEST_UNSET_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			cfg, on, err := serverModel(tc.model)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case on != tc.wantOn || (on && (cfg.APIKey != tc.wantKey || cfg.BaseURL != tc.wantURL || cfg.Provider != tc.provider)):
				t.Fatalf("serverModel = %+v, %v; want on %v, key %q, URL %q, provider %q", cfg, on, tc.wantOn, tc.wantKey, tc.wantURL, tc.provider)
			}
		})
	}
}

// TestServeConfigAgents: "agents" is parsed, its durations checked.
func TestServeConfigAgents(t *testing.T) {
	for _, tc := range []struct {
		json, err string
	}{
		{`{"agents": {"max_runs": 3, "approval_timeout": "1m", "maxima": {"max_tokens": 5000}}}`, ""},
		{`{"agents": {"approval_timeout": "soon"}}`, `agents: approval_timeout must be a positive duration`},
		{`{"agents": {"retain_for": "-1h"}}`, `agents: retain_for must be a positive duration`},
		{`{"agents": {"api_key": "x"}}`, `unknown field "api_key"`},
	} {
		path := writeConfig(t, tc.json)
		c, err := loadServeConfig(path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.json, err)
		case tc.err == "" && (c.agents.MaxRuns != 3 || c.agents.ApprovalTimeout.String() != "1m0s" || c.agents.Maxima.MaxTokens != 5000):
			t.Errorf("%s: agents %+v", tc.json, c.agents)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.err)
		}
	}
}

// writeConfig writes a --config file holding json and returns its path.
func writeConfig(t *testing.T, json string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
