// panva's oidc-provider (npm, pinned in package.json) as the authorization server of an MCP
// server, for the interop tests. Configured for an MCP resource and nothing more: dynamic
// client registration, resource indicators (RFC 8707) with the resource's scope `mcp`,
// introspection for the resource server, revocation. Everything else is as shipped: the
// scopes `openid offline_access` (no `mcp`: a registration asking for it is refused), a
// refresh token only for a grant of offline_access (which needs prompt=consent), PKCE,
// the development login and consent pages, and in-memory storage (a restart forgets every
// client, grant and token).
//
// Environment: PORT, RESOURCE (the MCP server's URL), INTROSPECTION_SECRET (the resource
// server's client secret), ACCESS_TOKEN_TTL (seconds), OFFLINE ("0": a provider without
// offline_access, so never a refresh token).
//
// Besides the provider, two routes for the tests: GET /test/events (what the provider
// reported: registrations, grants, tokens) and POST /test/revoke (the user withdraws every
// grant, as on the provider's own account page).
import http from "node:http";

import Provider, { errors } from "oidc-provider";

const port = Number(process.env.PORT);
const resource = process.env.RESOURCE;
const accessTokenTTL = Number(process.env.ACCESS_TOKEN_TTL || 3600);
const issuer = `http://127.0.0.1:${port}`;

const configuration = {
  clients: [
    {
      client_id: "mcp-resource-server",
      client_secret: process.env.INTROSPECTION_SECRET,
      redirect_uris: [],
      response_types: [],
      grant_types: [],
    },
  ],
  features: {
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo(_ctx, indicator) {
        if (indicator !== resource) {
          throw new errors.InvalidTarget();
        }
        return { scope: "mcp", audience: resource, accessTokenTTL, accessTokenFormat: "opaque" };
      },
    },
  },
};
if (process.env.OFFLINE === "0") {
  configuration.scopes = ["openid"];
}

const provider = new Provider(issuer, configuration);
const events = [];
const grants = new Set();
const record = (event, fields) => events.push({ event, ...fields });

provider.on("registration_create.success", (_ctx, client) =>
  record("registration", { client_id: client.clientId, scope: client.scope ?? null }),
);
provider.on("registration_create.error", (_ctx, error) =>
  record("registration_refused", { error: error.error, description: error.error_description }),
);
provider.on("grant.success", (ctx) => record("grant", { grant_type: ctx.oidc.params.grant_type }));
provider.on("grant.error", (ctx, error) =>
  record("grant_refused", { grant_type: ctx.oidc.params?.grant_type, error: error.error }),
);
provider.on("grant.saved", (grant) => grants.add(grant.jti));
provider.on("access_token.saved", (token) =>
  record("access_token", { scope: token.scope, aud: token.aud ?? null }),
);
provider.on("refresh_token.saved", () => record("refresh_token", {}));
provider.on("authorization.accepted", (ctx) =>
  record("authorization", { prompt: ctx.oidc.params.prompt ?? null, scope: ctx.oidc.params.scope }),
);

async function revokeEverything() {
  for (const id of grants) {
    await provider.AccessToken.revokeByGrantId(id);
    await provider.RefreshToken.revokeByGrantId(id);
    const grant = await provider.Grant.find(id);
    await grant?.destroy();
  }
  grants.clear();
}

const handle = provider.callback();
const server = http.createServer((request, response) => {
  if (request.url === "/test/events" && request.method === "GET") {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify(events));
  } else if (request.url === "/test/revoke" && request.method === "POST") {
    revokeEverything().then(
      () => response.end("revoked"),
      (error) => {
        response.statusCode = 500;
        response.end(String(error));
      },
    );
  } else {
    handle(request, response);
  }
});
server.listen(port, "127.0.0.1", () => console.log(`oidc-provider listening on ${issuer}`));
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
