// A sandbox of a cluster used through another node, with E2B's official
// @e2b/code-interpreter: E2B_API_URL names node A (the control plane:
// the sandbox is created there, and held there), E2B_SANDBOX_URL node B
// (the data plane: every file and code call goes through B, which
// forwards it to A by the E2b-Sandbox-Id header). State set by one cell
// is read by the next, and a file written is read back.
import { Sandbox } from '@e2b/code-interpreter'
import { main } from './lib.mjs'

// step runs what, saying which step threw.
async function step(name, what) {
  try {
    return await what()
  } catch (e) {
    e.message = `${name}: ${e.message} (cause: ${e.cause?.message ?? e.cause})`
    throw e
  }
}

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 120_000 })
  try {
    await step('write', () => sandbox.files.write('/home/user/n.txt', '41'))
    const first = await step('first cell', () => sandbox.runCode("x = int(open('/home/user/n.txt').read())"))
    const second = await step('second cell', () => sandbox.runCode('x + 1'))
    const read = await step('read', () => sandbox.files.read('/home/user/n.txt'))
    return {
      sandboxId: sandbox.sandboxId,
      text: second.text ?? null,
      error: first.error?.value ?? second.error?.value ?? null,
      read,
    }
  } finally {
    await sandbox.kill()
  }
})
