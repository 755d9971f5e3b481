// A client of `hx acp` written against the protocol's official TypeScript SDK, run by
// tests/it/acp_npm.rs with tsx: what a client that picks the model (as Harbor's ACP client
// does for `-m`) and reads a prompt's tokens sees. It uses the SDK's `unstable` entry point,
// whose schema has the `usage` of a prompt's answer (the stable one drops that field).
//
// Usage: acp_options_client.mts HX_BINARY WORKSPACE MODEL. It spawns `hx acp`, initializes,
// authenticates with the method hx lists, opens a session, prompts, switches the model
// option to MODEL, asks for a model hx does not offer, and prompts again. Everything is
// printed as one JSON object on stdout, for the Rust test to assert on.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
} from "@agentclientprotocol/sdk/unstable";

const [hxBinary, workspace, model] = process.argv.slice(2);
if (!hxBinary || !workspace || !model) {
  console.error("usage: acp_options_client.mts HX_BINARY WORKSPACE MODEL");
  process.exit(2);
}

const stderr: string[] = [];
const child = spawn(hxBinary, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "pipe"] });
child.stderr!.on("data", (d: Buffer) => stderr.push(d.toString()));
const stream = ndJsonStream(
  Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
  Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
);

const app = client({ name: "hx-test-options-client" }).onNotification(
  methods.client.session.update,
  () => {},
);
const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const methodId = init.authMethods?.[0]?.id ?? "";
  const authenticated = await ctx.request(methods.agent.authenticate, { methodId });
  const session = await ctx.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  const sessionId = session.sessionId;
  const first = await ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "first" }],
  });
  const switched = await ctx.request(methods.agent.session.setConfigOption, {
    sessionId,
    configId: "model",
    value: model,
  });
  let refused: { code: number; message: string } | null = null;
  try {
    await ctx.request(methods.agent.session.setConfigOption, {
      sessionId,
      configId: "model",
      value: "no-such-model",
    });
  } catch (e) {
    if (!(e instanceof RequestError)) throw e;
    refused = { code: e.code, message: e.message };
  }
  const second = await ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "second" }],
  });
  return { init, authenticated, session, first, switched, refused, second };
});
child.stdin!.end();
const exit = await new Promise<number | null>((resolve) => {
  if (child.exitCode !== null) return resolve(child.exitCode);
  child.on("exit", (code) => resolve(code));
});

console.log(JSON.stringify({ ...result, exit, stderr: stderr.join("") }));
