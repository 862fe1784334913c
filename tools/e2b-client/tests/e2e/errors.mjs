// A Python error through E2B's SDK against Crucible: `1/0` ends with
// execution.error (name, value, traceback), passed to onError too, and
// what the cell printed before it is kept.
import { Sandbox } from '@e2b/code-interpreter'
import { execSummary, main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const seen = []
    const execution = await sandbox.runCode('print("before")\n1/0', {
      onError: (e) => seen.push({ name: e.name, value: e.value }),
    })
    const next = await sandbox.runCode('print("after")')
    return { execution: execSummary(execution), onError: seen, next: execSummary(next) }
  } finally {
    await sandbox.kill()
  }
})
