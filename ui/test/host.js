// A minimal MCP Apps host for the browser tests: it plays the host side of the ext-apps
// postMessage protocol (ui/initialize, tool input and result notifications, tools/call) and
// records everything the panel sends so the tests can assert on it.
"use strict";

window.hostLog = { requests: [], notifications: [], toolCalls: [], stray: [] };

let pendingToolCalls = [];
const pendingPings = new Map();
let nextPingId = 1;
let config;

function reply(frame, id, result) {
  frame.contentWindow.postMessage({ jsonrpc: "2.0", id, result }, "*");
}

function notify(frame, method, params) {
  frame.contentWindow.postMessage({ jsonrpc: "2.0", method, params }, "*");
}

// config: { panelUrl, serverTools, arguments, result, holdToolCalls, toolCallResult }
window.startHost = (hostConfig) => {
  config = hostConfig;
  const frame = document.getElementById("panel");
  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") {
      window.hostLog.stray.push(message);
      return;
    }
    if (message.method === undefined && pendingPings.has(message.id)) {
      pendingPings.get(message.id)();
      pendingPings.delete(message.id);
      return;
    }
    if (message.id === undefined) {
      window.hostLog.notifications.push(message.method);
      if (message.method === "ui/notifications/initialized") {
        notify(frame, "ui/notifications/tool-input", { arguments: config.arguments });
        // Exactly what snowluma-mcp renders: {result, diagnostics} and the same JSON as text.
        const structuredContent = { result: config.result, diagnostics: { outcome: "success" } };
        notify(frame, "ui/notifications/tool-result", {
          content: [{ type: "text", text: JSON.stringify(structuredContent) }],
          structuredContent,
        });
      }
      return;
    }
    window.hostLog.requests.push(message.method);
    if (message.method === "ui/initialize") {
      reply(frame, message.id, {
        protocolVersion: message.params.protocolVersion,
        hostInfo: { name: "snowluma-test-host", version: "0.0.0" },
        hostCapabilities: config.serverTools ? { serverTools: {} } : {},
        hostContext: {},
      });
    } else if (message.method === "tools/call") {
      window.hostLog.toolCalls.push(message.params);
      const answer = () => reply(frame, message.id, config.toolCallResult);
      if (config.holdToolCalls) pendingToolCalls.push(answer);
      else answer();
    } else {
      reply(frame, message.id, {});
    }
  });
  frame.src = config.panelUrl;
};

// Resolves once the panel answers a ping. The panel's messages arrive in order, so anything
// it posted before the answer (say, a tools/call from an earlier click) is recorded by then.
window.pingPanel = () =>
  new Promise((resolve) => {
    const id = `ping-${nextPingId++}`;
    pendingPings.set(id, resolve);
    document.getElementById("panel").contentWindow.postMessage(
      { jsonrpc: "2.0", id, method: "ping" },
      "*",
    );
  });

window.releaseToolCalls = () => {
  const answers = pendingToolCalls;
  pendingToolCalls = [];
  for (const answer of answers) answer();
};
