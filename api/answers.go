package api

import "github.com/crucible-sandbox/crucible/sandbox"

// RunResponse is the answer to POST /v1/runs: the run's Result, redacted,
// with the ID of its record and whether it came from the cache.
type RunResponse struct {
	// ID names the run's record (GET /v1/runs/{id}).
	ID string `json:"id"`
	// CacheHit is set when an earlier identical run's result was returned
	// instead of running the code again.
	CacheHit bool `json:"cache_hit"`
	// Image names the image the code ran in, among those the server
	// offers (GET /v1/images); the Result's ImageDigest identifies it.
	Image string `json:"image,omitempty"`
	sandbox.Result
}

// RunAccepted is the answer to POST /v1/runs?async=1: the new record's ID
// and its status (StatusQueued, or the final status of a cache hit).
type RunAccepted struct {
	// ID names the run's record.
	ID string `json:"id"`
	// Status is where the run stands.
	Status sandbox.Status `json:"status"`
}

// RunList is the answer to GET /v1/runs: one page of runs, newest first.
type RunList struct {
	// Runs are the page's records.
	Runs []Run `json:"runs"`
	// Next is the cursor of the next page, "" after the last one.
	Next string `json:"next"`
}

// FileList is the answer to GET /v1/sessions/{id}/files.
type FileList struct {
	// Files are the working directory's entries, recursively.
	Files []sandbox.FileInfo `json:"files"`
}

// Health is the answer to GET /healthz.
type Health struct {
	// Status is "ok" while the server serves.
	Status string `json:"status"`
}
