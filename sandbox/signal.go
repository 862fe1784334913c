package sandbox

// Linux's signal numbers and names, which Result.Signal and an exit code
// of 128 plus a number speak of: the sandbox runs Linux whatever system
// the caller runs (package syscall's numbers differ on others, SIGUSR1 is
// 30 on macOS, or are missing, SIGXCPU on Windows).
const (
	SIGKILL = 9
	SIGXCPU = 24
	SIGXFSZ = 25
)

// signalNames are Linux's signal names by number (signal(7)).
var signalNames = [...]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
	15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN",
	22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH",
	29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS"}

// SignalName is the name of Linux's signal n, "" for a number it does not
// name (the real-time signals, 32 and up, have none).
func SignalName(n int) string {
	if n > 0 && n < len(signalNames) {
		return signalNames[n]
	}
	return ""
}

// SignalNumber is the number of Linux's signal name, false for a name
// SignalName never returns.
func SignalNumber(name string) (int, bool) {
	for n, s := range signalNames {
		if s != "" && s == name {
			return n, true
		}
	}
	return 0, false
}
