// The preview_message panel. It shows the draft the server built and, only after the user
// clicks Send, asks the host to call invoke_action with the draft's exact arguments. All
// external text goes through textContent, never innerHTML, and the panel never retries.
import { App } from "@modelcontextprotocol/ext-apps";

interface InvokeActionArgs {
  action: string;
  params: Record<string, unknown>;
}

interface MessagePreview {
  draft: string;
  message_type: "group" | "private";
  target_id: number;
  reply_to?: number;
  text: string;
  can_send: boolean;
  invoke_action: InvokeActionArgs;
}

type Tone = "info" | "warn" | "error";

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`panel template lacks #${id}`);
  return found as T;
}

const waiting = element("waiting");
const draftSection = element("draft");
const targetField = element("target");
const replyField = element("reply-to");
const textField = element("text");
const sendButton = element<HTMLButtonElement>("send");
const sendNote = element("send-note");
const statusLine = element("status");

let preview: MessagePreview | undefined;
let hostCanCallTools = false;
// Set on the first click and never cleared: one panel sends at most once.
let sendAttempted = false;

function setStatus(text: string, tone: Tone = "info"): void {
  statusLine.textContent = text;
  statusLine.dataset.tone = tone;
}

function asPreview(value: unknown): MessagePreview | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Partial<MessagePreview>;
  const invoke = v.invoke_action;
  if (
    (v.message_type !== "group" && v.message_type !== "private") ||
    typeof v.target_id !== "number" ||
    typeof v.text !== "string" ||
    typeof v.can_send !== "boolean" ||
    typeof invoke !== "object" ||
    invoke === null ||
    typeof invoke.action !== "string" ||
    typeof invoke.params !== "object" ||
    invoke.params === null
  ) {
    return undefined;
  }
  return v as MessagePreview;
}

// What every snowluma-mcp tool result carries beside `result`.
interface Diagnostics {
  outcome?: string;
  message?: string;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function diagnosticsOf(structured: unknown): Diagnostics {
  if (!isObject(structured) || !isObject(structured.diagnostics)) return {};
  const { outcome, message } = structured.diagnostics;
  return {
    outcome: typeof outcome === "string" ? outcome : undefined,
    message: typeof message === "string" ? message : undefined,
  };
}

// The draft inside the server's `{result, diagnostics}` tool result.
function previewOf(structured: unknown): MessagePreview | undefined {
  return isObject(structured) ? asPreview(structured.result) : undefined;
}

function firstText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  for (const block of content) {
    if (block && block.type === "text" && typeof block.text === "string") return block.text;
  }
  return "";
}

// Why sending is unavailable, or undefined when it is available.
function sendBlocker(): string | undefined {
  if (sendAttempted) return "This draft has already been sent once; it is never resent.";
  if (!preview) return "No draft yet.";
  if (!preview.can_send) {
    return "Sending is disabled: the server is not in write mode with a SnowLuma endpoint.";
  }
  if (!hostCanCallTools) {
    return "Sending is disabled: this host does not let panels call server tools.";
  }
  return undefined;
}

function refreshSendButton(): void {
  const blocker = sendBlocker();
  sendButton.disabled = blocker !== undefined;
  sendNote.textContent = blocker ?? "Sending calls invoke_action once, with the arguments above.";
}

function showDraft(next: MessagePreview): void {
  preview = next;
  const kind = next.message_type === "group" ? "Group" : "Private chat with user";
  targetField.textContent = `${kind} ${next.target_id}`;
  replyField.textContent = next.reply_to === undefined ? "(none)" : `message ${next.reply_to}`;
  textField.textContent = next.text;
  waiting.hidden = true;
  draftSection.hidden = false;
  refreshSendButton();
}

async function send(app: App): Promise<void> {
  if (sendBlocker() !== undefined || !preview) return;
  sendAttempted = true;
  refreshSendButton();
  setStatus("Sending…");
  const { action, params } = preview.invoke_action;
  try {
    const result = await app.callServerTool({
      name: "invoke_action",
      arguments: { action, params },
    });
    // The server answers {result, diagnostics}: a tool error (isError) sent nothing, and a
    // OneBot failure or an unconfirmed answer is data with diagnostics.outcome "failed" or
    // "unknown", so isError alone does not mean SnowLuma accepted the message.
    const diagnostics = diagnosticsOf(result.structuredContent);
    if (result.isError || diagnostics.outcome === "failed") {
      const detail = diagnostics.message ?? firstText(result.content);
      setStatus(
        `The send failed${detail ? `: ${detail}` : "."} It was not retried. Check the ` +
          "conversation in QQ before drafting again.",
        "error",
      );
    } else if (diagnostics.outcome === "success") {
      setStatus(
        "SnowLuma acknowledged the send. An acknowledgement is not proof of delivery: " +
          "check the conversation in QQ before drafting again.",
        "warn",
      );
    } else {
      const detail = diagnostics.message ? ` (${diagnostics.message})` : "";
      setStatus(
        `The outcome of the send is unknown${detail}. It was not retried. Check the ` +
          "conversation in QQ before drafting again.",
        "error",
      );
    }
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    setStatus(
      `The outcome of the send is unknown (${detail}). It was not retried. Check the ` +
        "conversation in QQ before drafting again.",
      "error",
    );
  }
}

const app = new App({ name: "snowluma-message-preview", version: "0.1.0" });

app.ontoolresult = (result) => {
  if (sendAttempted) return;
  const next = result.isError ? undefined : previewOf(result.structuredContent);
  if (next) {
    showDraft(next);
    setStatus("");
  } else {
    const detail = diagnosticsOf(result.structuredContent).message ?? firstText(result.content);
    setStatus(`No draft to show${detail ? `: ${detail}` : "."}`, "error");
  }
};

sendButton.addEventListener("click", () => {
  void send(app);
});

app
  .connect()
  .then(() => {
    hostCanCallTools = app.getHostCapabilities()?.serverTools !== undefined;
    refreshSendButton();
    // Lets tests (and anyone inspecting the panel) see that the handshake finished.
    document.documentElement.dataset.connected = "true";
  })
  .catch((error: unknown) => {
    const detail = error instanceof Error ? error.message : String(error);
    setStatus(`Could not connect to the host (${detail}). Sending is disabled.`, "error");
  });
