// Package api holds the types of Crucible's HTTP API that are not the
// execution contract itself (that is package sandbox): run records, the
// answers of the endpoints, and the error body. It imports nothing but the
// contract, so that a client of the API (package client) stays small:
// neither database drivers nor the server come with it.
package api
