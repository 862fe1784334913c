// `await using` with the SDK, compiled by tsc (npm run build) to
// test/.build/dispose.js for session.test.mjs: Node 20 runs the
// downlevelled form, which calls [Symbol.asyncDispose] at the block's end.
import { Crucible } from '@crucible-sandbox/sdk';

/** execInUsingBlock opens a session with `await using`, runs code in it and returns its ID and the cell's value; the session is closed on return. */
export async function execInUsingBlock(crucible: Crucible, code: string): Promise<{ id: string; value: string | undefined }> {
  await using s = await crucible.session();
  const res = await s.exec(code);
  return { id: s.id, value: res.value };
}

/** throwInUsingBlock opens a session with `await using` and throws inside the block; the session is closed all the same. It returns the session's ID through onOpen. */
export async function throwInUsingBlock(crucible: Crucible, onOpen: (id: string) => void): Promise<never> {
  await using s = await crucible.session();
  onOpen(s.id);
  throw new Error('thrown inside the block');
}
