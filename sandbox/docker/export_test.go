package docker

// PoolLabel and PoolOwner are the label of pooled containers and this
// process's value of it, for the tests to find a pool's containers from
// the host.
const PoolLabel = poolLabel

// PoolOwner is this test process's value of PoolLabel.
var PoolOwner = poolOwner

// PoolReady is how many containers r's pool holds ready.
func (r *Runtime) PoolReady() int { return len(r.pool.ready) }
