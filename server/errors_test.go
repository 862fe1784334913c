package server

import (
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// TestEveryKindHasACode: each kind of the service's refusals (read from
// service/errors.go, so that a new one is found) is answered with an API
// code of its own status, never the internal 500 an unmapped kind would
// get; docs/errors.md lists the codes (api's TestErrorsDoc).
func TestEveryKindHasACode(t *testing.T) {
	src, err := os.ReadFile("../service/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	kinds := regexp.MustCompile(`(?m)^\s*Kind[A-Z]\w*\b`).FindAllString(string(src), -1)
	if len(kinds) == 0 {
		t.Fatal("no Kind constants in service/errors.go")
	}
	if len(codeOfKind) != len(kinds) {
		t.Errorf("codeOfKind maps %d kinds; service/errors.go declares %d: %q", len(codeOfKind), len(kinds), kinds)
	}
	for k := service.KindNotFound; int(k) <= len(kinds); k++ {
		code, ok := codeOfKind[k]
		if !ok || api.HTTPStatus(code) == http.StatusInternalServerError {
			t.Errorf("kind %d: code %q (mapped %v), want a code with a status of its own", k, code, ok)
		}
	}
}
