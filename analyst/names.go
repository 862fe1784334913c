package analyst

import (
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The naming rule. A dataset's DataFrame is named from its file: the name
// without its extension, accents dropped, lower-cased, every run of
// characters other than ASCII letters and digits made one "_" (so
// "Sales 2024.csv" is sales_2024), prefixed with "t_" if it starts with a
// digit, at most maxIdentBytes long, and "table" if nothing is left. A name
// that is a Python keyword, a builtin or a name the model's code relies
// on (df, pd, np, plt, ...) takes the suffix "_df"; a name already taken
// by an earlier DataFrame takes "_2", "_3", ... Each sheet of a workbook
// with several is named file_sheet.

// maxIdentBytes bounds a DataFrame name.
const maxIdentBytes = 60

// reserved are the names a DataFrame never takes: Python's keywords
// (soft ones included), its lower-case builtins, and the names code in an
// analysis uses for its libraries and the single DataFrame.
var reserved = setOf(
	// keywords
	"and as assert async await break case class continue def del elif else except finally for from global "+
		"if import in is lambda match nonlocal not or pass raise return try while with yield",
	// builtins
	"abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod compile "+
		"complex copyright credits delattr dict dir divmod enumerate eval exec exit filter float format "+
		"frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter len license "+
		"list locals map max memoryview min next object oct open ord pow print property quit range repr "+
		"reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip",
	// what an analysis's code uses
	"df pd np plt sns mpl matplotlib pandas numpy scipy stats sm sklearn math os sys re io json csv "+
		"datetime time random statistics collections itertools display data",
)

func setOf(lists ...string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lists {
		for _, w := range strings.Fields(l) {
			m[w] = true
		}
	}
	return m
}

// identifier turns s into a Python identifier by the naming rule, before
// clashes are resolved.
func identifier(s string) string {
	var b strings.Builder
	under := false
runes:
	for _, r := range norm.NFKD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue // an accent of the letter before
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(unicode.ToLower(r))
		default:
			under = true
		}
		if b.Len() >= maxIdentBytes {
			break runes
		}
	}
	id := strings.TrimRight(b.String()[:min(b.Len(), maxIdentBytes)], "_")
	switch {
	case id == "":
		id = "table"
	case id[0] >= '0' && id[0] <= '9':
		id = "t_" + id
	}
	if reserved[id] {
		id += "_df"
	}
	return id
}

// stem is a file name without its directories and its extension.
func stem(name string) string {
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return name
}

// namer hands out unique identifiers.
type namer map[string]bool

// take returns id, or id with the first free suffix _2, _3, ...
func (n namer) take(id string) string {
	name := id
	for i := 2; n[name]; i++ {
		name = id + "_" + strconv.Itoa(i)
	}
	n[name] = true
	return name
}
