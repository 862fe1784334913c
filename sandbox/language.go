package sandbox

// Language names the interpreter a request's code is written for.
type Language string

// The languages every runtime supports.
const (
	Python     Language = "python"
	JavaScript Language = "javascript"
	Bash       Language = "bash"
)

// Languages lists the supported languages in a stable order.
var Languages = []Language{Python, JavaScript, Bash}

// languageAliases maps the names people commonly type to a Language.
var languageAliases = map[string]Language{
	"python": Python, "python3": Python, "py": Python,
	"javascript": JavaScript, "js": JavaScript, "node": JavaScript, "nodejs": JavaScript,
	"bash": Bash, "sh": Bash, "shell": Bash,
}

// ParseLanguage resolves a language name or a common alias ("py", "js",
// "node", "sh") to a Language. It is meant for human-facing interfaces; the
// JSON contract accepts only the canonical names.
func ParseLanguage(name string) (Language, bool) {
	l, ok := languageAliases[name]
	return l, ok
}

// Valid reports whether l is one of Languages.
func (l Language) Valid() bool {
	for _, k := range Languages {
		if l == k {
			return true
		}
	}
	return false
}
