package sandboxtest

// RunProcessFinder is implemented by a runtime (or the wrapper a test
// hands the suite) whose programs' processes the host cannot find by the
// token they carry. Under gVisor a program's processes are tasks of the
// sandbox's own kernel (the sentry), not host processes: no entry of the
// host's /proc holds their command lines or environments, so the suite's
// own search finds nothing whether they survive or not. What the host
// does run for such a run is the runtime's machinery (gVisor's sandbox
// and gofer processes, the container's cgroups and mounts), and that is
// what RunProcesses returns: each thing of the run marked with token that
// exists on the host now, described. The suite takes them for the run's
// processes: seen while it runs, they are the positive control (the
// after-check looks at something real); any left once Run has returned
// is a survivor and fails the case.
type RunProcessFinder interface {
	RunProcesses(token string) []string
}

// runProcesses is the runtime's RunProcesses, or nil.
func (s *suite) runProcesses(token string) []string {
	if f, ok := s.rt.(RunProcessFinder); ok {
		return f.RunProcesses(token)
	}
	return nil
}
