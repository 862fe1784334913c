package sandbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := func() Request { return Request{Language: Python, Code: "print(1)"} }
	tests := []struct {
		name  string
		edit  func(*Request)
		field string // "" means valid
		rule  string // substring of the rule
	}{
		{"minimal", func(r *Request) {}, "", ""},
		{"all languages", func(r *Request) { r.Language = Bash }, "", ""},
		{"missing language", func(r *Request) { r.Language = "" }, "language", "is required"},
		{"unknown language", func(r *Request) { r.Language = "cobol" }, "language", "must be one of"},
		{"alias is not canonical", func(r *Request) { r.Language = "py" }, "language", "must be one of"},
		{"NUL in code", func(r *Request) { r.Code = "print(1)\x00" }, "code", "NUL"},
		{"UTF-8 code", func(r *Request) { r.Code = "print('héllo, 世界 🌍')" }, "", ""},
		{"invalid UTF-8 in code", func(r *Request) { r.Code = "print('\xff')" }, "code", "valid UTF-8"},
		{"truncated UTF-8 in code", func(r *Request) { r.Code = "print('\xe4\xb8')" }, "code", "valid UTF-8"},
		{"surrogate in code", func(r *Request) { r.Code = "x = '\xed\xa0\x80'" }, "code", "valid UTF-8"},
		{"invalid UTF-8 in bash code", func(r *Request) { r.Language, r.Code = Bash, "echo \xc3\x28" }, "code", "valid UTF-8"},
		{"huge code", func(r *Request) { r.Code = strings.Repeat("x", MaxCodeBytes+1) }, "code", "at most"},
		{"negative memory", func(r *Request) { r.Limits.MemoryBytes = -1 }, "limits.memory_bytes", "negative"},
		{"absurd memory", func(r *Request) { r.Limits.MemoryBytes = 1 << 40 }, "limits.memory_bytes", "between"},
		{"tiny memory", func(r *Request) { r.Limits.MemoryBytes = 1024 }, "limits.memory_bytes", "between"},
		{"absurd wall time", func(r *Request) { r.Limits.WallTimeMS = 10 * 3_600_000 }, "limits.wall_time_ms", "between"},
		{"negative processes", func(r *Request) { r.Limits.Processes = -5 }, "limits.processes", "negative"},
		{"file ok", func(r *Request) { r.Files = []File{{Name: "data/in.csv", Content: Data("a,b")}} }, "", ""},
		{"dotdot", func(r *Request) { r.Files = []File{{Name: "../x"}} }, "files[0].name", ".."},
		{"inner dotdot", func(r *Request) { r.Files = []File{{Name: "a/../../x"}} }, "files[0].name", ".."},
		{"absolute", func(r *Request) { r.Files = []File{{Name: "/etc/passwd"}} }, "files[0].name", "relative"},
		{"NUL name", func(r *Request) { r.Files = []File{{Name: "a\x00b"}} }, "files[0].name", "NUL"},
		{"empty name", func(r *Request) { r.Files = []File{{Name: ""}} }, "files[0].name", "empty"},
		{"unclean", func(r *Request) { r.Files = []File{{Name: "a//b"}} }, "files[0].name", "clean"},
		{"dot", func(r *Request) { r.Files = []File{{Name: "./a"}} }, "files[0].name", "clean"},
		{"backslash", func(r *Request) { r.Files = []File{{Name: `a\b`}} }, "files[0].name", "separator"},
		{"control char", func(r *Request) { r.Files = []File{{Name: "a\nb"}} }, "files[0].name", "control"},
		{"duplicate", func(r *Request) { r.Files = []File{{Name: "a"}, {Name: "a"}} }, "files[1].name", "unique"},
		{"file under file", func(r *Request) { r.Files = []File{{Name: "a"}, {Name: "a/b"}} }, "files[1].name", "also given as a file"},
		{"too many files", func(r *Request) { r.Files = make([]File, MaxFiles+1) }, "files", "at most"},
		{"files exceed disk", func(r *Request) {
			r.Limits.DiskBytes = 64 * KiB
			r.Files = []File{{Name: "big", Content: make(Data, 65*KiB)}}
		}, "files", "disk_bytes"},
		{"bad env name", func(r *Request) { r.Env = map[string]string{"A-B": "1"} }, "env", "must match"},
		{"NUL env value", func(r *Request) { r.Env = map[string]string{"A": "\x00"} }, "env.A", "NUL"},
		{"network", func(r *Request) { r.Network = Network{bad: "host"} }, "network", "none"},
		{"network allow entry", func(r *Request) { r.Network.Allow = []string{"example.org", "a b"} }, "network.allow[1]", "host name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok()
			tt.edit(&r)
			err := r.Validate()
			wantInputError(t, err, tt.field, tt.rule)
		})
	}
}

func TestWithDefaults(t *testing.T) {
	got := Limits{MemoryBytes: 64 * MiB, DiskBytes: 1 * MiB}.WithDefaults()
	want := DefaultLimits()
	want.MemoryBytes, want.DiskBytes, want.FileSizeBytes = 64*MiB, 1*MiB, 1*MiB
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if err := MaxLimits().Validate(); err != nil {
		t.Fatalf("MaxLimits must be valid: %v", err)
	}
	if err := DefaultLimits().WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults must be valid: %v", err)
	}
}

func TestParseLanguage(t *testing.T) {
	for in, want := range map[string]Language{"py": Python, "node": JavaScript, "sh": Bash, "python": Python,
		"PY": Python, "NodeJS": JavaScript, "Shell": Bash, "python3": Python} {
		if got, ok := ParseLanguage(in); !ok || got != want {
			t.Errorf("ParseLanguage(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"cobol", "", " py", "pyt"} {
		if l, ok := ParseLanguage(in); ok {
			t.Errorf("ParseLanguage(%q) = %q, want refused", in, l)
		}
	}
}

func TestLanguageCanonical(t *testing.T) {
	for in, want := range map[Language]Language{"": DefaultLanguage, "py": Python, "JS": JavaScript,
		"bash": Bash, "cobol": "cobol"} {
		if got := in.Canonical(); got != want {
			t.Errorf("Language(%q).Canonical() = %q, want %q", in, got, want)
		}
	}
	if got := Python.Aliases(); !slices.Equal(got, []string{"python3", "py"}) {
		t.Errorf("Python.Aliases() = %q", got)
	}
	for _, name := range []string{"python", "py", "python3", "javascript", "js", "node", "nodejs", "bash", "sh", "shell"} {
		if !strings.Contains(LanguageNames(), name) {
			t.Errorf("LanguageNames() = %q, does not name %q", LanguageNames(), name)
		}
	}
}

// wantInputError fails t unless err is nil when field is empty, or an
// *InputError naming field with a rule containing rule.
func wantInputError(t *testing.T, err error, field, rule string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("want valid, got %v", err)
		}
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("want *InputError, got %v", err)
	}
	if ie.Field != field || !strings.Contains(ie.Rule, rule) {
		t.Fatalf("got field %q rule %q; want field %q rule containing %q", ie.Field, ie.Rule, field, rule)
	}
}
