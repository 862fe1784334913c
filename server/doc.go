// Package server is Crucible's HTTP transport: it decodes requests, calls
// the core pipeline (package service) and encodes its answers, over JSON.
//
//   - POST /v1/runs runs a sandbox.Request and answers its Result, with the
//     run's "id" and "cache_hit"; ?async=1 answers 202 at once and the run
//     proceeds in the background; ?stream=1 answers Server-Sent Events of
//     the output while the code runs, then the result (events.go);
//     ?cache=1 lets an identical earlier run answer. GET /v1/runs/{id} and
//     GET /v1/runs read the run records; GET /v1/runs/{id}/events follows
//     a run (service.Service.Events), resuming after Last-Event-ID or
//     ?after; GET /v1/runs/{id}/artifacts/{name} downloads an artifact.
//   - /v1/sessions creates (every field optional, the body too), lists,
//     describes, drives (also streamed) and deletes live Python sessions
//     and their working-directory files.
//   - /v1/agent-runs starts the code agent on a task with files and budgets
//     (capped by the server's maxima), lists, describes (with the redacted
//     trace once ended) and cancels (DELETE) agent runs; GET
//     /v1/agent-runs/{id}/events follows one live (planning, model calls,
//     code, output as it runs, executions, retries, verification,
//     approvals, the result), resuming after Last-Event-ID or ?after; POST
//     /v1/agent-runs/{id}/approvals/{approval_id} approves or refuses a
//     program of a run started with "approve": true. The model and its key
//     are the server's (service.AgentConfig): a request naming them is
//     refused, and a server without a model answers 501 not_configured.
//   - /v1/analyses creates a data analysis from datasets (a
//     multipart/form-data upload read part by part, JSON, or files of one
//     of the tenant's sessions) and answers its profile; lists, describes
//     and deletes analyses. POST /v1/analyses/{id}/questions asks a
//     question, answered by an agent run in the analysis's session (one
//     at a time: 409 while one runs), followed as an agent run is (also
//     streamed, with an answer event), approved through
//     .../questions/{n}/approvals/{approval_id}; GET .../questions lists
//     the conversation with the answers as data, GET .../files/{name}
//     downloads an answer's chart or file as untrusted content.
//   - GET /v1/images lists the images the server offers (a runtime each,
//     service.Config.Images); a run or a session names one in its "image"
//     field, and the default serves those that name none. A language may
//     be named by an alias ("py"): the service resolves it, and an omitted
//     one is Python.
//   - GET /healthz, GET /metrics (Prometheus) and GET /openapi.json are
//     open; every /v1/ request is authenticated first (auth.go).
//
// Before any of that, every request must name this server in its Host
// and must not be a browser's cross-site request with an unsafe method
// (browser.go: a web page must not drive the server through its visitor's
// browser, by DNS rebinding or a cross-site form), and a JSON body must
// come as application/json (decode.go); both answered 403 and 415.
//
// Tenants: an API key (store.APIKey) maps a request to its tenant, which
// owns the runs, artifacts, cache entries and sessions it creates; another
// tenant's are answered 404, exactly like missing ones. While no key exists
// and Config.RequireKeys is off, every request acts as DefaultTenant.
// service.TenantLimits bound each tenant's concurrent runs, open sessions,
// agent runs and request size.
//
// Every run passes the service's admission: at most
// service.Config.MaxConcurrent execute and at most MaxQueue wait; beyond that a run is refused with 429 and
// Retry-After, so the backlog is always bounded. Everything a program made
// (output, errors, artifacts and their names, a session's files and their
// names) and the code kept in a record are redacted by a policy.Redactor
// before they are stored, cached, streamed or answered; a program's files
// are downloaded as inert attachments (untrusted.go).
//
// Errors are JSON, {"error": {"code", "message", "field", "rule"}}, with one
// of the stable codes invalid_request, unauthorized, forbidden, not_found,
// method_not_allowed, payload_too_large, unsupported_media_type,
// too_many_requests, session_closed,
// unavailable (the server is shutting down), withheld (a binary file that
// holds a secret), conflict (an approval already decided, or a question
// while another is answered), not_configured
// (agent runs without a model), unsuitable_image (422: an analysis in an
// image without pandas) and internal.
//
// Sessions, analyses and agent runs live in the service's registries, not
// in the store: they do not survive a restart of the server (the records
// of an agent run's executions do).
package server
