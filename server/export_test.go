package server

import "time"

// SetMCPInitWindow sets mcpInitWindow to d until the returned function
// restores it.
func SetMCPInitWindow(d time.Duration) func() {
	old := mcpInitWindow
	mcpInitWindow = d
	return func() { mcpInitWindow = old }
}
