package docker

// Under gVisor the program's standard output and error cannot be the
// exec's own: those are host pipes (containerd's FIFOs) that the sentry
// writes to without waiting, so one write(2) larger than the host pipe
// holds (64 KiB) writes that much and returns a short count, where Linux
// blocks until every byte is in the pipe. A program that writes once and
// trusts the count, as Python's unbuffered stdout (PYTHONUNBUFFERED) does
// for one print or sys.stdout.buffer.write of 300 KB, loses the rest:
// the conformance suite's BinaryStdin got 65536 of 10485760 bytes back,
// status ok.
//
// So a gvisor run's program writes into pipes of the sentry's own
// (Linux semantics: a blocking write writes everything), named pipes in
// the container's /tmp, and a cat per stream, which writes in a loop until
// all is out, copies each into the exec's host pipe. bash, the relay:
//
//   - ignores every signal a program could send it (kill(-1, SIGTERM)
//     reaches every process of the uid), and so do the cats, which inherit
//     that; the program gets every signal's default back (env
//     --default-signal) before it starts. SIGKILL cannot be ignored: a
//     program that sends it to -1 loses its own output only;
//   - starts the program with the exec's stdin, waits for it and exits
//     with its status: Run classifies it as before (a program a signal
//     ended gives 128 plus the signal's number, as the exec itself
//     reports one);
//   - before exiting, waits for both cats to reach their pipes' end, so
//     that everything the program wrote is in the host pipes when the exec
//     ends, but at most a second: processes the program left behind may
//     hold its pipes open forever, and the run ends with the program, as
//     a native run does (20 rounds of 50 ms below); then it kills them,
//     which ends the exec's output;
//   - says nothing itself: its own stderr is /dev/null (bash would report
//     a program a signal ended), the program's goes through the cat.
//
// The relay runs as the program's uid with no environment but the exec's
// (the container has none: no BASH_ENV). It costs about 60 ms a run
// (docker exec of print(1) in a running gvisor container, median of 6:
// 134 ms direct, 203 ms through the relay): bash, mktemp, mkfifo, env and
// the cats are each a process start under the sentry.

// relayScript is the relay; "$@" is the program's argv.
const relayScript = `trap '' HUP INT QUIT USR1 USR2 PIPE ALRM TERM CONT TSTP TTIN TTOU URG XCPU XFSZ VTALRM PROF WINCH IO PWR SYS
exec 3>&2 2>/dev/null
d=$(/usr/bin/mktemp -d /tmp/.relay.XXXXXX) && /usr/bin/mkfifo "$d/out" "$d/err" || { echo "relay: cannot make its pipes in /tmp" >&3; exit 125; }
/usr/bin/cat <"$d/out" 3>&- & o=$!
/usr/bin/cat <"$d/err" >&3 3>&- & e=$!
/usr/bin/env --default-signal "$@" <&0 >"$d/out" 2>"$d/err" 3>&- & p=$!
wait $p; s=$?
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	kill -0 $o $e || break
	/usr/bin/sleep 0.05
done
kill -KILL $o $e
exit $s`

// relayProcesses are the processes the relay adds to the program's under
// its uid (bash, two cats and one short-lived helper at a time): the
// nproc rlimit counts them.
const relayProcesses = 4

// gvisorRelay returns argv run through the relay.
func gvisorRelay(argv []string) []string {
	return append([]string{"/bin/bash", "--noprofile", "--norc", "-c", relayScript, "relay"}, argv...)
}
