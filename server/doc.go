// Package server is Crucible's HTTP service (issue 7), first slice: one
// process serving runs and sessions of one native runtime over JSON.
//
// What this slice provides:
//
//   - POST /v1/runs runs a sandbox.Request and answers its Result, with the
//     run's "id" and "cache_hit"; ?async=1 answers 202 at once and the run
//     proceeds in the background; ?cache=0 bypasses the result cache.
//     GET /v1/runs/{id} and GET /v1/runs read the run records the store
//     keeps.
//   - /v1/sessions creates, drives and deletes live Python sessions and
//     their working-directory files.
//   - GET /healthz and GET /metrics (Prometheus).
//
// Every run passes admission: at most Config.MaxConcurrent execute and at
// most Config.MaxQueue wait; beyond that a run is refused with 429 and
// Retry-After, so the backlog is always bounded. Outputs are redacted by a
// policy.Redactor before they are stored, cached or answered.
//
// Errors are JSON, {"error": {"code", "message", "field", "rule"}}, with one
// of the stable codes invalid_request, not_found, method_not_allowed,
// payload_too_large, too_many_requests, session_closed, unavailable (the
// server is shutting down) and internal.
//
// Not in this slice: API keys and tenants (every record belongs to the
// tenant "default" and the command refuses to listen beyond loopback),
// session records in the store, streaming output, and per-tenant quotas.
package server
