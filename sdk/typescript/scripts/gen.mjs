// Generates src/openapi.ts, the types of Crucible's API, from the server's
// OpenAPI document (server/openapi.json) with openapi-typescript, or checks
// that the committed file is what the generator makes of the document now.
//
//   node scripts/gen.mjs                      write src/openapi.ts      (npm run gen)
//   node scripts/gen.mjs --check              exit 1 if it drifted      (npm run check-drift)
//   node scripts/gen.mjs --check --spec F --out G   the same for another document or file
//
// The check is what keeps the SDK's types equal to the API: a route or a
// type changed in server/openapi.json without `npm run gen` fails it.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

/** parseArgs reads --check, --spec FILE and --out FILE. */
function parseArgs(argv) {
  const opts = {
    check: false,
    spec: path.resolve(root, '../../server/openapi.json'),
    out: path.resolve(root, 'src/openapi.ts'),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--check') opts.check = true;
    else if ((a === '--spec' || a === '--out') && i + 1 < argv.length) opts[a.slice(2)] = path.resolve(argv[++i]);
    else throw new Error(`gen.mjs: unknown argument ${JSON.stringify(a)} (use --check, --spec FILE, --out FILE)`);
  }
  return opts;
}

/** generate returns the TypeScript that openapi-typescript makes of spec. */
export async function generate(spec) {
  // Fields with a default stay optional: a request may leave them out (the
  // server fills them in), which the generator's default would forbid.
  const ast = await openapiTS(pathToFileURL(spec), { silent: true, defaultNonNullable: false });
  return COMMENT_HEADER + astToString(ast);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const want = await generate(opts.spec);
  const rel = (p) => path.relative(process.cwd(), p) || p;
  if (!opts.check) {
    await writeFile(opts.out, want);
    console.log(`gen: wrote ${rel(opts.out)} from ${rel(opts.spec)}`);
    return;
  }
  const have = await readFile(opts.out, 'utf8').catch(() => null);
  if (have === want) {
    console.log(`check-drift: ${rel(opts.out)} matches ${rel(opts.spec)}`);
    return;
  }
  const haveLines = (have ?? '').split('\n');
  const wantLines = want.split('\n');
  let line = 0;
  while (line < haveLines.length && line < wantLines.length && haveLines[line] === wantLines[line]) line++;
  console.error(
    `check-drift: ${rel(opts.out)} is out of date with ${rel(opts.spec)}` +
      (have === null ? ' (the file is missing)' : ` (first difference at line ${line + 1}:\n  committed: ${JSON.stringify(haveLines[line] ?? '')}\n  generated: ${JSON.stringify(wantLines[line] ?? '')})`) +
      `\nRegenerate it and commit the result: (cd sdk/typescript && npm run gen)`,
  );
  process.exitCode = 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(`gen.mjs: ${err.message ?? err}`);
    process.exitCode = 2;
  });
}
