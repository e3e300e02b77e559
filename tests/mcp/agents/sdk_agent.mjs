// An ACP agent built on the official TypeScript SDK's agent side
// (@agentclientprotocol/sdk), for tests/it/acp_client.rs: cogni's
// `--acp` client against the SDK other agents are built with. The SDK's
// npm package leaves out its example agent (src/examples/agent.ts), so
// this one plays the same turn with the SDK's current API: text, a read
// (through the client's fs/read_text_file), an edit that asks for
// permission first, and the answer to it; besides a plan, a thought,
// modes, a command, and a write outside the workspace that the client
// must refuse.
//
//   node sdk_agent.mjs
import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const sessions = new Map();
const pause = (signal) =>
  new Promise((resolve, reject) =>
    setTimeout(() => (signal.aborted ? reject(new Error("cancelled")) : resolve()), 20),
  );

async function turn(client, sessionId, cwd, signal) {
  const update = (update) => client.notify(acp.methods.client.session.update, { sessionId, update });
  const say = (text) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  await update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "Read first, then edit." } });
  await say("I'll help you with that. Let me start by reading some files to understand the current situation.\n");
  await pause(signal);
  const readme = path.join(cwd, "README.md");
  await update({
    sessionUpdate: "tool_call", toolCallId: "call_1", title: "Reading project files", kind: "read",
    status: "pending", locations: [{ path: readme }], rawInput: { path: readme },
  });
  const { content } = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: readme });
  await update({
    sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "completed",
    content: [{ type: "content", content: { type: "text", text: content } }],
  });
  await update({
    sessionUpdate: "plan",
    entries: [
      { content: "read the project", priority: "high", status: "completed" },
      { content: "update the configuration", priority: "medium", status: "in_progress" },
    ],
  });
  await pause(signal);
  await say("Now I understand the project structure. I need to make some changes to improve it.\n");
  const config = path.join(cwd, "config.json");
  const oldText = await client
    .request(acp.methods.client.fs.readTextFile, { sessionId, path: config })
    .then((r) => r.content);
  const newText = '{"database": {"host": "new-host"}}\n';
  const edit = {
    toolCallId: "call_2", title: "Modifying critical configuration file", kind: "edit", status: "pending",
    locations: [{ path: config }], rawInput: { path: config, content: newText },
    content: [{ type: "diff", path: config, oldText, newText }],
  };
  await update({ sessionUpdate: "tool_call", ...edit });
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: edit,
    options: [
      { kind: "allow_once", name: "Allow this change", optionId: "allow" },
      { kind: "reject_once", name: "Skip this change", optionId: "reject" },
    ],
  });
  if (answer.outcome.outcome === "cancelled") return;
  if (answer.outcome.optionId === "allow") {
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: config, content: newText });
    await update({ sessionUpdate: "tool_call_update", toolCallId: "call_2", status: "completed" });
    await say("Perfect! I've successfully updated the configuration.\n");
  } else {
    await update({ sessionUpdate: "tool_call_update", toolCallId: "call_2", status: "failed" });
    await say("I understand you prefer not to make that change. I'll skip the configuration update.\n");
  }
  try {
    const outside = path.join(path.dirname(cwd), "sdk-agent-was-here.txt");
    await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: outside, content: "x" });
    await say("I wrote outside the workspace.\n");
  } catch (e) {
    await say(`The client refused a write outside the workspace: ${e.message}\n`);
  }
}

const app = acp
  .agent({ name: "sdk-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "sdk-agent", version: "2.4.0" },
  }))
  .onRequest(acp.methods.agent.session.new, ({ params, client }) => {
    const sessionId = crypto.randomUUID();
    sessions.set(sessionId, { cwd: params.cwd, pending: null });
    setTimeout(() =>
      client.notify(acp.methods.client.session.update, {
        sessionId,
        update: {
          sessionUpdate: "available_commands_update",
          availableCommands: [{ name: "explain", description: "explain the project", input: { hint: "topic" } }],
        },
      }),
    );
    return {
      sessionId,
      modes: {
        currentModeId: "default",
        availableModes: [
          { id: "default", name: "Default", description: "asks before edits" },
          { id: "plan", name: "Plan" },
        ],
      },
    };
  })
  .onRequest(acp.methods.agent.session.setMode, async ({ params, client }) => {
    await client.notify(acp.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "current_mode_update", currentModeId: params.modeId },
    });
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.invalidParams({ sessionId: params.sessionId });
    session.pending?.abort();
    session.pending = new AbortController();
    try {
      await turn(client, params.sessionId, session.cwd, session.pending.signal);
    } catch (e) {
      if (session.pending.signal.aborted) return { stopReason: "cancelled" };
      throw e;
    }
    session.pending = null;
    return { stopReason: "end_turn" };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.pending?.abort();
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
