// An editor that writes files for the agent, written against the protocol's official
// TypeScript SDK, run by tests/it/acp_containment.rs with tsx (issue 32, item 5).
//
// Usage: acp_write_client.mts HX_BINARY WORKSPACE. It spawns `hx acp`, offers fs reads and
// writes, and sends one prompt. When hx asks it to write a file, it first lets the model's
// background process act (it creates `go` in the workspace and waits up to 2 s for `swapped`),
// then writes by name, following links, as an editor does. It prints one JSON object: the
// prompt's answer, each write asked for, and whether the process ran during the write.

import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [hxBinary, workspace] = process.argv.slice(2);
if (!hxBinary || !workspace) {
  console.error("usage: acp_write_client.mts HX_BINARY WORKSPACE");
  process.exit(2);
}

const writes: { path: string; swappedDuringWrite: boolean }[] = [];
const stderr: string[] = [];
const child = spawn(hxBinary, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "pipe"] });
child.stderr!.on("data", (d: Buffer) => stderr.push(d.toString()));

async function swappedWithin(ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (existsSync(join(workspace, "swapped"))) return true;
    await new Promise((r) => setTimeout(r, 5));
  }
  return false;
}

const app = client({ name: "hx-test-editor" })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => ({
    content: readFileSync(params.path, "utf8"),
  }))
  .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
    writeFileSync(join(workspace, "go"), "");
    const swappedDuringWrite = await swappedWithin(2000);
    writeFileSync(params.path, params.content);
    writes.push({ path: params.path, swappedDuringWrite });
    return {};
  });

const stream = ndJsonStream(
  Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
  Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
);
const answer = await app.connectWith(stream, async (ctx) => {
  await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  const { sessionId } = await ctx.request(methods.agent.session.new, {
    cwd: workspace,
    mcpServers: [],
  });
  return ctx.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: "write the notes" }],
  });
});
child.stdin!.end();
await new Promise((r) => child.on("exit", r));
console.log(JSON.stringify({ answer, writes, stderr: stderr.join("") }));
