// Browser tests of the preview panel: the built dist/preview-message.html runs in headless
// Chromium inside test/host.html, which plays the MCP Apps host. The preview results come
// from test/fixtures/, which a Rust unit test keeps equal to what the server builds.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const uiDir = new URL("..", import.meta.url).pathname;
const shotsDir = "/tmp/preview-shots";
const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// Every wait is bounded; a broken panel fails instead of hanging.
const WAIT_MS = 15_000;

const files = {
  "/host.html": ["test/host.html", "text/html; charset=utf-8"],
  "/host.js": ["test/host.js", "text/javascript; charset=utf-8"],
  "/preview-message.html": ["dist/preview-message.html", "text/html; charset=utf-8"],
};

// invoke_action results as snowluma-mcp renders them: {result, diagnostics} plus the same JSON
// as text (tests/preview.rs checks the server's real answers have this shape).
function toolResult(structuredContent, isError = false) {
  return { isError, content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
}
const ackResult = toolResult({
  result: { status: "ok", retcode: 0, data: { message_id: -42 } },
  diagnostics: { outcome: "success" },
});
const onebotFailure = toolResult({
  result: { status: "failed", retcode: 100, data: null, wording: "group not found" },
  diagnostics: {
    outcome: "failed",
    kind: "onebot_failure",
    message: "send_group_msg failed: retcode 100 (group not found)",
  },
});

let server;
let origin;
let context;
let profileDir;

async function fixture(name) {
  return JSON.parse(await readFile(join(uiDir, "test/fixtures", `${name}.json`), "utf8"));
}

before(async () => {
  server = createServer(async (request, response) => {
    const entry = files[new URL(request.url, "http://127.0.0.1").pathname];
    if (!entry) {
      response.writeHead(404).end();
      return;
    }
    const body = await readFile(join(uiDir, entry[0]));
    response.writeHead(200, { "content-type": entry[1] }).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  await mkdir(shotsDir, { recursive: true });
  profileDir = await mkdtemp(join(tmpdir(), "preview-panel-profile-"));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: chromiumPath,
    headless: true,
    timeout: WAIT_MS,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  context.setDefaultTimeout(WAIT_MS);
});

after(async () => {
  await context?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
});

// Opens the host page, starts the panel with one preview result and waits until the panel
// shows the draft and has finished the handshake.
async function openPanel({
  preview,
  serverTools = true,
  holdToolCalls = false,
  toolCallResult = ackResult,
}) {
  const page = await context.newPage();
  const requests = [];
  const dialogs = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(`${origin}/host.html`);
  await page.evaluate((config) => window.startHost(config), {
    panelUrl: `${origin}/preview-message.html`,
    serverTools,
    holdToolCalls,
    arguments: preview.arguments,
    result: preview.result,
    toolCallResult,
  });
  await page.waitForFunction(() => window.hostLog.notifications.includes("ui/notifications/initialized"));
  const frame = page.frame({ url: /preview-message\.html$/ });
  assert.ok(frame, "the panel frame exists");
  await frame.waitForFunction(
    () =>
      document.documentElement.dataset.connected === "true" &&
      !document.getElementById("draft").hidden,
  );
  // Reads the host's record after a ping round trip, so nothing the panel posted is missed.
  const hostLog = async () => {
    await page.evaluate(() => window.pingPanel());
    return page.evaluate(() => window.hostLog);
  };
  return { page, frame, requests, dialogs, hostLog };
}

// The tools/call params carry the tool name and the exact arguments; the Apps client adds
// only a progress token under _meta.
function assertInvokeAction(call, expected) {
  assert.equal(call.name, "invoke_action");
  assert.deepEqual(call.arguments, expected);
  assert.deepEqual(
    Object.keys(call).filter((key) => key !== "_meta"),
    ["name", "arguments"],
  );
}

async function panelText(frame, id) {
  return frame.locator(`#${id}`).textContent();
}

test("renders the draft and sends exactly one invoke_action, only on click", async () => {
  const preview = await fixture("group-reply");
  const { page, frame, requests, hostLog } = await openPanel({ preview, holdToolCalls: true });

  assert.equal(await panelText(frame, "target"), "Group 20001");
  assert.equal(await panelText(frame, "reply-to"), "message -123456");
  assert.equal(await panelText(frame, "text"), "Hello from the preview test");
  assert.equal(await frame.locator("#send").isEnabled(), true);

  // Loading sent nothing and fetched nothing beyond the host page and the panel itself.
  const loaded = await hostLog();
  assert.deepEqual(loaded.toolCalls, []);
  assert.deepEqual(loaded.requests, ["ui/initialize"]);
  assert.deepEqual(
    [...requests].sort(),
    [`${origin}/host.html`, `${origin}/host.js`, `${origin}/preview-message.html`],
  );
  await page.screenshot({ path: join(shotsDir, "ready.png") });

  // A double click while the host holds the call: the button locks on the first click.
  await frame.locator("#send").dblclick();
  await page.waitForFunction(() => window.hostLog.toolCalls.length > 0);
  assert.equal(await frame.locator("#send").isDisabled(), true);
  // Even a click event forced onto the disabled button must not send again.
  await frame.locator("#send").dispatchEvent("click");
  await page.evaluate(() => window.releaseToolCalls());
  await frame.waitForFunction(() => document.getElementById("status").textContent.includes("acknowledged"));

  const sent = await hostLog();
  assert.equal(sent.toolCalls.length, 1, "exactly one tools/call");
  assertInvokeAction(sent.toolCalls[0], preview.result.invoke_action);
  assert.match(await panelText(frame, "status"), /not proof of delivery/);
  assert.equal(await frame.locator("#send").isDisabled(), true);
  await page.screenshot({ path: join(shotsDir, "sent.png") });

  // One more click after the outcome: still nothing.
  await frame.locator("#send").dispatchEvent("click");
  await page.evaluate(() => window.releaseToolCalls());
  assert.equal((await hostLog()).toolCalls.length, 1);
  await page.close();
});

test("a failed send is reported, never retried and stays locked", async () => {
  const preview = await fixture("group-reply");
  const refusal = toolResult(
    {
      result: null,
      diagnostics: {
        outcome: "failed",
        kind: "mode",
        message: "write mode is required to send messages",
        next_step: "set SNOWLUMA_MCP_MODE=write",
      },
    },
    true,
  );
  const { page, frame, hostLog } = await openPanel({ preview, toolCallResult: refusal });
  await frame.locator("#send").click();
  await frame.waitForFunction(() => document.getElementById("status").textContent.includes("failed"));
  const status = await panelText(frame, "status");
  assert.match(status, /write mode is required to send messages/);
  assert.match(status, /not retried/);
  assert.equal(await frame.locator("#send").isDisabled(), true);
  await frame.locator("#send").dispatchEvent("click");
  await page.screenshot({ path: join(shotsDir, "failed.png") });
  assert.equal((await hostLog()).toolCalls.length, 1);
  await page.close();
});

test("a OneBot failure (not a tool error) is reported as failed, not acknowledged", async () => {
  const preview = await fixture("group-reply");
  const { page, frame, hostLog } = await openPanel({ preview, toolCallResult: onebotFailure });
  await frame.locator("#send").click();
  await frame.waitForFunction(() => document.getElementById("status").textContent.includes("failed"));
  const status = await panelText(frame, "status");
  assert.match(status, /retcode 100/);
  assert.doesNotMatch(status, /acknowledged/);
  assert.equal(await frame.locator("#send").isDisabled(), true);
  assert.equal((await hostLog()).toolCalls.length, 1);
  await page.close();
});

test("sending stays disabled when the server cannot send", async () => {
  const preview = await fixture("read-mode");
  const { page, frame, hostLog } = await openPanel({ preview });
  assert.equal(await panelText(frame, "text"), "Draft only");
  assert.equal(await frame.locator("#send").isDisabled(), true);
  assert.match(await panelText(frame, "send-note"), /not in write mode/);
  await frame.locator("#send").dispatchEvent("click");
  await page.screenshot({ path: join(shotsDir, "disabled.png") });
  assert.deepEqual((await hostLog()).toolCalls, []);
  await page.close();
});

test("sending stays disabled when the host does not offer server tools", async () => {
  const preview = await fixture("group-reply");
  const { page, frame, hostLog } = await openPanel({ preview, serverTools: false });
  assert.equal(preview.result.can_send, true);
  assert.equal(await frame.locator("#send").isDisabled(), true);
  assert.match(await panelText(frame, "send-note"), /does not let panels call server tools/);
  await frame.locator("#send").dispatchEvent("click");
  await page.screenshot({ path: join(shotsDir, "disabled-no-server-tools.png") });
  assert.deepEqual((await hostLog()).toolCalls, []);
  await page.close();
});

test("hostile text stays literal and inert", async () => {
  const preview = await fixture("hostile");
  const { page, frame, requests, dialogs, hostLog } = await openPanel({ preview });
  const hostile = preview.arguments.text;
  assert.match(hostile, /<script>alert\(1\)<\/script>/);
  assert.match(hostile, /onerror=/);
  assert.match(hostile, /\[CQ:at,qq=all\]/);

  assert.equal(await panelText(frame, "text"), hostile);
  assert.equal(await frame.locator("#text").evaluate((node) => node.children.length), 0);
  assert.equal(await frame.locator("img, #text script").count(), 0);
  await page.screenshot({ path: join(shotsDir, "hostile.png") });

  // A click sends the text as one literal text segment, exactly as the server built it.
  await frame.locator("#send").click();
  await frame.waitForFunction(() => document.getElementById("status").textContent.includes("acknowledged"));
  const log = await hostLog();
  assert.equal(log.toolCalls.length, 1);
  assertInvokeAction(log.toolCalls[0], preview.result.invoke_action);
  assert.deepEqual(log.toolCalls[0].arguments.params.message, [
    { type: "text", data: { text: hostile } },
  ]);
  assert.deepEqual(log.stray, [], "no injected script posted anything");
  assert.deepEqual(dialogs, [], "no injected script opened a dialog");
  assert.ok(!requests.some((url) => url.endsWith("/x")), "the injected image was never fetched");
  await page.close();
});
