#!/bin/bash
# Reports what a program sees from inside the sandbox: who it is, where it
# is, what it can reach, and the limits it runs under.
set -u

echo "user:      $(id)"
echo "hostname:  $(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "cwd:       $PWD"
echo "root:      $(cd / && echo *)"
echo "processes: $(ls -d /proc/[0-9]* | wc -l) visible (this PID namespace only)"
echo "env:       $(env | cut -d= -f1 | sort | tr '\n' ' ')"
echo "caps:      $(grep CapEff /proc/self/status | tr -s '\t ' ' ')"
echo "seccomp:   $(grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -s '\t\n' '  ')"
echo "network:   $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "limits:    cpu=$(ulimit -t)s fsize=$(ulimit -f)x1KiB nofile=$(ulimit -n) core=$(ulimit -c)"
echo "work dir:  $(df -h /work | awk 'NR==2 {print $2 " tmpfs, " $4 " free"}')"
echo
echo "input files in /work:"
find /work -type f -printf '  %p (%s bytes)\n'
echo
for p in /root /home /etc/shadow /var/run/docker.sock; do
	if [ -e "$p" ]; then echo "visible:   $p"; else echo "hidden:    $p"; fi
done
if touch /usr/bin/crucible-was-here 2>/dev/null; then
	echo "WRITABLE:  /usr/bin"
else
	echo "read-only: /usr/bin"
fi
