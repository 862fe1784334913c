package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/service"
)

func TestServeConfigUIDRange(t *testing.T) {
	for _, tc := range []struct {
		json        string
		base, count int
		err         string // a part of the error; "" for none
	}{
		{`{}`, 0, 0, ""},
		{`{"uid_base": 3000000000, "uid_count": 1000}`, 3000000000, 1000, ""},
		{`{"uid_count": 100}`, 0, 100, ""},
		{`{"uid_base": 1000}`, 0, 0, "uid_base and uid_count: uid base must be at least 65536"},
		{`{"uid_count": -1}`, 0, 0, "uid_base and uid_count: uid count must be at least 1"},
		{`{"uid_base": 4294967000, "uid_count": 1000}`, 0, 0, "uid_base and uid_count: uid range [4294967000, 4294968000) must end by 4294967295"},
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadServeConfig(path)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.json, err)
		case tc.err == "" && (c.UIDBase != tc.base || c.UIDCount != tc.count):
			t.Errorf("%s: uid_base %d, uid_count %d; want %d, %d", tc.json, c.UIDBase, c.UIDCount, tc.base, tc.count)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.err)
		}
	}
}

func TestServeConfigPolicy(t *testing.T) {
	for _, tc := range []struct {
		json, mode, tenant string
		err                string // a part of the error; "" for none
	}{
		{`{}`, "", "", ""},
		{`{"policy": "warn"}`, "warn", "", ""},
		{`{"policy": {"mode": "block", "preset": "strict"}, "tenants": {"acme": {"policy": "block"}}}`, "block", "block", ""},
		{`{"policy": "strictest"}`, "", "", "policy.mode: must be one of off, warn, block"},
		{`{"policy": {"mode": "warn", "preset": "lax"}}`, "", "", "policy.preset: must name a preset"},
		{`{"tenants": {"acme": {"policy": "paranoid"}}}`, "", "", `tenants.acme.policy must be off, warn or block, got "paranoid"`},
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadServeConfig(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		var cfg service.Config
		c.apply(&cfg)
		if string(cfg.Policy.Mode) != tc.mode || string(cfg.Tenants["acme"].Policy) != tc.tenant {
			t.Errorf("%s: policy %q, tenant policy %q; want %q, %q", tc.json, cfg.Policy.Mode, cfg.Tenants["acme"].Policy, tc.mode, tc.tenant)
		}
	}
}

// TestServeConfigRuntime: --config's runtime and docker_image choose the
// runtime where --runtime and --docker-image were not given, the flags
// win where they were, and a runtime no runtime has is refused naming the
// field.
func TestServeConfigRuntime(t *testing.T) {
	flags := runtimeChoice{name: runtimeNative, dockerImage: "flag-image"}
	for _, tc := range []struct {
		json                  string
		nameGiven, imageGiven bool
		want                  runtimeChoice
		err                   string
	}{
		{`{}`, false, false, flags, ""},
		{`{"runtime": "gvisor", "docker_image": "python:3.12"}`, false, false, runtimeChoice{name: runtimeGVisor, dockerImage: "python:3.12"}, ""},
		{`{"runtime": "gvisor", "docker_image": "python:3.12"}`, true, true, flags, ""},
		{`{"runtime": "docker"}`, false, true, runtimeChoice{name: runtimeDocker, dockerImage: "flag-image"}, ""},
		{`{"runtime": "kvm"}`, false, false, runtimeChoice{}, `runtime: --runtime "kvm": want native, docker or gvisor`},
	} {
		path := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadServeConfig(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		if got := flags.withConfig(c, tc.nameGiven, tc.imageGiven); got != tc.want {
			t.Errorf("%s (flags given: %v, %v): %+v, want %+v", tc.json, tc.nameGiven, tc.imageGiven, got, tc.want)
		}
	}
}
