// Code contexts through E2B's SDK against Crucible: a variable set in one
// context is there in the next cell of that context, and neither another
// context nor the default one sees it.
import { Sandbox } from '@e2b/code-interpreter'
import { execSummary, main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const context = await sandbox.createCodeContext()
    const set = await sandbox.runCode('x = 1', { context })
    const read = await sandbox.runCode('x', { context })
    const other = await sandbox.createCodeContext()
    const inOther = await sandbox.runCode('x', { context: other })
    const inDefault = await sandbox.runCode('x')
    const listed = await sandbox.listCodeContexts()
    return {
      context: { id: context.id, language: context.language, cwd: context.cwd },
      other: { id: other.id },
      set: execSummary(set),
      read: execSummary(read),
      inOther: execSummary(inOther),
      inDefault: execSummary(inDefault),
      listed: listed.map((c) => c.id),
    }
  } finally {
    await sandbox.kill()
  }
})
