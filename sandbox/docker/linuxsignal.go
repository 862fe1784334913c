package docker

// Linux's signals, as a container's exit code reports them (128 plus the
// number): the daemon runs Linux whatever GOOS this program is built for,
// and package syscall's numbers differ on other systems (SIGUSR1 is 30 on
// macOS) or are missing (SIGXCPU on Windows).
const (
	sigKILL = 9
	sigXCPU = 24
	sigXFSZ = 25
)

// linuxSignalNames are Linux's signal names by number (signal(7)).
var linuxSignalNames = [...]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
	15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN",
	22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH",
	29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS"}

// linuxSignalName is the name of Linux's signal n, "" for none it names
// (the real-time signals, 32 and up, as unix.SignalName has none).
func linuxSignalName(n int) string {
	if n > 0 && n < len(linuxSignalNames) {
		return linuxSignalNames[n]
	}
	return ""
}
