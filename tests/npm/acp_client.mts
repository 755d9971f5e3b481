// A client of `hx acp` written against the protocol's official TypeScript SDK
// (`@agentclientprotocol/sdk`, installed in tests/npm), run by tests/it/acp_npm.rs with tsx.
//
// Usage: acp_client.mts HX_BINARY WORKSPACE. It spawns `hx acp` (with the environment it was
// given: the test's HOME and fake model server), initializes, opens a session, sends a prompt
// whose command the guard refuses (and allows it once when asked), sends a prompt whose
// command sleeps and cancels it, then starts hx again and loads the session. Everything the
// agent sent is printed as one JSON object on stdout, for the Rust test to assert on.

import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type SessionNotification,
  type RequestPermissionRequest,
} from "@agentclientprotocol/sdk";

const [hxBinary, workspace] = process.argv.slice(2);
if (!hxBinary || !workspace) {
  console.error("usage: acp_client.mts HX_BINARY WORKSPACE");
  process.exit(2);
}

type Run = {
  updates: SessionNotification[];
  permissions: RequestPermissionRequest[];
  stderr: string[];
};

function start(run: Run): { child: ChildProcess; app: ReturnType<typeof client> } {
  const child = spawn(hxBinary, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr!.on("data", (d: Buffer) => run.stderr.push(d.toString()));
  const app = client({ name: "hx-test-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      run.updates.push(params);
    })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      run.permissions.push(params);
      return { outcome: { outcome: "selected", optionId: "allow_once" } };
    });
  return { child, app };
}

function stream(child: ChildProcess) {
  return ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
  );
}

async function until(what: string, test: () => boolean, ms = 20000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on("exit", (code) => resolve(code));
  });
}

const first: Run = { updates: [], permissions: [], stderr: [] };
const one = start(first);
const result = await one.app.connectWith(stream(one.child), async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const session = await ctx.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  const sessionId = session.sessionId;
  const guarded = await ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [
      { type: "text", text: "run the guarded command" },
      {
        type: "resource",
        resource: { uri: `file://${workspace}/context.txt`, text: "embedded context text" },
      },
    ],
  });
  const sleeping = ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "sleep" }],
  });
  await until("the sleeping call", () =>
    first.updates.some(
      (n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === "c2",
    ),
  );
  const asked = Date.now();
  await ctx.notify(methods.agent.session.cancel, { sessionId });
  const cancelled = await sleeping;
  const cancelMs = Date.now() - asked;
  return { init, sessionId, guarded, cancelled, cancelMs };
});
one.child.stdin!.end();
const firstExit = await exited(one.child);

const second: Run = { updates: [], permissions: [], stderr: [] };
const two = start(second);
const loaded = await two.app.connectWith(stream(two.child), async (ctx) => {
  await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const load = await ctx.request(methods.agent.session.load, {
    sessionId: result.sessionId,
    cwd: workspace,
    mcpServers: [],
  });
  return { load };
});
two.child.stdin!.end();
const secondExit = await exited(two.child);

console.log(
  JSON.stringify({
    ...result,
    firstExit,
    updates: first.updates,
    permissions: first.permissions,
    loaded,
    secondExit,
    replayed: second.updates,
    stderr: first.stderr.join("") + second.stderr.join(""),
  }),
);
