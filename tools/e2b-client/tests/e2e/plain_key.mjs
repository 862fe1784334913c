// A Crucible key of the ordinary form (crk_...), with
// E2B_VALIDATE_API_KEY=false so that the SDK does not check its shape:
// create, run print(1), kill.
import { Sandbox } from '@e2b/code-interpreter'
import { main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create()
  try {
    const execution = await sandbox.runCode('print(1)')
    return { stdout: execution.logs.stdout.join(''), error: execution.error?.name ?? null }
  } finally {
    await sandbox.kill()
  }
})
