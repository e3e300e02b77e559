// cogni acp driven by the official TypeScript ACP SDK's client side
// (@agentclientprotocol/sdk), as an editor drives it, for
// tests/it/interop.rs.
//
//   node acp_client.mjs COGNI [ARGS...]
//
// Starts `COGNI acp ARGS` in the current directory, initializes with the
// fs capability (the editor's buffers: notes.txt is open with unsaved
// text), opens a session, sends one prompt allowing the first permission
// asked, switches modes (one the agent does not offer too), lists the
// sessions, closes stdin and prints everything it saw as one JSON object.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const [cogni, ...args] = process.argv.slice(2);
const cwd = process.cwd();
const child = spawn(cogni, ["acp", ...args], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const out = { updates: [], permissions: [], reads: [], writes: {} };
const buffers = new Map([[path.join(cwd, "notes.txt"), "unsaved notes\n"]]);

const app = acp
  .client({ name: "cogni-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    out.updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    out.permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    out.reads.push(params.path);
    const content = buffers.get(params.path);
    if (content === undefined) throw acp.RequestError.resourceNotFound(params.path);
    return { content };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    buffers.set(params.path, params.content);
    out.writes[params.path] = params.content;
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
await app.connectWith(stream, async (agent) => {
  out.initialize = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const session = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  out.session = session;
  out.prompt = await agent.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "answer the notes" }],
  });
  out.setMode = await agent.request(acp.methods.agent.session.setMode, {
    sessionId: session.sessionId,
    modeId: "plan",
  });
  try {
    await agent.request(acp.methods.agent.session.setMode, {
      sessionId: session.sessionId,
      modeId: "code",
    });
    out.badMode = { accepted: true };
  } catch (e) {
    out.badMode = { code: e.code, message: e.message };
  }
  out.list = await agent.request(acp.methods.agent.session.list, { cwd });
  // Let the mode change's notification arrive before the connection ends.
  await new Promise((resolve) => setTimeout(resolve, 200));
});
child.stdin.end();
out.exit = await exited;
console.log(JSON.stringify(out));
