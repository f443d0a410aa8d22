// The TypeScript SDK's client (npm @modelcontextprotocol/sdk, pinned in package.json) against
// our data server: connect, list the tools, call search_vaults. Prints one JSON line.
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
console.log(
  JSON.stringify({
    server: client.getServerVersion(),
    protocol: transport.protocolVersion ?? null,
    tools: tools.tools.map((t) => t.name),
    result,
    refused,
  }),
);
await client.close();
