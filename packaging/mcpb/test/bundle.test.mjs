// The MCP Bundle as a host installs it: unpacked with @anthropic-ai/mcpb's own unpacker, the
// command and environment resolved from manifest.json and a user's settings with mcpb's own
// getMcpConfigForManifest (the `${__dirname}` / `${user_config.*}` substitution hosts do), the
// server started that way, then spoken to over stdio with JSON-RPC lines.
//
// The bundle: $SNOWLUMA_MCP_BUNDLE, else the one .mcpb in <repo>/dist (scripts/release.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getMcpConfigForManifest, unpackExtension } from "@anthropic-ai/mcpb";

const REPO = resolve(fileURLToPath(import.meta.url), "../../../..");
const DOCS_TOOLS = ["list_actions", "search_actions", "get_action", "list_categories", "get_runtime_info", "preview_message", "read_more"];
const TOKEN = "bundle-test-token-7f3a";
// Generous bound for one round trip: only a hang reaches it.
const REPLY_TIMEOUT_MS = 30_000;

function bundlePath() {
  if (process.env.SNOWLUMA_MCP_BUNDLE) return process.env.SNOWLUMA_MCP_BUNDLE;
  const dist = join(REPO, "dist");
  const found = readdirSync(dist).filter((f) => f.endsWith(".mcpb"));
  assert.equal(found.length, 1, `expected one .mcpb in ${dist} (run bash scripts/release.sh), found ${found}`);
  return join(dist, found[0]);
}

async function unpacked(t) {
  const dir = mkdtempSync(join(tmpdir(), "snowluma-mcpb-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.ok(await unpackExtension({ mcpbPath: bundlePath(), outputDir: join(dir, "bundle"), silent: true }));
  const extensionPath = join(dir, "bundle");
  const manifest = JSON.parse(readFileSync(join(extensionPath, "manifest.json"), "utf8"));
  return { dir, extensionPath, manifest };
}

/** Starts the server as a host would, and returns a small JSON-RPC client over its stdio. */
function start(t, config, home) {
  const child = spawn(config.command, config.args ?? [], {
    env: { PATH: process.env.PATH, HOME: home, ...config.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const waiting = new Map();
  let buffer = "";
  child.stdout.on("data", (data) => {
    buffer += data;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const message = JSON.parse(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      waiting.get(message.id)?.(message);
    }
  });
  const exited = new Promise((done) => child.on("exit", (code) => done(code)));
  t.after(() => child.kill());
  let nextId = 1;
  const client = {
    stderr: () => stderr,
    notify(method, params = {}) {
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method, params }) + "\n");
    },
    request(method, params = {}) {
      const id = nextId++;
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
      return Promise.race([
        new Promise((done) => waiting.set(id, done)),
        exited.then((code) => assert.fail(`the server exited (${code}) before answering ${method}: ${stderr}`)),
        new Promise((_, fail) => setTimeout(() => fail(new Error(`no answer to ${method}`)), REPLY_TIMEOUT_MS).unref()),
      ]);
    },
    async initialize() {
      const reply = await this.request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "bundle-test", version: "1" },
      });
      assert.ok(reply.result, JSON.stringify(reply));
      this.notify("notifications/initialized");
    },
    async toolNames() {
      const reply = await this.request("tools/list");
      return reply.result.tools;
    },
  };
  return client;
}

function resolveConfig(manifest, extensionPath, userConfig) {
  return getMcpConfigForManifest({ manifest, extensionPath, systemDirs: {}, userConfig, pathSeparator: "/" });
}

test("the unpacked bundle starts with the manifest's defaults: docs mode, the docs tools", async (t) => {
  const { dir, extensionPath, manifest } = await unpacked(t);
  assert.equal(manifest.server.type, "binary");
  const config = await resolveConfig(manifest, extensionPath, {});
  assert.equal(config.command, join(extensionPath, "server", "snowluma-mcp"));
  // Every variable was substituted: no `${...}` reaches the server.
  for (const [name, value] of Object.entries(config.env)) assert.doesNotMatch(value, /\$\{/, name);
  // Blank settings reach the server as empty values, which it reads as unset.
  assert.equal(config.env.SNOWLUMA_MCP_MODE, "");
  assert.equal(config.env.SNOWLUMA_MCP_ENDPOINT, "");
  const server = start(t, config, dir);
  await server.initialize();
  const tools = await server.toolNames();
  assert.deepEqual(tools.map((tool) => tool.name), DOCS_TOOLS);
  const info = await server.request("tools/call", { name: "get_runtime_info", arguments: {} });
  assert.equal(info.result.structuredContent.result.mode, "docs");
});

test("user settings reach the server: write mode, endpoint and token; the tool list is the manifest's", async (t) => {
  const { dir, extensionPath, manifest } = await unpacked(t);
  const seen = [];
  const snowluma = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      seen.push({ authorization: req.headers.authorization, body: JSON.parse(body) });
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ status: "ok", retcode: 0, data: { online: true, good: true } }));
    });
  });
  await new Promise((done) => snowluma.listen(0, "127.0.0.1", done));
  t.after(() => snowluma.close());
  const downloads = join(dir, "downloads");
  mkdirSync(downloads, { mode: 0o700 });
  const config = await resolveConfig(manifest, extensionPath, {
    mode: "write",
    endpoint: `http://127.0.0.1:${snowluma.address().port}/`,
    token: TOKEN,
    download_dir: downloads,
    events_url: "ws://127.0.0.1:9/",
  });
  const server = start(t, config, dir);
  await server.initialize();
  const tools = await server.toolNames();
  // The manifest was written from this binary's own listing with every bundle setting on.
  assert.deepEqual(
    tools.map((tool) => ({ name: tool.name, description: tool.description })),
    manifest.tools,
  );
  const reply = await server.request("tools/call", { name: "query_action", arguments: { action: "get_status" } });
  assert.equal(reply.result.isError, false, JSON.stringify(reply));
  assert.equal(reply.result.structuredContent.result.retcode, 0);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].authorization, `Bearer ${TOKEN}`);
  assert.equal(seen[0].body.action, "get_status");
  assert.doesNotMatch(server.stderr(), new RegExp(TOKEN));
});
