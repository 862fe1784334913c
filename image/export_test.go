package image

// The build's steps, for the tests outside the package (runstep_test.go).
var (
	RunStep     = runStep
	WithLogTail = withLogTail
)
