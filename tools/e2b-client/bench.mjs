// Times E2B's official SDK against a local `crucible serve`, and in the
// same run the baseline, Crucible's own /v1 session API, from this same
// node process (so that both pay node's HTTP costs). Driven by
// e2e/e2b_bench_test.go (go test ./e2e/ -run TestE2BBench -e2b-bench);
// it prints one JSON object of the samples, in milliseconds:
//   createRunKill  Sandbox.create() + runCode("print(1)") + kill(), each
//                  started once the server's warm-sessions pool for the
//                  sandbox's image has a session ready;
//   v1CreateRunKill  the same through /v1: POST /v1/sessions, POST
//                  .../exec {"code": "print(1)"}, DELETE;
//   phases         each of those split in its three calls;
//   runCode        runCode("1") on a live sandbox;
//   v1Exec         POST /v1/sessions/{id}/exec {"code": "1"} on a live
//                  session, alternating with runCode.
// Environment: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY as for the SDK;
// CRUCIBLE_URL and CRUCIBLE_KEY (a key of the same tenant) for /v1;
// BENCH_N samples of each (default 30); BENCH_POOL, the pool to wait for
// (default datascience/warm-sessions).
import { performance } from 'node:perf_hooks'
import { Sandbox } from '@e2b/code-interpreter'
import { env, main } from './tests/e2e/lib.mjs'

const base = env('CRUCIBLE_URL')
const key = env('CRUCIBLE_KEY')
const n = Number(process.env.BENCH_N || 30)
const pool = process.env.BENCH_POOL || 'datascience/warm-sessions'
const image = pool.split('/')[0]
const auth = { Authorization: `Bearer ${key}` }

// v1 sends a /v1 request and reads its whole answer.
async function v1(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? auth : { ...auth, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return text ? JSON.parse(text) : null
}

// metric reads a sample of /metrics for the pool.
async function metric(name) {
  const text = await (await fetch(base + '/metrics', { headers: auth })).text()
  const m = text.match(new RegExp(`^${name}\\{pool="${pool}"\\} (\\S+)$`, 'm'))
  return m ? Number(m[1]) : NaN
}

// poolReady waits until the pool has a session ready (at most 30 s).
async function poolReady() {
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if ((await metric('crucible_pool_ready')) >= 1) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`the pool ${pool} had no session ready for 30 s`)
}

// timed returns how long fn took, in milliseconds.
async function timed(fn) {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

// check throws unless the cell printed (or evaluated to) want.
function check(execution, want) {
  if (execution.error) throw new Error(`the cell failed: ${execution.error.name}: ${execution.error.value}`)
  const got = execution.logs.stdout.join('') || execution.text
  if (String(got).trim() !== want) throw new Error(`the cell answered ${JSON.stringify(got)}, want ${want}`)
}

main(async () => {
  const createRunKill = []
  const v1CreateRunKill = []
  const phases = { create: [], run: [], kill: [], v1Create: [], v1Exec: [], v1Delete: [] }
  const hits0 = await metric('crucible_pool_hits_total')
  const misses0 = await metric('crucible_pool_misses_total')
  for (let i = 0; i <= n; i++) { // the first of each is a warm-up, not kept
    await poolReady()
    const t0 = performance.now()
    const sbx = await Sandbox.create()
    const t1 = performance.now()
    check(await sbx.runCode('print(1)'), '1')
    const t2 = performance.now()
    await sbx.kill()
    const t3 = performance.now()
    await poolReady()
    const u0 = performance.now()
    const s = await v1('POST', '/v1/sessions', { image })
    const u1 = performance.now()
    const r = await v1('POST', `/v1/sessions/${s.id}/exec`, { code: 'print(1)' })
    if (r.stdout !== '1\n') throw new Error(`/v1 exec print(1): ${JSON.stringify(r)}`)
    const u2 = performance.now()
    await v1('DELETE', `/v1/sessions/${s.id}`)
    const u3 = performance.now()
    if (i > 0) {
      createRunKill.push(t3 - t0)
      phases.create.push(t1 - t0)
      phases.run.push(t2 - t1)
      phases.kill.push(t3 - t2)
      v1CreateRunKill.push(u3 - u0)
      phases.v1Create.push(u1 - u0)
      phases.v1Exec.push(u2 - u1)
      phases.v1Delete.push(u3 - u2)
    }
  }
  const hits = (await metric('crucible_pool_hits_total')) - hits0
  const misses = (await metric('crucible_pool_misses_total')) - misses0

  const runCode = []
  const v1Exec = []
  const sbx = await Sandbox.create()
  const s = await v1('POST', '/v1/sessions', { image })
  try {
    for (let i = 0; i < n + 5; i++) { // the first 5 of each warm up
      const a = await timed(async () => check(await sbx.runCode('1'), '1'))
      const b = await timed(async () => {
        const r = await v1('POST', `/v1/sessions/${s.id}/exec`, { code: '1' })
        if (r.status !== 'ok' || r.value !== '1') throw new Error(`/v1 exec 1: ${JSON.stringify(r)}`)
      })
      if (i >= 5) {
        runCode.push(a)
        v1Exec.push(b)
      }
    }
  } finally {
    await sbx.kill()
    await v1('DELETE', `/v1/sessions/${s.id}`)
  }
  return { n, pool, poolHits: hits, poolMisses: misses, createRunKill, v1CreateRunKill, phases, runCode, v1Exec }
})
