package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// formatToken finds a token a question asks the answer to be given in,
// such as "@mean_fare[value]": an @ not inside a word, a name, "[".
var formatToken = regexp.MustCompile(`(?:^|[^\w@])@([A-Za-z_]\w*)\[`)

// formatNames returns the names of the format tokens question asks for,
// in order, each once.
func formatNames(question string) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range formatToken.FindAllStringSubmatch(question, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

// formatCheck returns the check that an answer keeps the format question
// asks for: every @name[...] token it names is in the answer, with a
// value between the brackets. It is nil when question names none.
func formatCheck(question string) func(answer string) error {
	names := formatNames(question)
	if len(names) == 0 {
		return nil
	}
	kept := make([]*regexp.Regexp, len(names))
	for i, n := range names { // a name is a word: no quoting needed
		kept[i] = regexp.MustCompile(`(?:^|[^\w@])@` + n + `\[[^\]\n]*[^\]\s][^\]\n]*\]`)
	}
	return func(answer string) error {
		var missing []string
		for i, n := range names {
			if !kept[i].MatchString(answer) {
				missing = append(missing, "@"+n+"[...]")
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the question asks for the answer in the format %s, with the value between the brackets; the answer lacks %s",
				formatList(names), strings.Join(missing, ", "))
		}
		return nil
	}
}

func formatList(names []string) string {
	tokens := make([]string, len(names))
	for i, n := range names {
		tokens[i] = "@" + n + "[value]"
	}
	return strings.Join(tokens, " ")
}
