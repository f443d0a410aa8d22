// The TypeScript SDK's client (npm @modelcontextprotocol/sdk, pinned in package.json) against
// our data server: connect, list the tools, call search_vaults (the SDK checks its
// structuredContent against the tool's outputSchema), a refused argument, end the session.
// Prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const client = new Client({ name: "ts-interop", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
await client.connect(transport);
const tools = await client.listTools();
const result = await client.callTool({
  name: "search_vaults",
  arguments: { chain: "ethereum", per_page: 2 },
});
const refused = await client.callTool({ name: "search_vaults", arguments: { chain: 7 } });
const unknown = await client
  .callTool({ name: "no_such_tool", arguments: {} })
  .then((answer) => ({ answer }))
  .catch((error) => ({ error: { code: error.code ?? null, message: String(error.message) } }));
const listed = async (list) =>
  list.then((answer) => ({ answer })).catch((error) => ({ error: String(error.message) }));
const resources = await listed(client.listResources());
const prompts = await listed(client.listPrompts());
const session = transport.sessionId ?? null;
// A DELETE when the server gave a session; the SDK accepts a 405 from a server without one.
await transport.terminateSession();
console.log(
  JSON.stringify({
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    protocol: transport.protocolVersion ?? null,
    session,
    tools: tools.tools.map((t) => ({ name: t.name, output: Boolean(t.outputSchema) })),
    result,
    refused,
    unknown,
    resources,
    prompts,
  }),
);
await client.close();
