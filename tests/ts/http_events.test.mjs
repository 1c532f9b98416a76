// An event subscription over the Streamable HTTP transport (`--transport http`) with the
// TypeScript SDK v2 (@modelcontextprotocol/client), in both generations (the default legacy
// session, and pinned 2026-07-28), against a fake of SnowLuma's OneBot WebSocket adapter
// written here with `ws` (a port of tests/python/fake_event_socket.py and
// tests/support/fake_snowluma_ws.rs). subscribe_events with a group filter -> the change
// notification (legacy resources/subscribe, modern subscriptions/listen) -> read_events keeps
// the matching group message and drops the other group's -> unsubscribe_events -> the uri is
// refused and the shared event socket is closed. Every tools/call result is validated against
// the advertised outputSchema.
// Binaries: SNOWLUMA_MCP_BIN and SNOWLUMA_MCP_FAKE_BIN (defaults under target/debug).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { WebSocketServer } from 'ws';

const REPO = resolve(import.meta.dirname, '..', '..');
const BIN = process.env.SNOWLUMA_MCP_BIN || join(REPO, 'target', 'debug', 'snowluma-mcp');
const FAKE_BIN =
  process.env.SNOWLUMA_MCP_FAKE_BIN || join(REPO, 'target', 'debug', 'examples', 'fake_snowluma');
/** The MCP server's own bearer token (HTTP transport). */
const TOKEN = `ts-http-events-${process.pid}-${Date.now()}`;
/** SnowLuma's access token: the HTTP API and the WebSocket adapter both check it. */
const SNOWLUMA_TOKEN = `ts-snowluma-${process.pid}-${Date.now()}`;
const SELF_ID = 10001;
const GROUP_ID = 20001;
const OTHER_GROUP_ID = 20002;
const TEST_TIMEOUT_MS = 60000;
const CALL_TIMEOUT_MS = 20000;

/** Rejects after `ms` unless `promise` settles first. */
function within(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, fail) => {
      timer = setTimeout(() => fail(new Error(`${what} did not happen within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Polls `check` every 20 ms until it is true or `ms` pass. */
async function until(check, ms, what) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((ok) => setTimeout(ok, 20));
  }
}

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

/** A child process stopped with SIGTERM, SIGKILL if it lingers; resolves once it exited. */
function stopper(proc, gentle) {
  return async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    gentle();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
}

const now = () => Math.floor(Date.now() / 1000);

function lifecycle(subType) {
  return {
    time: now(),
    self_id: SELF_ID,
    post_type: 'meta_event',
    meta_event_type: 'lifecycle',
    sub_type: subType,
    status: { online: true, good: true },
  };
}

function heartbeat() {
  return {
    time: now(),
    self_id: SELF_ID,
    post_type: 'meta_event',
    meta_event_type: 'heartbeat',
    status: { online: true, good: true },
    interval: 30000,
  };
}

/** A group message event shaped like SnowLuma's converter output (array format). */
function groupMessage(groupId, userId, text) {
  return {
    time: now(),
    self_id: SELF_ID,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: -123456,
    message_seq: 7,
    group_id: groupId,
    user_id: userId,
    anonymous: null,
    message: [{ type: 'text', data: { text } }],
    raw_message: text,
    font: 0,
    sender: { user_id: userId, nickname: 'tester', card: '', role: 'member', sex: 'unknown', age: 0 },
  };
}

/**
 * A fake SnowLuma OneBot WebSocket adapter on 127.0.0.1:0, path "/": another path gets HTTP 400;
 * the token is checked after the 101 (a wrong one gets close 1008 "invalid access token"); an
 * accepted client gets lifecycle connect, lifecycle enable and a heartbeat, then one heartbeat
 * every 30 s. It records each handshake's Authorization header and the code of every close,
 * and `push` sends an event to every open connection.
 */
async function startEventSocket(token) {
  const http = createServer((_, res) => res.writeHead(426).end());
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const fake = { authorizations: [], open: new Set(), closeCodes: [], rawSockets: new Set() };
  http.on('connection', (socket) => {
    fake.rawSockets.add(socket);
    socket.on('close', () => fake.rawSockets.delete(socket));
  });
  http.on('upgrade', (request, socket, head) => {
    if (new URL(request.url, 'http://x').pathname !== '/') {
      socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const authorization = request.headers.authorization ?? null;
      fake.authorizations.push(authorization);
      if (token && authorization !== `Bearer ${token}`) {
        ws.close(1008, 'invalid access token');
        return;
      }
      fake.open.add(ws);
      for (const frame of [lifecycle('connect'), lifecycle('enable'), heartbeat()]) {
        ws.send(JSON.stringify(frame));
      }
      const beat = setInterval(() => ws.send(JSON.stringify(heartbeat())), 30000);
      ws.on('close', (code) => {
        clearInterval(beat);
        fake.open.delete(ws);
        fake.closeCodes.push(code);
      });
      ws.on('error', () => {});
    });
  });
  http.listen(0, '127.0.0.1');
  await within(once(http, 'listening'), 5000, 'the fake event socket listening');
  fake.url = `ws://127.0.0.1:${http.address().port}/`;
  fake.push = (event) => {
    const text = JSON.stringify(event);
    for (const ws of fake.open) ws.send(text);
  };
  fake.close = async () => {
    for (const ws of fake.open) ws.terminate();
    wss.close();
    for (const socket of fake.rawSockets) socket.destroy();
    await new Promise((ok) => http.close(() => ok()));
  };
  return fake;
}

async function startFakeHttp() {
  const proc = spawn(FAKE_BIN, ['--port', '0', '--token', SNOWLUMA_TOKEN], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const stop = stopper(proc, () => proc.stdin.end());
  try {
    const url = await firstLine(proc.stdout, /^FAKE_SNOWLUMA_URL=(http:\/\/127\.0\.0\.1:\d+\/)$/, 'fake');
    return { url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** snowluma-mcp over HTTP on a free loopback port, read mode, live events configured. */
async function startServer(endpoint, eventsUrl) {
  const proc = spawn(BIN, ['--transport', 'http', '--listen', '127.0.0.1:0'], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '',
      SNOWLUMA_MCP_HTTP_TOKEN: TOKEN,
      SNOWLUMA_MCP_MODE: 'read',
      SNOWLUMA_MCP_ENDPOINT: endpoint,
      SNOWLUMA_MCP_TOKEN: SNOWLUMA_TOKEN,
      SNOWLUMA_MCP_EVENTS_URL: eventsUrl,
      SNOWLUMA_MCP_LOG: 'info,rmcp=warn',
    },
  });
  const server = { log: '', stop: stopper(proc, () => proc.kill('SIGTERM')) };
  proc.stderr.on('data', (chunk) => {
    server.log += chunk.toString();
  });
  try {
    const port = await firstLine(proc.stderr, /serving MCP over HTTP at http:\/\/127\.0\.0\.1:(\d+)\/mcp/, 'server');
    server.url = `http://127.0.0.1:${port}/mcp`;
    return server;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

async function connect(url, modern) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  const client = new Client(
    { name: 'ts-http-events-test', version: '1.0.0' },
    modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
  );
  await within(client.connect(transport), CALL_TIMEOUT_MS, 'connect');
  return { client, transport };
}

/** tools/call validated against the outputSchema the server listed for this client. */
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS });
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === name);
  assert.ok(tool?.outputSchema, `${name} is listed with an outputSchema`);
  const validate = new Ajv2020({ strict: false, logger: false }).compile(tool.outputSchema);
  assert.ok(validate(result.structuredContent), `${name}: ${JSON.stringify(validate.errors)}`);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return { ...result.structuredContent, isError: result.isError === true };
}

const events = await startEventSocket(SNOWLUMA_TOKEN);
let fakeHttp;
let server;
try {
  fakeHttp = await startFakeHttp();
  server = await startServer(fakeHttp.url, events.url);
} catch (error) {
  await fakeHttp?.stop();
  await events.close();
  throw error;
}
after(async () => {
  await server.stop();
  await fakeHttp.stop();
  await events.close();
});

for (const modern of [false, true]) {
  const era = modern ? '2026-07-28' : 'legacy';
  test(`${era}: subscribe_events, a filtered group message, read_events and unsubscribe over HTTP`, { timeout: TEST_TIMEOUT_MS }, async () => {
    const { client, transport } = await connect(server.url, modern);
    let subscription;
    try {
      if (modern) assert.equal(transport.sessionId, undefined, '2026-07-28 has no session');
      else assert.ok(transport.sessionId, 'a legacy connection has a session id');
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ['subscribe_events', 'read_events', 'unsubscribe_events']) {
        assert.ok(names.includes(name), `${name} listed`);
      }
      // The account to subscribe for, as a client would learn it: from SnowLuma's HTTP API.
      const login = await call(client, 'query_action', { action: 'get_login_info' });
      assert.equal(login.result.data.user_id, SELF_ID);

      const handshakes = events.authorizations.length;
      assert.equal(events.open.size, 0, 'no event socket before the first subscription');
      const sub = await call(client, 'subscribe_events', { self_id: SELF_ID, group_ids: [GROUP_ID] });
      assert.equal(sub.isError, false, JSON.stringify(sub));
      assert.equal(sub.diagnostics.outcome, 'success');
      const uri = sub.result.uri;
      assert.match(uri, /^snowluma:\/\/onebot\/events\/[0-9a-f]+$/);
      assert.deepEqual(events.authorizations.slice(handshakes), [`Bearer ${SNOWLUMA_TOKEN}`]);
      assert.equal(events.open.size, 1, 'one shared event socket');
      // A second resource without the group filter, on the same socket: it proves the other
      // group's message did arrive and that the filter alone dropped it from the first.
      const all = await call(client, 'subscribe_events', { self_id: SELF_ID, types: ['message'] });
      assert.equal(all.isError, false, JSON.stringify(all));
      assert.notEqual(all.result.uri, uri);
      assert.equal(events.authorizations.length, handshakes + 1, 'the second resource shares the socket');

      // The change notification: resources/subscribe (legacy) or subscriptions/listen.
      const updates = [];
      let updated;
      const gotUpdate = new Promise((ok) => {
        updated = ok;
      });
      client.setNotificationHandler('notifications/resources/updated', (notification) => {
        updates.push(notification.params.uri);
        updated();
      });
      if (modern) {
        subscription = await client.listen({ resourceSubscriptions: [uri] }, { timeout: CALL_TIMEOUT_MS });
        assert.deepEqual(subscription.honoredFilter.resourceSubscriptions, [uri]);
      } else {
        await client.subscribeResource({ uri }, { timeout: CALL_TIMEOUT_MS });
      }

      // The other group's message first: the socket is read in order, so once the matching
      // one is buffered the other was filtered already.
      events.push(groupMessage(OTHER_GROUP_ID, 30002, `other group ${era}`));
      events.push(groupMessage(GROUP_ID, 30001, `over http ${era}`));
      await within(gotUpdate, CALL_TIMEOUT_MS, 'notifications/resources/updated');
      assert.equal(updates[0], uri);

      const read = await call(client, 'read_events', { uri, wait_ms: 10000 });
      assert.equal(read.isError, false, JSON.stringify(read));
      const page = read.result;
      assert.deepEqual(
        page.entries.map((e) => e.event.raw_message),
        [`over http ${era}`],
        'only the subscribed group is kept',
      );
      const [entry] = page.entries;
      assert.equal(entry.event.group_id, GROUP_ID);
      assert.equal(entry.event.self_id, SELF_ID);
      assert.equal(entry.event.message_type, 'group');
      assert.equal(page.status.state, 'connected');
      assert.equal(page.gap, false);
      assert.equal(page.dropped_events, 0);

      const unfiltered = await call(client, 'read_events', { uri: all.result.uri, wait_ms: 10000 });
      assert.deepEqual(
        unfiltered.result.entries.map((e) => e.event.raw_message),
        [`other group ${era}`, `over http ${era}`],
        'the unfiltered resource keeps both, in order',
      );

      // Nothing new after the cursor: a short wait comes back empty.
      const empty = await call(client, 'read_events', { uri, after: page.next_cursor, wait_ms: 200 });
      assert.deepEqual(empty.result.entries, []);

      if (modern) {
        await subscription.close();
        assert.equal(await within(subscription.closed, 5000, 'the listen stream closing'), 'local');
        subscription = undefined;
      }
      const released = await call(client, 'unsubscribe_events', { uri });
      assert.equal(released.isError, false, JSON.stringify(released));
      assert.deepEqual(released.result, { released: uri });

      assert.equal(events.open.size, 1, 'the socket stays open while a resource remains');
      const refused = await call(client, 'read_events', { uri, wait_ms: 0 });
      assert.equal(refused.isError, true, `a released uri is refused: ${JSON.stringify(refused)}`);
      assert.equal(refused.diagnostics.kind, 'unknown_resource', JSON.stringify(refused));
      const again = await call(client, 'unsubscribe_events', { uri });
      assert.equal(again.isError, true, 'a second release is refused');

      const closes = events.closeCodes.length;
      const last = await call(client, 'unsubscribe_events', { uri: all.result.uri });
      assert.equal(last.isError, false, JSON.stringify(last));
      // Releasing the last resource closes the shared socket with a close frame.
      await until(() => events.open.size === 0, 5000, 'the event socket closing');
      assert.equal(events.closeCodes.length, closes + 1);
      assert.notEqual(events.closeCodes.at(-1), 1006, 'closed with a close frame, not dropped');
    } finally {
      await subscription?.close().catch(() => {});
      await client.close().catch(() => {});
    }
    assert.ok(!server.log.includes(TOKEN), 'the HTTP token was logged');
    assert.ok(!server.log.includes(SNOWLUMA_TOKEN), 'the SnowLuma token was logged');
  });
}
