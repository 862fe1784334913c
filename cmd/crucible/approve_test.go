package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestApproveKeepsTypedAhead proves every answer typed reaches its own
// question: answers typed ahead, before the next question was asked, are
// kept for it rather than lost with a reader of the first question.
func TestApproveKeepsTypedAhead(t *testing.T) {
	cases := []struct {
		typed string
		want  []bool
	}{
		{"y\n", []bool{true, false}},
		{"n\ny\n", []bool{false, true}},
		{"yes\nYES\nno\n", []bool{true, true, false}},
		{"y\n\ny\n", []bool{true, false, true}},
		{"", []bool{false}},
		{"y", []bool{true, false}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.typed, "\n", "⏎"), func(t *testing.T) {
			approve := approveOn(strings.NewReader(c.typed), io.Discard)
			var got []bool
			for range c.want {
				ok, err := approve(context.Background(), "print(1)")
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ok)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("answers %v, want %v", got, c.want)
			}
		})
	}
}
