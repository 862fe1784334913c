// Keys Crucible does not know, through E2B's SDK: one of the SDK's shape
// (e2b_ and 64 hex digits) and a revoked one (REVOKED_KEY); creating or
// listing sandboxes with them must throw the SDK's AuthenticationError.
import { randomBytes } from 'node:crypto'
import { Sandbox } from '@e2b/code-interpreter'
import { attempt, env, main } from './lib.mjs'

function failed(r) {
  return r.threw ? { threw: true, name: r.name, class: r.class, message: r.message } : { threw: false }
}

main(async () => {
  const unknown = 'e2b_' + randomBytes(32).toString('hex')
  const revoked = env('REVOKED_KEY')
  return {
    createUnknown: failed(await attempt(Sandbox.create({ apiKey: unknown }))),
    listUnknown: failed(await attempt(Sandbox.list({ apiKey: unknown }).nextItems())),
    createRevoked: failed(await attempt(Sandbox.create({ apiKey: revoked }))),
  }
})
