package main

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxNameBytes caps a cleaned file name, leaving room under Linux's
// NAME_MAX (255) for the "-N" numberedName adds on a collision.
const maxNameBytes = 200

// cleanName turns a name a sandboxed program chose (an artifact's path in
// its working directory) into one file name that is safe to create on the
// host and to print: one path component, never "." or "..", nothing a
// terminal or a shell would act on.
//
// Security: the name is the program's choice, so it is made inert rather
// than trusted. It is normalised to NFC (one spelling for one name); path
// separators become "_" (the result is one name, created in the output
// directory and nowhere else); control, format and bidirectional characters
// and bytes that are not UTF-8 become "_" (no escape sequences or
// line breaks on the terminal, no reordered text); leading dots, dashes and
// spaces are dropped (no hidden files, no names read as an option by a
// command the operator later types); it is cut to maxNameBytes keeping the
// extension; an empty result is "artifact".
func cleanName(name string) string {
	name = norm.NFC.String(strings.ToValidUTF8(name, "_"))
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || // Cf holds every bidi control
			r == utf8.RuneError {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(name, ".- \u00a0")
	name = strings.TrimRight(name, " ")
	if len(name) > maxNameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxNameBytes-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	if name == "" {
		return "artifact"
	}
	return name
}
