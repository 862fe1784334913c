package server

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDocument is the OpenAPI 3.0 description of every route the server
// registers. openapi_test.go checks it against the routes and the Go types
// of the contract, so that it cannot silently drift from them.
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI serves GET /openapi.json: the embedded OpenAPI document.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
