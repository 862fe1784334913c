package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestREADMEServeConfigs loads each JSON file the README gives (a block
// with file=NAME.json) as `crucible serve --config` does: unknown fields
// are refused, and the model is read over an environment that holds the
// keys the files name, so a field renamed in the code, or a file that no
// longer starts a server with its model, fails here.
func TestREADMEServeConfigs(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := parseTour(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"CRUCIBLE_PROVIDER", "CRUCIBLE_MODEL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(name, "")
	}
	t.Setenv("OPENAI_API_KEY", "sk-readme-openai-key-0123456789")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-readme-key-0123456789")
	dir := t.TempDir()
	seen := 0
	for _, it := range items {
		if !strings.HasSuffix(it.file, ".json") {
			continue
		}
		seen++
		path := filepath.Join(dir, it.file)
		if err := os.WriteFile(path, []byte(it.content), 0o644); err != nil {
			t.Fatal(err)
		}
		conf, err := loadServeConfig(path)
		if err != nil {
			t.Errorf("README line %d: %s: %v", it.line, it.file, err)
			continue
		}
		cfg, ok, err := serverModel(conf.Model)
		if err != nil || !ok {
			t.Errorf("README line %d: %s: the model: ok %v, %v", it.line, it.file, ok, err)
			continue
		}
		if conf.Model == nil || cfg.Provider != conf.Model.Provider || cfg.Model != conf.Model.Model {
			t.Errorf("README line %d: %s: the server would use %s:%s, not the file's model", it.line, it.file, cfg.Provider, cfg.Model)
		}
	}
	if seen < 2 {
		t.Errorf("the README gives %d serve.json files; the tour's and the Anthropic one at least", seen)
	}
}
