// An authorization server that is not lazymcp's nor the MCP SDK's: oidc-provider (npm), on a loopback port.
//
//   node oidc_issuer.mjs NODE_MODULES PORT RESOURCE TTL RESOURCE_CLIENT RESOURCE_SECRET
//
// Dynamic client registration, PKCE (S256, required of public clients), resource indicators (RFC 8707) for
// the one resource server RESOURCE (its scope `mcp:tools`, opaque access tokens that last TTL seconds),
// refresh tokens, introspection (RFC 7662) and revocation (RFC 7009). RESOURCE_CLIENT is the resource
// server's own confidential client, which introspects the tokens it is sent. Sign-in and consent are the
// package's own development pages (any login and password sign in). NODE_MODULES: where the tests
// installed the package.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, port, resource, ttl, resourceClient, resourceSecret] = process.argv.slice(2);
const entry = pathToFileURL(path.join(modules, 'oidc-provider', 'lib', 'index.js'));
const { default: Provider, errors } = await import(entry.href);

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: resourceClient,
      client_secret: resourceSecret,
      grant_types: [],
      redirect_uris: [],
      response_types: [],
    },
  ],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true, allowedPolicy: async (_ctx, client) => client.clientId === resourceClient },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: 'mcp:tools', audience: resource, accessTokenTTL: Number(ttl), accessTokenFormat: 'opaque' };
      },
    },
  },
  scopes: ['openid', 'offline_access', 'mcp:tools'],
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  pkce: { required: () => true },
});
provider.proxy = false;
provider.listen(Number(port), '127.0.0.1');
