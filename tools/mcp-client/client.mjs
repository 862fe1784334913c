// A scripted MCP client on the official TypeScript SDK, for Crucible's
// tests (cmd/crucible/mcp_client_test.go). It prints one JSON line per step.
//
//   node client.mjs stdio COMMAND ARGS...   serve over stdio: start COMMAND
//   node client.mjs http URL                streamable HTTP; MCP_API_KEY, if set, is the API key
//
// MCP_CHART=1 also asks for a matplotlib chart in the datascience image.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...args] = process.argv.slice(2);
const out = (o) => console.log(JSON.stringify(o));
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args, env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  const headers = process.env.MCP_API_KEY ? { Authorization: `Bearer ${process.env.MCP_API_KEY}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: node client.mjs stdio COMMAND ARGS... | http URL");
  process.exit(2);
}
const client = new Client({ name: "crucible-test", version: "1.0.0" });
await client.connect(transport);

const tools = await client.listTools();
out({ step: "tools", names: tools.tools.map((t) => t.name).sort() });

const printed = await client.callTool({ name: "run_code", arguments: { code: "print(6*7)" } });
out({ step: "print", stdout: printed.structuredContent.stdout, isError: printed.isError ?? false });

// Programs that fail: the result is an error (isError), the run still in it.
for (const [step, args] of [
  ["exit", { code: "import sys\nprint('partial')\nsys.exit(3)" }],
  ["timeout", { code: "while True: pass", limits: { wall_time_ms: 500, cpu_time_ms: 500 } }],
]) {
  const r = await client.callTool({ name: "run_code", arguments: args });
  out({ step, isError: r.isError ?? false, status: r.structuredContent?.status, exit_code: r.structuredContent?.exit_code,
    stdout: r.structuredContent?.stdout });
}

if (process.env.MCP_CHART === "1") {
  const code = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1,2,3],[1,4,9])\nplt.savefig('chart.png')";
  const chart = await client.callTool({ name: "run_code", arguments: { code, image: "datascience",
    limits: { wall_time_ms: 30000, cpu_time_ms: 30000 } } });
  out({ step: "chart", images: chart.content.filter((c) => c.type === "image").map((c) => c.mimeType) });
}

// A run that never ends by itself, cancelled once its first line arrives
// as a progress notification. Its sleep is named MCP_CANCEL_MARKER
// (default mcpcancelmarker), for a test to find on the host. With
// MCP_CANCEL_ON_STDIN=1 the client, once it has printed the "started"
// step, waits for a line on its stdin before it cancels: the test first
// sees the run's process on the host.
const marker = process.env.MCP_CANCEL_MARKER || "mcpcancelmarker";
const nextLine = () => new Promise((resolve) => {
  let seen = "";
  const onData = (chunk) => {
    seen += chunk;
    if (seen.includes("\n")) {
      process.stdin.off("data", onData);
      process.stdin.destroy(); // an open stdin would keep the client alive
      resolve(seen.slice(0, seen.indexOf("\n")));
    }
  };
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", onData);
});
const abort = new AbortController();
let started = false;
try {
  await client.callTool({ name: "run_code", arguments: { language: "bash",
    code: `echo started; exec -a ${marker} sleep 600`, limits: { wall_time_ms: 600000, cpu_time_ms: 600000 } } },
  undefined, { signal: abort.signal, onprogress: async (p) => {
    if (!started && p.message?.includes("started")) {
      started = true;
      out({ step: "started" });
      if (process.env.MCP_CANCEL_ON_STDIN === "1") {
        await nextLine();
      }
      abort.abort();
    }
  } });
  out({ step: "cancel", error: null });
} catch (e) {
  out({ step: "cancel", error: e.name });
}
// The cancellation is a notification sent in the background: a request
// after it makes sure it went out before the client leaves.
await client.listTools();
if (mode === "http") {
  await transport.terminateSession(); // DELETE /mcp: the server ends the session
}
await client.close();
