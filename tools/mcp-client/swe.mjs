// A scripted MCP client on the official TypeScript SDK for the swe tool's
// test (mcpserver/swe_test.go), over streamable HTTP. It prints one JSON
// line per step.
//
//   node swe.mjs URL
//
// MCP_SWE_ARCHIVE is the repository (base64), MCP_SWE_TESTS the tests
// that must pass (comma-separated), MCP_SWE_IMAGE the image.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
const client = new Client({ name: "crucible-swe-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const tools = await client.listTools();
const swe = tools.tools.find((t) => t.name === "swe");
out({ step: "tools", names: tools.tools.map((t) => t.name).sort(),
  inputs: Object.keys(swe?.inputSchema?.properties ?? {}).sort(), required: swe?.inputSchema?.required ?? [] });

let progress = 0;
const r = await client.callTool({ name: "swe", arguments: {
  task: "fix the failing test in test_calc.py", archive: process.env.MCP_SWE_ARCHIVE,
  tests: (process.env.MCP_SWE_TESTS || "").split(",").filter(Boolean), image: process.env.MCP_SWE_IMAGE } },
undefined, { timeout: 300000, resetTimeoutOnProgress: true, onprogress: () => { progress++; } });
const s = r.structuredContent ?? {};
out({ step: "swe", isError: r.isError ?? false, status: s.status, diff: s.diff, before: s.before, after: s.after,
  fail_to_pass: s.fail_to_pass, text: r.content?.find((c) => c.type === "text")?.text, progress });

const bad = await client.callTool({ name: "swe", arguments: { task: "t", archive: "%%%" } });
out({ step: "bad", isError: bad.isError ?? false, text: bad.content?.find((c) => c.type === "text")?.text });
await client.close();
