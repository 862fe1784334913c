package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestCleanName(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plot.png", "plot.png"},
		{"results 2024.csv", "results 2024.csv"},
		{"résumé.txt", "résumé.txt"},
		{"sub/dir/x.csv", "sub_dir_x.csv"},
		{"../../etc/passwd", "_.._etc_passwd"},
		{"/etc/cron.d/x", "_etc_cron.d_x"},
		{`a\b`, "a_b"},
		{"a\nb\x1b[31m.txt", "a_b_[31m.txt"},
		{"line\r.txt", "line_.txt"},
		{"\u202egnp.exe", "_gnp.exe"},
		{"zero\u200bwidth", "zero_width"},
		{"\xff\xfe.bin", "_.bin"},
		{"e\u0301.txt", "\u00e9.txt"}, // NFC: one spelling
		{".bashrc", "bashrc"},
		{"-rf", "rf"},
		{"--help", "help"},
		{" . -x", "x"},
		{"trailing ", "trailing"},
		{".", "artifact"},
		{"..", "artifact"},
		{"", "artifact"},
		{strings.Repeat("a", 300) + ".png", strings.Repeat("a", maxNameBytes-4) + ".png"},
		{strings.Repeat("é", 150), strings.Repeat("é", maxNameBytes/2)},
		{strings.Repeat("b", 300) + "." + strings.Repeat("e", 40), strings.Repeat("b", maxNameBytes)},
	}
	for _, tt := range tests {
		got := cleanName(tt.in)
		if got != tt.want {
			t.Errorf("cleanName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		checkCleanName(t, tt.in, got)
		if again := cleanName(got); again != got {
			t.Errorf("cleanName(%q) = %q, not idempotent: %q", tt.in, got, again)
		}
	}
}

// checkCleanName states the rules a cleaned name keeps.
func checkCleanName(t *testing.T, in, got string) {
	t.Helper()
	switch {
	case got == "" || got == "." || got == "..":
		t.Errorf("cleanName(%q) = %q: not a file name", in, got)
	case strings.ContainsAny(got, `/\`):
		t.Errorf("cleanName(%q) = %q holds a path separator", in, got)
	case strings.HasPrefix(got, ".") || strings.HasPrefix(got, "-"):
		t.Errorf("cleanName(%q) = %q starts with a dot or a dash", in, got)
	case len(got) > maxNameBytes || !utf8.ValidString(got) || !norm.NFC.IsNormalString(got):
		t.Errorf("cleanName(%q) = %q: too long, not UTF-8 or not NFC", in, got)
	case strings.IndexFunc(got, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
		t.Errorf("cleanName(%q) = %q holds a control or format character", in, got)
	}
}
