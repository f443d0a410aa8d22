// The TypeScript SDK's client (npm @modelcontextprotocol/sdk, pinned) on the two GETs our data
// server used to answer badly: one before `initialize` (as the Vercel AI SDK's client sends
// it) and a stream resumed with Last-Event-ID (the SDK's resumption token). Prints one JSON
// line: the early GET's answer, what the client reported, and that the session still works.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const early = await fetch(url, { headers: { accept: "text/event-stream" } });
await early.body?.cancel();

const errors = [];
const client = new Client({ name: "ts-resume", version: "1.0.0" });
client.onerror = (error) => errors.push({ code: error.code ?? null, message: String(error.message) });
const transport = new StreamableHTTPClientTransport(url, {
  reconnectionOptions: {
    maxRetries: 0,
    initialReconnectionDelay: 100,
    maxReconnectionDelay: 100,
    reconnectionDelayGrowFactor: 1,
  },
});
await client.connect(transport);
// Resume a stream from an event id: the transport opens a GET with Last-Event-ID.
await transport.send(
  { jsonrpc: "2.0", method: "notifications/roots/list_changed" },
  { resumptionToken: "stream-1_7" },
);
await new Promise((resolve) => setTimeout(resolve, 500));
const tools = await client.listTools();
await transport.terminateSession();
await client.close();
console.log(
  JSON.stringify({
    early: { status: early.status, session: early.headers.get("mcp-session-id") },
    errors,
    tools: tools.tools.length,
  }),
);
