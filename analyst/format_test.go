package analyst

import (
	"slices"
	"strings"
	"testing"
)

// Proves which format tokens a question names, and that the check
// accepts exactly the answers holding each with a value.
func TestFormatCheck(t *testing.T) {
	dabench := `Calculate the mean age. @mean_age[value] where "value" is a number rounded to two decimal places.`
	two := "Report @mean_x[mean] and @std_x[std], and again @mean_x[mean]."
	for _, tc := range []struct {
		name, question string
		names          []string
		answer         string
		missing        string // "" when the answer passes
	}{
		{"dabench kept", dabench, []string{"mean_age"}, "@mean_age[39.21]", ""},
		{"dabench in prose", dabench, []string{"mean_age"}, "The mean age is 39.21.\n@mean_age[39.21]", ""},
		{"dabench forgotten", dabench, []string{"mean_age"}, "The mean age is 39.21.", "@mean_age[...]"},
		{"empty brackets", dabench, []string{"mean_age"}, "@mean_age[]", "@mean_age[...]"},
		{"blank brackets", dabench, []string{"mean_age"}, "@mean_age[  ]", "@mean_age[...]"},
		{"other name", dabench, []string{"mean_age"}, "@mean_ages[39.21]", "@mean_age[...]"},
		{"inside a word", dabench, []string{"mean_age"}, "x@mean_age[39.21]", "@mean_age[...]"},
		{"two kept", two, []string{"mean_x", "std_x"}, "@mean_x[1.5] @std_x[0.2]", ""},
		{"one of two", two, []string{"mean_x", "std_x"}, "@std_x[0.2]", "@mean_x[...]"},
		{"none of two", two, []string{"mean_x", "std_x"}, "1.5 and 0.2", "@mean_x[...], @std_x[...]"},
		{"an e-mail is no token", "Mail bob@example[dot]com the mean.", nil, "3", ""},
		{"no format", "What is the mean age?", nil, "39.21", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatNames(tc.question); !slices.Equal(got, tc.names) {
				t.Errorf("formatNames = %q, want %q", got, tc.names)
			}
			check := formatCheck(tc.question)
			if check == nil {
				if tc.names != nil {
					t.Fatal("no check for a question with a format")
				}
				return
			}
			err := check(tc.answer)
			switch {
			case tc.missing == "" && err != nil:
				t.Errorf("check(%q) = %v, want nil", tc.answer, err)
			case tc.missing != "" && (err == nil || !strings.HasSuffix(err.Error(), "the answer lacks "+tc.missing)):
				t.Errorf("check(%q) = %v, want it to say the answer lacks %s", tc.answer, err, tc.missing)
			}
		})
	}
}
