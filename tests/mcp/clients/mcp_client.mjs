// cogni mcp-server driven by the official TypeScript MCP SDK's client
// (@modelcontextprotocol/sdk, the one Claude Desktop and Claude Code are
// built on), for tests/it/interop.rs.
//
//   node mcp_client.mjs COGNI [ARGS...]
//
// Starts `COGNI mcp-server ARGS` with this process's environment, lists
// the tools, runs a task (`cogni`, with progress), continues it
// (`cogni_reply`), makes a call with a bad argument, closes, and prints
// everything it saw as one JSON object on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [cogni, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: cogni,
  args: ["mcp-server", ...args],
  env: process.env,
  cwd: process.cwd(),
  stderr: "inherit",
});
const client = new Client({ name: "cogni-interop", version: "1.0.0" });
await client.connect(transport);

const out = { server: client.getServerVersion() };
const { tools } = await client.listTools();
out.tools = tools.map((t) => ({
  name: t.name,
  required: [...(t.inputSchema.required ?? [])].sort(),
  properties: Object.keys(t.inputSchema.properties ?? {}).sort(),
  hasOutputSchema: t.outputSchema !== undefined,
}));

const progress = [];
const first = await client.callTool(
  { name: "cogni", arguments: { prompt: "write hello into out.txt" } },
  undefined,
  { onprogress: (p) => progress.push(p.message ?? ""), timeout: 60_000 },
);
out.first = first;
out.progress = progress;

out.reply = await client.callTool(
  {
    name: "cogni_reply",
    arguments: { session_id: first.structuredContent.session_id, prompt: "what does it say?" },
  },
  undefined,
  { timeout: 60_000 },
);

try {
  out.bad = await client.callTool({ name: "cogni", arguments: { prompt: "x", sandbox: "nope" } });
} catch (e) {
  out.bad = { thrown: String(e) };
}

await client.close();
console.log(JSON.stringify(out));
