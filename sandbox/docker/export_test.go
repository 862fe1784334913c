package docker

// PoolLabel and PoolOwner are the label of pooled containers and this
// process's value of it, for the tests to find a pool's containers from
// the host.
const PoolLabel = poolLabel

// PoolOwner is this test process's value of PoolLabel.
var PoolOwner = poolOwner

// PoolReady is how many containers r's pool holds ready.
func (r *Runtime) PoolReady() int { return len(r.pool.ready) }

// OnContainer tells f which container serves each run from now on, with
// the run's environment; nil stops it.
func OnContainer(f func(env map[string]string, id string)) { onContainer = f }

// StartTime is the start time of process pid (field 22 of its stat), or ""
// when it is gone: what owner labels hold.
var StartTime = startTime

// SelfOwner is the owner label package docker gives this process's
// containers and volumes.
var SelfOwner = selfOwner
