// Package e2e holds Crucible's end-to-end tests: they build the real
// crucible binary (go build ./cmd/crucible, CGO_ENABLED=0), start
// `crucible serve` as a separate process on a loopback port with a SQLite
// store in a temporary directory, and talk to it over HTTP, through the Go
// SDK (package client) where it covers the call and net/http where it does
// not.
//
// What they check that the in-process tests of package server cannot:
//
//   - TestServeEndpoints: every route of the API, answered by the binary
//     an operator runs (flags, logging, store, redactor and runtime wired
//     together by cmd/crucible), including the JSON error contract.
//   - TestCrashRecovery: what a kill -9 of the server leaves on the host.
//     Its sandboxes die with it (PDEATHSIG), a restarted server marks the
//     lost runs interrupted and removes the dead server's cgroups, no mount
//     leaks into the host's mount table, and the restarted server works.
//
// The package contains only tests. They need root (the native sandbox
// creates namespaces and cgroups) and skip otherwise:
//
//	sudo go test -count=1 -v ./e2e/
package e2e
