// Background transfers with a third-party client: the TypeScript SDK v2
// (@modelcontextprotocol/client) pinned to 2026-07-28, declaring the tasks extension, against
// the built snowluma-mcp and the fake SnowLuma example. Start -> poll tasks/get -> result, the
// saved result checked against the advertised outputSchema, cancel, and list_tasks. The core
// SDK cannot decode a `resultType: "task"` answer itself (the first test finds the handle via
// list_tasks); the tasks extension's own requester, @modelcontextprotocol/ext-tasks, does the
// whole start -> poll -> result exchange in the second test.
// Binaries: SNOWLUMA_MCP_BIN and SNOWLUMA_MCP_FAKE_BIN (defaults under target/debug).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';

const REPO = resolve(import.meta.dirname, '..', '..');
const BIN = process.env.SNOWLUMA_MCP_BIN || join(REPO, 'target', 'debug', 'snowluma-mcp');
const FAKE_BIN =
  process.env.SNOWLUMA_MCP_FAKE_BIN || join(REPO, 'target', 'debug', 'examples', 'fake_snowluma');
const TASKS = 'io.modelcontextprotocol/tasks';
const FILE_SIZE = 400000;

const work = mkdtempSync(join(tmpdir(), 'snowluma-ts-tasks-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Starts the fake SnowLuma with one generated file; resolves with its URL and process. */
async function startFake() {
  const proc = spawn(FAKE_BIN, ['--port', '0', '--generated', `ts.bin:${FILE_SIZE}:9`], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const line = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('fake SnowLuma did not start in 10 s')), 10000);
    createInterface({ input: proc.stdout }).once('line', (l) => {
      clearTimeout(timer);
      ok(l);
    });
  });
  const url = /^FAKE_SNOWLUMA_URL=(http:\/\/127\.0\.0\.1:\d+\/)$/.exec(line)?.[1];
  assert.ok(url, `unexpected first line from the fake: ${line}`);
  return { url, stop: () => proc.stdin.end() };
}

async function connect(url, name, onTransport = () => {}) {
  const transport = new StdioClientTransport({
    command: BIN,
    args: [],
    env: {
      PATH: process.env.PATH ?? '',
      SNOWLUMA_MCP_MODE: 'write',
      SNOWLUMA_MCP_ENDPOINT: url,
      SNOWLUMA_MCP_DOWNLOAD_DIR: join(work, `${name}-downloads`),
      SNOWLUMA_MCP_TASK_DIR: join(work, `${name}-tasks`),
    },
    stderr: 'ignore',
  });
  const client = new Client(
    { name: 'ts-tasks-test', version: '1.0.0' },
    {
      capabilities: { extensions: { [TASKS]: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  await client.connect(transport);
  onTransport(transport);
  return client;
}

const anyResult = z.object({}).passthrough();

/** tools/call whose answer may be a task handle: sent as a plain request so the SDK keeps it. */
const callRaw = (client, name, args) =>
  client.request({ method: 'tools/call', params: { name, arguments: args } }, anyResult);
const getTask = (client, taskId) =>
  client.request({ method: 'tasks/get', params: { taskId } }, anyResult);

async function pollUntilDone(client, taskId) {
  for (let i = 0; i < 300; i++) {
    const task = await getTask(client, taskId);
    if (task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`task ${taskId} still working after 300 polls`);
}

function validator(tools, name) {
  const tool = tools.find((t) => t.name === name);
  assert.ok(tool, `${name} is listed`);
  return new Ajv2020({ strict: false, logger: false }).compile(tool.outputSchema);
}

test('a modern client declaring tasks is offered them; the core SDK refuses a task handle', async () => {
  const fake = await startFake();
  const client = await connect(fake.url, 'main');
  try {
    assert.ok(client.getServerCapabilities()?.extensions?.[TASKS], 'discover advertises tasks');
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('invoke_action_background'));
    assert.ok(names.includes('list_tasks'));

    // The server answers with `resultType: "task"`; the core SDK (2.4.0) has no decoder for it
    // (that lives in @modelcontextprotocol/ext-tasks), so it reports exactly that.
    await assert.rejects(
      callRaw(client, 'invoke_action_background', {
        action: 'download_file_stream',
        params: { file: '/tmp/snowluma-stream/download/ts.bin', chunk_size: 65536 },
      }),
      (err) => {
        assert.equal(err.code, 'UNSUPPORTED_RESULT_TYPE');
        assert.match(err.message, /'task'/);
        return true;
      },
    );

    // The task the call created is durable and visible, and finishes.
    const listed = await client.callTool({ name: 'list_tasks', arguments: { limit: 1 } });
    const page = listed.structuredContent;
    const check = validator(tools, 'list_tasks');
    assert.ok(check(page), JSON.stringify(check.errors));
    assert.equal(page.result.tasks.length, 1);
    const taskId = page.result.tasks[0].taskId;
    assert.equal(page.result.tasks[0].action, 'download_file_stream');

    const done = await pollUntilDone(client, taskId);
    assert.equal(done.status, 'completed');
    assert.equal(done.result.isError, false);
    const saved = done.result.structuredContent;
    const checkSaved = validator(tools, 'invoke_action_background');
    assert.ok(checkSaved(saved), JSON.stringify(checkSaved.errors));
    assert.equal(saved.result.size, FILE_SIZE);
    assert.deepEqual(JSON.parse(done.result.content[0].text), saved);

    // Cancelling a finished task is acknowledged and changes nothing.
    const ack = await client.request({ method: 'tasks/cancel', params: { taskId } }, anyResult);
    // The SDK strips `resultType` from decoded results; the ack is an otherwise empty object.
    assert.deepEqual(Object.keys(ack).filter((k) => k !== '_meta'), []);
    assert.equal((await getTask(client, taskId)).status, 'completed');

    // An unknown task is -32602.
    await assert.rejects(getTask(client, 'ffffffffffffffffffffffffffffffff'), (err) => {
      assert.equal(err.code, -32602);
      return true;
    });
  } finally {
    await client.close();
    fake.stop();
  }
});

/**
 * ext-tasks needs a raw request path for 2026-07-28 task traffic (the core SDK's codecs reject
 * `resultType: "task"`): requests go out on the same stdio transport with ids of their own, and
 * their responses are taken off the transport before the SDK client sees them.
 */
function rawDispatcher(transport) {
  const pending = new Map();
  let next = 0;
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const waiting = typeof message?.id === 'string' ? pending.get(message.id) : undefined;
    if (waiting) {
      pending.delete(message.id);
      waiting(message);
      return;
    }
    deliver?.(message, extra);
  };
  return async (request) => {
    const id = `ext-tasks-${++next}`;
    const response = await new Promise((resolve, reject) => {
      pending.set(id, resolve);
      transport.send({ ...request, jsonrpc: '2.0', id }).catch(reject);
    });
    return response.error
      ? { kind: 'error', error: response.error }
      : { kind: 'result', result: response.result };
  };
}

test('the ext-tasks requester runs start -> poll -> result against the server', async () => {
  const fake = await startFake();
  let rawDispatch;
  const client = await connect(fake.url, 'ext', (transport) => {
    rawDispatch = rawDispatcher(transport);
  });
  const session = createTaskSessionFromClient(client, {
    endpointId: 'snowluma-ts-tasks',
    rawDispatch,
    v2RequestFraming: {
      protocolVersion: '2026-07-28',
      clientInfo: { name: 'ts-tasks-test', version: '1.0.0' },
      clientCapabilities: { extensions: { [TASKS]: {} } },
    },
  });
  try {
    const { tools } = await client.listTools();
    const execution = await session.callTool('invoke_action_background', {
      action: 'download_file_stream',
      params: { file: '/tmp/snowluma-stream/download/ts.bin', chunk_size: 65536 },
    });
    assert.equal(execution.kind, 'task', 'the server answered with a task handle');
    const taskId = execution.handle.taskId;
    const seen = [];
    const { outcome } = await execution.settle({
      onEvent: (event) => {
        if (event.type === 'task') seen.push(event.task.status);
      },
    });
    assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
    const result = resultFromTaskOutcome(outcome);
    assert.equal(result.isError, false);
    const saved = result.structuredContent;
    const check = validator(tools, 'invoke_action_background');
    assert.ok(check(saved), JSON.stringify(check.errors));
    assert.equal(saved.diagnostics.outcome, 'success');
    assert.equal(saved.result.size, FILE_SIZE);
    assert.deepEqual(JSON.parse(result.content[0].text), saved);

    // The same task, polled again by id, still says completed; the inventory lists it.
    assert.equal((await getTask(client, taskId)).status, 'completed');
    // Every state the requester observed on the way is one the server may report.
    assert.ok(seen.every((s) => s === 'working' || s === 'completed'), seen.join());
    const listed = await client.callTool({ name: 'list_tasks', arguments: {} });
    const checkList = validator(tools, 'list_tasks');
    assert.ok(checkList(listed.structuredContent), JSON.stringify(checkList.errors));
    const entry = listed.structuredContent.result.tasks.find((t) => t.taskId === taskId);
    assert.equal(entry?.status, 'completed');
  } finally {
    await session.close();
    await client.close();
    fake.stop();
  }
});
