// Package jsonbody explains why a JSON request body did not decode
// (github.com/go-json-experiment/json, strict), as the field it names and
// the rule it broke, for every transport that decodes bodies that way
// (server, e2bapi): one wording of bad input for all of them.
package jsonbody

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Explain returns the field a decoding error of a JSON body names and the
// rule the body broke; ok is false for an error that is not about the
// JSON (a read that failed: the caller explains it).
func Explain(err error) (field, rule string, ok bool) {
	var sem *json.SemanticError
	if errors.As(err, &sem) {
		field := FieldOf(sem.JSONPointer)
		switch {
		case errors.Is(sem.Err, json.ErrUnknownName):
			return field, "is not a field here (names are case-sensitive)", true
		case sem.Err != nil:
			return field, sem.Err.Error(), true
		case sem.GoType != nil:
			return field, "must be " + kindOf(sem.GoType.Kind().String()) + ", got a JSON " + kindName(sem.JSONKind), true
		}
		return field, "is invalid", true
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		field := FieldOf(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return field, "appears more than once; each key may appear only once", true
		case errors.Is(syn.Err, io.ErrUnexpectedEOF) && syn.ByteOffset == 0:
			return "body", "must be one JSON object; it is empty", true
		case strings.Contains(syn.Err.Error(), "UTF-8"):
			return field, "must be valid UTF-8", true
		}
		return field, fmt.Sprintf("must be one JSON value and nothing after it: %v at byte %d", syn.Err, syn.ByteOffset), true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "body", "must be one JSON object; it ended early", true
	}
	return "", "", false
}

// FieldOf turns a JSON pointer such as /files/2/name into the field path
// the APIs name fields by, files[2].name; the root is "body".
func FieldOf(p jsontext.Pointer) string {
	if p == "" {
		return "body"
	}
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// kindOf names the JSON a Go kind is decoded from.
func kindOf(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"):
		return "an integer"
	case strings.HasPrefix(goKind, "float"):
		return "a number"
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "true or false"
	case goKind == "slice", goKind == "array":
		return "an array"
	case goKind == "map", goKind == "struct":
		return "an object"
	}
	return "a " + goKind
}

// kindName names a JSON kind.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}
