// The TypeScript SDK v2 (@modelcontextprotocol/client) as a remote client of the Streamable
// HTTP transport (`--transport http`), in both generations (the default legacy session, and
// pinned 2026-07-28): the docs surface, an execution call with progress against the fake
// SnowLuma, an input round (elicitation/create in legacy, input_required in 2026-07-28), the
// bearer-token matrix, and DELETE ending a session. Every tools/call result is validated
// against the advertised outputSchema.
// Binaries: SNOWLUMA_MCP_BIN and SNOWLUMA_MCP_FAKE_BIN (defaults under target/debug).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Ajv2020 } from 'ajv/dist/2020.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const BIN = process.env.SNOWLUMA_MCP_BIN || join(REPO, 'target', 'debug', 'snowluma-mcp');
const FAKE_BIN =
  process.env.SNOWLUMA_MCP_FAKE_BIN || join(REPO, 'target', 'debug', 'examples', 'fake_snowluma');
const TOKEN = `ts-http-${process.pid}-${Date.now()}`;
const FILE_SIZE = 2 * 1024 * 1024;

const work = mkdtempSync(join(tmpdir(), 'snowluma-ts-http-'));
after(() => rmSync(work, { recursive: true, force: true }));

function firstLine(stream, pattern, what) {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${what} did not start in 20 s`)), 20000);
    const lines = createInterface({ input: stream });
    lines.on('line', (line) => {
      const match = pattern.exec(line);
      if (match) {
        clearTimeout(timer);
        ok(match[1]);
      }
    });
  });
}

async function startFake() {
  const proc = spawn(FAKE_BIN, ['--port', '0', '--generated', `tsh.bin:${FILE_SIZE}:5`], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const url = await firstLine(proc.stdout, /^FAKE_SNOWLUMA_URL=(http:\/\/127\.0\.0\.1:\d+\/)$/, 'fake');
  return { url, stop: () => proc.stdin.end() };
}

/** snowluma-mcp over HTTP on a free loopback port; `log` collects its stderr. */
async function startServer(fakeUrl) {
  const proc = spawn(BIN, ['--transport', 'http', '--listen', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      SNOWLUMA_MCP_HTTP_TOKEN: TOKEN,
      SNOWLUMA_MCP_MODE: 'write',
      SNOWLUMA_MCP_ENDPOINT: fakeUrl,
      SNOWLUMA_MCP_DOWNLOAD_DIR: join(work, 'downloads'),
      SNOWLUMA_MCP_LOG: 'info,rmcp=warn',
    },
  });
  const server = { log: '', stop: () => proc.kill('SIGTERM') };
  proc.stderr.on('data', (chunk) => {
    server.log += chunk.toString();
  });
  const port = await firstLine(proc.stderr, /serving MCP over HTTP at http:\/\/127\.0\.0\.1:(\d+)\/mcp/, 'server');
  server.url = `http://127.0.0.1:${port}/mcp`;
  return server;
}

async function connect(url, modern, token = TOKEN, prompts = []) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client(
    { name: 'ts-http-test', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      ...(modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
    },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    prompts.push(request.params);
    return { action: 'accept', content: { params_json: '{"message":"hello from ts"}' } };
  });
  await client.connect(transport);
  return { client, transport };
}

/** tools/call validated against the outputSchema the server listed for this client. */
async function call(client, name, args, options) {
  const result = await client.callTool({ name, arguments: args }, options);
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === name);
  assert.ok(tool?.outputSchema, `${name} is listed with an outputSchema`);
  const validate = new Ajv2020({ strict: false, logger: false }).compile(tool.outputSchema);
  assert.ok(validate(result.structuredContent), `${name}: ${JSON.stringify(validate.errors)}`);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

const fake = await startFake();
const server = await startServer(fake.url);
after(() => {
  server.stop();
  fake.stop();
});

for (const modern of [false, true]) {
  const era = modern ? '2026-07-28' : 'legacy';
  test(`${era}: docs, execution with progress and an input round over HTTP`, async () => {
    const prompts = [];
    const { client } = await connect(server.url, modern, TOKEN, prompts);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ['search_actions', 'get_action', 'query_action', 'invoke_action']) {
        assert.ok(names.includes(name), `${name} listed`);
      }
      const found = await call(client, 'search_actions', { query: 'mute member', match: 'keywords' });
      assert.equal(found.diagnostics.outcome, 'success');
      const login = await call(client, 'query_action', { action: 'get_login_info' });
      assert.equal(login.result.data.user_id, 10001);
      const progress = [];
      const got = await call(
        client,
        'invoke_action',
        {
          action: 'download_file_stream',
          params: { file: '/tmp/snowluma-stream/download/tsh.bin', chunk_size: 65536 },
        },
        { onprogress: (p) => progress.push(p) },
      );
      assert.equal(got.result.size, FILE_SIZE);
      assert.ok(progress.length > 0, 'progress arrived over HTTP');
      assert.equal(progress.at(-1).progress, FILE_SIZE);
      const sent = await call(client, 'invoke_action_with_input', {
        action: 'send_group_msg',
        params: { group_id: 20001 },
      });
      assert.equal(sent.diagnostics.outcome, 'success', JSON.stringify(sent));
      assert.equal(prompts.length, 1);
    } finally {
      await client.close();
    }
  });

  test(`${era}: a missing or wrong token is refused`, async () => {
    for (const token of [null, 'wrong-token']) {
      await assert.rejects(async () => {
        const { client } = await connect(server.url, modern, token);
        await client.listTools();
      });
    }
  });
}

test('legacy: terminateSession sends DELETE and the session id is then unknown', async () => {
  const { client, transport } = await connect(server.url, false);
  await client.listTools();
  const session = transport.sessionId;
  assert.ok(session, 'a legacy connection has a session id');
  await transport.terminateSession();
  const reply = await fetch(server.url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${TOKEN}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': session,
      'MCP-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  assert.equal(reply.status, 404);
  await client.close().catch(() => {});
  assert.ok(!server.log.includes(TOKEN), 'the token was logged');
});
