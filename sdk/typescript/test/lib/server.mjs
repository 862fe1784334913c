// What the tests know of the server they run against: the lead's harness
// (e2e/sdk_test.go, TestTypeScriptSDK) starts `crucible serve` with a
// scripted model and sets CRUCIBLE_URL, CRUCIBLE_API_KEY (team-a) and
// CRUCIBLE_TEST_OTHER_API_KEY (team-b).
import { test } from 'node:test';
import { Crucible } from '../../dist/index.js';

/** The server's URL and the keys of two tenants, from the environment. */
export const env = {
  url: process.env.CRUCIBLE_URL ?? '',
  key: process.env.CRUCIBLE_API_KEY ?? '',
  otherKey: process.env.CRUCIBLE_TEST_OTHER_API_KEY ?? '',
};

const howTo =
  'CRUCIBLE_URL is not set: run these tests with `go test -tags crucible_initexe -run TestTypeScriptSDK ./e2e` from the repository root, ' +
  'or set CRUCIBLE_URL, CRUCIBLE_API_KEY and CRUCIBLE_TEST_OTHER_API_KEY to a `crucible serve` you started (see sdk/typescript/README.md)';

/**
 * serverTest declares a test that needs the server. Without CRUCIBLE_URL
 * it is skipped, saying how to run it, except under CI, where it fails:
 * the setup script can always provide the server.
 */
export function serverTest(name, fn) {
  if (env.url) return test(name, fn);
  if (process.env.CI) {
    return test(name, () => {
      throw new Error(howTo);
    });
  }
  return test(name, { skip: howTo }, () => {});
}

/** client returns a client of the server as team-a, with opts over the defaults. */
export function client(opts = {}) {
  return new Crucible({ baseUrl: env.url, apiKey: env.key, ...opts });
}

/** PNG's signature: the first 8 bytes of every PNG file. */
export const pngSignature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** isPNG says whether bytes start with PNG's signature. */
export function isPNG(bytes) {
  return bytes.length > 8 && pngSignature.every((b, i) => bytes[i] === b);
}
