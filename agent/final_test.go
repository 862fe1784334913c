package agent

import "testing"

func TestFinalAnswer(t *testing.T) {
	tests := []struct {
		reply, want string
		ok          bool
	}{
		{"FINAL ANSWER: 42", "42", true},
		{"The mean is computed.\nFINAL ANSWER: 42\nbecause 6*7", "42\nbecause 6*7", true},
		{"  FINAL ANSWER:   yes  ", "yes", true},
		{"```python\nprint('FINAL ANSWER:', 42)\n```", "", false},
		{"~~~~\nFINAL ANSWER: x\n~~~~\nFINAL ANSWER: y", "y", true},
		{"````python\ns = '```'\nFINAL ANSWER: no\n````", "", false},
		{"the FINAL ANSWER: is not at a line start", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := finalAnswer(tt.reply)
		if got != tt.want || ok != tt.ok {
			t.Errorf("finalAnswer(%q) = %q, %v; want %q, %v", tt.reply, got, ok, tt.want, tt.ok)
		}
	}
}
