package llm

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Provider names accepted in Config.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// defaultTimeout bounds one HTTP attempt when Config.Timeout is zero.
const defaultTimeout = 10 * time.Minute

// Config says which model to use and how to reach it.
type Config struct {
	// Provider is ProviderOpenAI (any OpenAI-compatible chat-completions
	// endpoint) or ProviderAnthropic.
	Provider string
	// Model names the model, such as "gpt-4o" or "claude-sonnet-4-5".
	Model string
	// BaseURL overrides the provider's endpoint. For OpenAI-compatible
	// servers it includes the API prefix, such as
	// "http://localhost:11434/v1" for Ollama; for Anthropic it is the host
	// alone, such as "https://api.anthropic.com".
	BaseURL string
	// APIKey authenticates. It may be empty only when BaseURL is set: a
	// local or private server (Ollama, vLLM, llama.cpp, a proxy) often
	// needs no key.
	APIKey string
	// Timeout bounds one HTTP attempt; 0 means 10 minutes.
	Timeout time.Duration
	// MaxRetries is how many times a transient failure is retried; 0 means
	// the default (3, so 4 attempts in all) and a negative value means
	// never.
	MaxRetries int
}

// ConfigFromEnv reads a Config from the environment: CRUCIBLE_PROVIDER,
// CRUCIBLE_MODEL and the chosen provider's OPENAI_API_KEY and
// OPENAI_BASE_URL or ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL. Without
// CRUCIBLE_PROVIDER the provider is "anthropic" when ANTHROPIC_API_KEY is
// set and neither OPENAI_API_KEY nor OPENAI_BASE_URL is, else "openai".
// The result is not validated: flags may still override it.
func ConfigFromEnv() Config {
	env := func(k string) string { return strings.TrimSpace(os.Getenv(k)) }
	c := Config{Provider: strings.ToLower(env("CRUCIBLE_PROVIDER")), Model: env("CRUCIBLE_MODEL")}
	if c.Provider == "" {
		c.Provider = ProviderOpenAI
		if env("ANTHROPIC_API_KEY") != "" && env("OPENAI_API_KEY") == "" && env("OPENAI_BASE_URL") == "" {
			c.Provider = ProviderAnthropic
		}
	}
	switch c.Provider {
	case ProviderOpenAI:
		c.APIKey, c.BaseURL = env("OPENAI_API_KEY"), env("OPENAI_BASE_URL")
	case ProviderAnthropic:
		c.APIKey, c.BaseURL = env("ANTHROPIC_API_KEY"), env("ANTHROPIC_BASE_URL")
	}
	return c
}

// Validate reports every problem with c, each naming the environment
// variable or flag that sets it, before any request is made.
func (c Config) Validate() error {
	var errs []error
	keyVar, urlVar := "OPENAI_API_KEY", "OPENAI_BASE_URL"
	switch c.Provider {
	case ProviderOpenAI:
	case ProviderAnthropic:
		keyVar, urlVar = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
	default:
		errs = append(errs, fmt.Errorf("unknown provider %q: set CRUCIBLE_PROVIDER or --provider to %q or %q",
			c.Provider, ProviderOpenAI, ProviderAnthropic))
		keyVar, urlVar = "", ""
	}
	if c.Model == "" {
		errs = append(errs, errors.New("no model: set CRUCIBLE_MODEL or --model"))
	}
	if c.BaseURL != "" && urlVar != "" {
		if err := checkBaseURL(c.BaseURL); err != nil {
			errs = append(errs, fmt.Errorf("bad base URL %q (%s or --base-url): %w", c.BaseURL, urlVar, err))
		}
	}
	if c.APIKey == "" && c.BaseURL == "" && keyVar != "" {
		errs = append(errs, fmt.Errorf("no API key: set %s or --api-key (it may be left out only when a base URL is set, as for a local Ollama or vLLM)", keyVar))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative timeout %v: use 0 for the default or a positive duration", c.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("llm config: %w", err)
	}
	return nil
}

// checkBaseURL accepts absolute http and https URLs with a host.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("scheme must be http or https")
	case u.Host == "":
		return errors.New("host missing")
	}
	return nil
}

// timeout returns the per-attempt HTTP timeout.
func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return defaultTimeout
}

// New validates c and builds its provider.
func New(c Config) (Provider, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Provider == ProviderAnthropic {
		return newAnthropic(c), nil
	}
	return newOpenAI(c), nil
}
