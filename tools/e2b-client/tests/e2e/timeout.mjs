// A cell that never ends, through E2B's SDK against Crucible:
// runCode('while True: pass', {timeoutMs: 2000}) must end (the SDK throws
// its TimeoutError once 2 s pass) and the sandbox must still run code.
import { Sandbox } from '@e2b/code-interpreter'
import { attempt, execSummary, main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    await sandbox.runCode('kept = 41')
    const started = Date.now()
    const spin = await attempt(sandbox.runCode('while True: pass', { timeoutMs: 2000 }))
    const spinMs = Date.now() - started
    const after = Date.now()
    const next = await sandbox.runCode('print("still here")', { timeoutMs: 30_000 })
    const nextMs = Date.now() - after
    // Whether the variables survived the interruption (E2B's interrupt
    // keeps them; a restarted interpreter would not): reported, not required.
    const kept = await sandbox.runCode('kept + 1', { timeoutMs: 30_000 })
    return {
      spin: spin.threw ? { threw: true, name: spin.name, class: spin.class, message: spin.message } : { threw: false },
      spinMs,
      next: execSummary(next),
      nextMs,
      kept: execSummary(kept),
    }
  } finally {
    await sandbox.kill()
  }
})
