package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// Language names the interpreter a request's code is written for.
type Language string

// The languages every runtime supports.
const (
	Python     Language = "python"
	JavaScript Language = "javascript"
	Bash       Language = "bash"
)

// DefaultLanguage is the language of a request that names none, in the
// service and so in every transport (the HTTP API, the command line).
const DefaultLanguage = Python

// Languages lists the supported languages in a stable order, in a slice
// of the caller's own.
func Languages() []Language { return slices.Clone(languages) }

// languages is what Languages returns.
var languages = []Language{Python, JavaScript, Bash}

// languageAliases lists, for each language, the other names people
// commonly type for it.
var languageAliases = map[Language][]string{
	Python:     {"python3", "py"},
	JavaScript: {"js", "node", "nodejs"},
	Bash:       {"sh", "shell"},
}

// ParseLanguage resolves a language's name or a common alias ("py", "js",
// "node", "sh"), in any case, to a Language. Every interface that takes a
// language (the command line, the HTTP API, the SDK through it) accepts
// the same names.
func ParseLanguage(name string) (Language, bool) {
	name = strings.ToLower(name)
	for _, l := range languages {
		if name == string(l) {
			return l, true
		}
		for _, a := range languageAliases[l] {
			if name == a {
				return l, true
			}
		}
	}
	return "", false
}

// Canonical returns the language l names: DefaultLanguage when l is
// empty, the canonical name when l is a name or an alias ParseLanguage
// knows, and l unchanged otherwise (Valid then reports it).
func (l Language) Canonical() Language {
	if l == "" {
		return DefaultLanguage
	}
	if c, ok := ParseLanguage(string(l)); ok {
		return c
	}
	return l
}

// Valid reports whether l is one of Languages().
func (l Language) Valid() bool {
	for _, k := range languages {
		if l == k {
			return true
		}
	}
	return false
}

// Aliases returns the other names ParseLanguage takes for l, such as
// "py" for Python; nil for an unknown language.
func (l Language) Aliases() []string {
	return slices.Clone(languageAliases[l])
}

// LanguageNames describes the accepted names for a message, each language
// with its aliases: "python (or python3, py), javascript (or js, node,
// nodejs), bash (or sh, shell)".
func LanguageNames() string {
	names := make([]string, len(languages))
	for i, l := range languages {
		names[i] = fmt.Sprintf("%s (or %s)", l, strings.Join(languageAliases[l], ", "))
	}
	return strings.Join(names, ", ")
}
