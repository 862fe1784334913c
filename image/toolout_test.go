package image

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxLine+100)
	var many []string
	for i := range tailLines + 3 {
		many = append(many, fmt.Sprint(i))
	}
	tests := []struct {
		name   string
		writes []string
		lines  []string // given to fn, and the tail when it is shorter than tailLines
	}{
		{"lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"split between writes", []string{"I: Unpa", "cking less...\nE: x"}, []string{"I: Unpacking less...", "E: x"}},
		{"\\r ends a line; empty lines are skipped", []string{"50%\r100%\r\n\n\nok\n"}, []string{"50%", "100%", "ok"}},
		{"a long line is cut", []string{long[:300], long[300:] + "\nnext\n"}, []string{long[:maxLine] + "...", "next"}},
		{"no output", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &lineWriter{fn: func(s string) { got = append(got, s) }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			tail := w.close()
			if !reflect.DeepEqual(got, tt.lines) || !reflect.DeepEqual(tail, tt.lines) {
				t.Errorf("lines %q, tail %q, want %q", got, tail, tt.lines)
			}
		})
	}
	t.Run("the tail keeps the last lines", func(t *testing.T) {
		w := &lineWriter{fn: func(string) {}}
		_, _ = io.WriteString(w, strings.Join(many, "\n"))
		if tail := w.close(); !reflect.DeepEqual(tail, many[3:]) {
			t.Errorf("tail %q, want %q", tail, many[3:])
		}
	})
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	content := strings.Repeat(strings.Repeat("y", 99)+"\n", 2*maxLogTail/100) + "dpkg: error processing package x\n"
	if err := os.WriteFile(big, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logTail(big)
	if len(got) != tailLines || got[len(got)-1] != "dpkg: error processing package x" {
		t.Errorf("tail of a big log: %q", got)
	}
	if got := logTail(filepath.Join(dir, "missing.log")); got != nil {
		t.Errorf("tail of a missing log: %q", got)
	}
}
