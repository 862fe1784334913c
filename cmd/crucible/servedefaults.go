package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/spf13/pflag"
)

// maxDefaultWarm caps the default of --warm: a slot of the data-science
// image holds some 60 MiB of preloaded pandas while it waits, and more
// slots than runs at once serve nothing.
const maxDefaultWarm = 8

// defaultWarm is --warm's default: a zygote slot per CPU (a run served
// by a slot costs a fork instead of an interpreter's start, about five
// times less than a bare python3), up to maxDefaultWarm.
func defaultWarm() int { return min(runtime.NumCPU(), maxDefaultWarm) }

// addWarmFlag adds --warm, the zygote slots kept per image, to fl.
func addWarmFlag(fl *pflag.FlagSet, warm *int) {
	fl.IntVar(warm, "warm", defaultWarm(), "Python zygote slots kept per image, the interpreter started, each serving stateless runs by forking (two uids each; the default is one per CPU, at most "+
		strconv.Itoa(maxDefaultWarm)+"; 0 for none)")
}

// warmFor returns the zygote slots to keep in the root filesystem root
// ("" for the host's directories): --warm, unless it was left to its
// default and root has no /usr/bin/python3, where a slot could never
// start and its build would fail again every few seconds (logged).
func (f *serveFlags) warmFor(root string, log *slog.Logger) int {
	if f.warmGiven || f.warm == 0 {
		return f.warm
	}
	if _, err := os.Lstat(filepath.Join(cmp.Or(root, "/"), "usr/bin/python3")); err != nil {
		log.Info("no zygote slots: the root filesystem has no usr/bin/python3 (--warm N keeps them anyway)", "rootfs", cmp.Or(root, "/"))
		return 0
	}
	return f.warm
}

// warmPerImage is the zygote slots each image keeps, as logged: --warm,
// or none on Docker, which has no zygote slots.
func (f *serveFlags) warmPerImage() int {
	if f.runtime.onDocker() {
		return 0
	}
	return f.warm
}

// checkUIDCount checks that the uid range of conf holds the sandboxes f
// keeps ready for each of n images, naming the flags to lower when it
// does not: every sandbox kept ready holds a uid, a zygote slot two.
func checkUIDCount(conf *serveConfig, f *serveFlags, n int) error {
	if f.runtime.onDocker() { // uid_base and uid_count are the native runtime's
		return nil
	}
	uids := cmp.Or(conf.UIDCount, nativeDefaultUIDCount)
	ready := (2*f.warm + f.warmSessions + f.prestart) * n
	if uids > ready {
		return nil
	}
	return fmt.Errorf("--config: uid_count (%d) must exceed the uids of the sandboxes kept ready, (2 × --warm %d + --warm-sessions %d + --prestart %d) × %d images = %d: "+
		"lower --warm (its default is %d here, one per CPU; --warm 0 keeps no zygote slot) or the others, or raise uid_count",
		uids, f.warm, f.warmSessions, f.prestart, n, ready, defaultWarm())
}

// webUIURL is the address of the web UI served on addr, the listener's:
// an unspecified address (0.0.0.0, ::) is shown as loopback, which it
// includes.
func webUIURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
