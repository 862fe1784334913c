package llm

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := Config{Provider: ProviderOpenAI, Model: "gpt-test", APIKey: "sk"}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		c    Config
		want []string // substrings of the error; none means valid
	}{
		{"openai", ok, nil},
		{"anthropic", Config{Provider: ProviderAnthropic, Model: "claude-test", APIKey: "k"}, nil},
		{"local server without key", with(func(c *Config) { c.APIKey, c.BaseURL = "", "http://localhost:11434/v1" }), nil},
		{"private server without key", with(func(c *Config) { c.APIKey, c.BaseURL = "", "http://10.0.0.5:8000/v1" }), nil},
		{"unknown provider", with(func(c *Config) { c.Provider = "gemini" }), []string{`"gemini"`, "CRUCIBLE_PROVIDER", "--provider"}},
		{"no provider", with(func(c *Config) { c.Provider = "" }), []string{"CRUCIBLE_PROVIDER", "--provider"}},
		{"no openai key", with(func(c *Config) { c.APIKey = "" }), []string{"OPENAI_API_KEY", "--api-key"}},
		{"no anthropic key", Config{Provider: ProviderAnthropic, Model: "m"}, []string{"ANTHROPIC_API_KEY", "--api-key"}},
		{"no scheme", with(func(c *Config) { c.BaseURL = "localhost:11434" }), []string{"OPENAI_BASE_URL", "--base-url", "scheme"}},
		{"bad scheme", with(func(c *Config) { c.BaseURL = "ftp://example.com" }), []string{"OPENAI_BASE_URL", "scheme"}},
		{"no host", with(func(c *Config) { c.BaseURL = "http://" }), []string{"OPENAI_BASE_URL", "host"}},
		{"unparsable", with(func(c *Config) { c.BaseURL = "http://a b" }), []string{"OPENAI_BASE_URL"}},
		{"anthropic url", Config{Provider: ProviderAnthropic, Model: "m", BaseURL: "api.anthropic.com"}, []string{"ANTHROPIC_BASE_URL"}},
		{"no model", with(func(c *Config) { c.Model = "" }), []string{"CRUCIBLE_MODEL", "--model"}},
		{"negative timeout", with(func(c *Config) { c.Timeout = -time.Second }), []string{"timeout"}},
		{"all at once", Config{Provider: ProviderOpenAI}, []string{"CRUCIBLE_MODEL", "OPENAI_API_KEY"}},
	} {
		err := tc.c.Validate()
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: valid, want an error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %s", tc.name, err, w)
			}
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"nothing", nil, Config{Provider: ProviderOpenAI}},
		{"only anthropic key", map[string]string{"ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://proxy", "CRUCIBLE_MODEL": " claude-x \n"},
			Config{Provider: ProviderAnthropic, APIKey: "ak", BaseURL: "http://proxy", Model: "claude-x"}},
		{"both keys", map[string]string{"ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"}, Config{Provider: ProviderOpenAI, APIKey: "ok"}},
		{"anthropic key and local openai server", map[string]string{"ANTHROPIC_API_KEY": "ak", "OPENAI_BASE_URL": "http://localhost:11434/v1"},
			Config{Provider: ProviderOpenAI, BaseURL: "http://localhost:11434/v1"}},
		{"explicit provider", map[string]string{"CRUCIBLE_PROVIDER": "Anthropic", "ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"},
			Config{Provider: ProviderAnthropic, APIKey: "ak"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CRUCIBLE_MODEL", "CRUCIBLE_PROVIDER"} {
				t.Setenv(k, tc.env[k])
			}
			if got := ConfigFromEnv(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{Provider: ProviderOpenAI}); err == nil {
		t.Error("invalid config accepted")
	}
	for _, c := range []Config{
		{Provider: ProviderOpenAI, Model: "gpt-test", BaseURL: "http://127.0.0.1:8080/v1"},
		{Provider: ProviderAnthropic, Model: "claude-test", APIKey: "k"},
	} {
		p, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := c.Provider + ":" + c.Model; p.Name() != want {
			t.Errorf("name %q, want %q", p.Name(), want)
		}
	}
	for retries, attempts := range map[int]int{-1: 1, 0: 4, 2: 3} {
		if got := newRetryPolicy(retries).attempts; got != attempts {
			t.Errorf("MaxRetries %d: %d attempts, want %d", retries, got, attempts)
		}
	}
}
