// Package e2bapi is Crucible's E2B-compatible transport: E2B's official
// SDKs (npm e2b and @e2b/code-interpreter, PyPI e2b and
// e2b-code-interpreter) work against `crucible serve` unchanged, set up by
// their environment alone:
//
//	E2B_API_URL=http://HOST:PORT/e2b
//	E2B_SANDBOX_URL=http://HOST:PORT/e2b
//	E2B_API_KEY=e2b_...   (crucible key create --e2b --tenant NAME)
//
// Like the HTTP API (package server) and MCP (package mcpserver) it is a
// thin layer over package service: an E2B sandbox is a service session
// of the caller's tenant (its image, limits, code policy, records and
// redaction), and every cell and file goes through the session's methods.
//
// One handler serves the three surfaces E2B's SDKs reach, told apart as
// E2B's own proxy tells them apart on an address without a wildcard DNS
// name: by the E2b-Sandbox-Id and E2b-Sandbox-Port headers.
//
//   - The control plane (no E2b-Sandbox-Id): POST /sandboxes (and
//     /v2/sandboxes), GET /sandboxes/{id}, DELETE /sandboxes/{id},
//     GET /v2/sandboxes (and /sandboxes), POST /sandboxes/{id}/timeout,
//     POST /sandboxes/{id}/connect (and /v2/...). The X-API-Key header
//     names the tenant (Config.Authenticate); another tenant's sandbox is
//     not found.
//   - envd, the in-sandbox daemon (E2b-Sandbox-Port other than 49999):
//     GET /health, GET and POST /files, and the Connect RPC services
//     process.Process and filesystem.Filesystem (envd*.go).
//   - The code interpreter (E2b-Sandbox-Port 49999): POST /execute
//     (newline-delimited JSON, streamed as the cell runs), and the code
//     contexts: POST and GET /contexts, DELETE /contexts/{id},
//     POST /contexts/{id}/restart.
//
// A data-plane request (envd or the code interpreter) is authorised by
// the sandbox's own access token, a fresh random secret returned when the
// sandbox is created or connected to (as envdAccessToken and
// trafficAccessToken): the SDKs send it as X-Access-Token or
// E2B-Traffic-Access-Token.
//
// Errors are answered as E2B's API answers them, {"code": STATUS,
// "message": ...}, with "field" and "rule" added for bad input, so that
// the SDKs raise them with the message.
package e2bapi
