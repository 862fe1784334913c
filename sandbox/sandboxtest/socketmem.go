package sandboxtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Kernel memory a program makes the host hold on its behalf, outside the
// pages of its own processes: socket buffers. Loopback connections inside
// the sandbox's own network namespace, whose receivers never read, keep
// every byte sent in kernel queues; the memory limit must bound that too.

// socketMemLimit is the memory limit of the socket-filling run.
const socketMemLimit = 128 * sandbox.MiB

// socketMemProgram fills the queues of TCP connections and of UDP sockets
// over loopback, well past the run's memory limit if nothing stops it,
// prints a FILLED report, and holds everything while the host looks.
const socketMemProgram = `import json, socket, sys, time
TCP_TARGET, UDP_TARGET = {{TCP}}, {{UDP}}
chunk = b"x" * 65536
held, rep = [], {"tcp_conns": 0, "tcp_bytes": 0, "udp_socks": 0, "udp_bytes": 0, "stopped": ""}
try:
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
    lst.bind(("127.0.0.1", 0))
    lst.listen(512)
    held.append(lst)
    while rep["tcp_bytes"] < TCP_TARGET and rep["tcp_conns"] < 96:  # fds left for UDP
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
        c.connect(lst.getsockname())
        a, _ = lst.accept()  # never read
        held += [c, a]
        rep["tcp_conns"] += 1
        c.setblocking(False)
        while rep["tcp_bytes"] < TCP_TARGET:
            try:
                rep["tcp_bytes"] += c.send(chunk)
            except OSError:
                break
    while rep["udp_bytes"] < UDP_TARGET and rep["udp_socks"] < 24:
        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
        r.bind(("127.0.0.1", 0))  # never read
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(r.getsockname())
        s.setblocking(False)
        held += [r, s]
        rep["udp_socks"] += 1
        for _ in range(200):
            try:
                rep["udp_bytes"] += s.send(chunk[:60000])
            except OSError:
                break
except OSError as e:
    rep["stopped"] = str(e)
print("FILLED " + json.dumps(rep), flush=True)
time.sleep(2)
print(json.dumps(rep))
`

// sockstatPages returns the kernel-wide pages held by TCP and UDP socket
// buffers: the "mem" fields of the TCP and UDP lines of /proc/net/sockstat.
// Unlike the lines' socket counts, which are per network namespace, these
// are the protocols' global totals, so the host's view includes every
// sandbox's sockets.
func sockstatPages() (int64, error) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		proto, rest, _ := strings.Cut(line, ": ")
		if proto != "TCP" && proto != "UDP" {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "mem" {
				n, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return 0, err
				}
				total += n
			}
		}
	}
	return total, nil
}

// socketMemWatcher records the largest socket memory the host saw.
type socketMemWatcher struct {
	mu   sync.Mutex
	peak int64 // pages
	err  error
}

func (w *socketMemWatcher) sample() {
	n, err := sockstatPages()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
	}
	w.peak = max(w.peak, n)
}

func testSocketMemory(t *testing.T, s *suite) {
	base, err := sockstatPages()
	if err != nil {
		t.Skipf("cannot read the host's socket memory: %v", err)
	}
	page := int64(os.Getpagesize())
	w := &socketMemWatcher{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			w.sample()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	var filled bytes.Buffer
	req := sandbox.Request{
		Language: sandbox.Python,
		Code: program(socketMemProgram, map[string]string{
			"TCP": strconv.FormatInt(3*socketMemLimit, 10), "UDP": strconv.FormatInt(socketMemLimit, 10)}),
		Limits: sandbox.Limits{MemoryBytes: socketMemLimit, WallTimeMS: 30_000, CPUTimeMS: 20_000},
		// The host samples the moment the program says its queues are
		// full, while it holds them.
		OnOutput: func(stream sandbox.Stream, chunk []byte) {
			if stream == sandbox.StreamStdout && bytes.Contains(chunk, []byte("FILLED")) {
				w.sample()
				filled.Write(chunk)
			}
		},
	}
	res, _ := s.run(t, req, watch{token: newToken()})
	close(stop)
	wg.Wait()
	if w.err != nil {
		t.Fatalf("reading /proc/net/sockstat: %v", w.err)
	}
	wantExit(t, res, sandbox.StatusOK, 0)
	var rep struct {
		TCPConns int    `json:"tcp_conns"`
		TCPBytes int64  `json:"tcp_bytes"`
		UDPSocks int    `json:"udp_socks"`
		UDPBytes int64  `json:"udp_bytes"`
		Stopped  string `json:"stopped"`
	}
	decodeReport(t, res, &rep)
	grown := (w.peak - base) * page
	t.Logf("program: %d TCP connections queued %d MiB, %d UDP sockets sent %d MiB, stopped by %q; host socket memory grew by %d MiB at most (limit %d MiB)",
		rep.TCPConns, rep.TCPBytes>>20, rep.UDPSocks, rep.UDPBytes>>20, rep.Stopped, grown>>20, socketMemLimit>>20)
	// The positive control: the program did open connections and queue
	// data, so a small figure means the queues were bounded, not absent.
	if rep.TCPConns == 0 || rep.TCPBytes == 0 || rep.UDPSocks == 0 || rep.UDPBytes == 0 {
		t.Fatalf("the program queued nothing (report %+v): the test proves nothing", rep)
	}
	if filled.Len() == 0 {
		t.Errorf("the host never saw the program's FILLED line while it ran")
	}
	if grown > socketMemLimit {
		t.Errorf("the host's TCP+UDP socket memory grew by %d MiB during a run limited to %d MiB: socket buffers escape the memory limit",
			grown>>20, socketMemLimit>>20)
	}
	// The sockets die with the run; their memory must not stay held.
	var after int64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after, _ = sockstatPages()
		if (after-base)*page < 16*sandbox.MiB || time.Now().After(deadline) {
			break
		}
	}
	if held := (after - base) * page; held >= 16*sandbox.MiB {
		t.Errorf("after the run the host still holds %d MiB more socket memory than before it", held>>20)
	}
}
