// commands.run through E2B's SDK against Crucible: `echo hi` (its output
// streamed to onStdout as well as returned), a command that fails (the
// SDK throws CommandExitError carrying the exit code and stderr), and a
// command that runs in the sandbox's working directory, /home/user (it
// reads by a relative path a file files.write put there), with a variable.
import { Sandbox } from '@e2b/code-interpreter'
import { describe, main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const streamed = []
    const hi = await sandbox.commands.run('echo hi', { onStdout: (data) => streamed.push(data) })
    let failed = { threw: false }
    try {
      await sandbox.commands.run('echo oops >&2; exit 3')
    } catch (e) {
      failed = { threw: true, ...describe(e), exitCode: e.exitCode ?? null, stderr: e.stderr ?? null }
    }
    await sandbox.files.write('/home/user/note.txt', 'written by files.write\n')
    const where = await sandbox.commands.run('cat note.txt; echo "$GREETING"', { envs: { GREETING: 'hello from envs' } })
    const pwd = await sandbox.commands.run('pwd')
    return {
      hi: { stdout: hi.stdout, stderr: hi.stderr, exitCode: hi.exitCode },
      streamed: streamed.join(''),
      failed,
      where: { stdout: where.stdout, exitCode: where.exitCode },
      pwd: pwd.stdout,
    }
  } finally {
    await sandbox.kill()
  }
})
