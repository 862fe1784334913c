// Package mcpserver serves Crucible to Model Context Protocol clients
// (coding agents, chat clients): tools to run code, drive a session and
// read past runs, built on the core pipeline (service.Service), so every
// call has the same limits, records, redaction and images as the HTTP API.
//
// New returns an *mcp.Server for one tenant; serve it over stdio
// (`crucible mcp`) or streamable HTTP (/mcp on `crucible serve`).
package mcpserver
