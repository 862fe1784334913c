package linux

import (
	"fmt"
	"time"
)

// freezeTimeout bounds how long freezing or thawing a cgroup may take. A
// cgroup freezes once each of its tasks has stopped, which takes
// microseconds for tasks that run or sleep; only a task stuck in an
// uninterruptible wait can hold it up.
const freezeTimeout = 5 * time.Second

// setFreezer asks for a freezer state with request and polls done until
// the kernel reports the state reached, or timeout (freezeTimeout but in
// tests) passes. request
// is repeated on every poll, as runc and containerd do: on cgroup v1 a
// task forked while the cgroup was freezing can otherwise be missed.
//
// containerd's Freeze and Thaw (which the cgroup v1 kill uses) poll the
// same files, but every millisecond and with no bound: a session must not
// wait a millisecond more per cell than it takes, nor forever.
func setFreezer(state string, timeout time.Duration, request func() error, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for pause := 10 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		if err := request(); err != nil {
			return fmt.Errorf("cgroup freezer: %s: %w", state, err)
		}
		ok, err := done()
		if err != nil {
			return fmt.Errorf("cgroup freezer: %s: %w", state, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup freezer: not %s within %s", state, timeout)
		}
		time.Sleep(pause)
	}
}
