// node-oidc-provider 9 as linkd's load benchmark runs it: plain HTTP, one confidential
// client (client_secret_basic, authorization_code + refresh_token), one account, tokens
// kept in process memory. It mints one grant with a refresh token and an access token
// through the provider's own models and writes them as JSON to TOKENS_FILE (mode 0600) once
// it listens, then serves until it is killed.
//
// Usage: node server.mjs PORT TOKENS_FILE
import crypto from 'node:crypto';
import fs from 'node:fs';

import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const tokensFile = process.argv[3];
if (!Number.isInteger(port) || port <= 0 || !tokensFile) {
  console.error('usage: node server.mjs PORT TOKENS_FILE');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const clientId = 'bench-client';
const clientSecret = crypto.randomBytes(32).toString('base64url');
const scope = 'openid email profile offline_access';

// A plain Map with a per-grant index. The adapter bundled with oidc-provider is an LRU of
// 1000 entries that walks every token of a grant on each save (made for development); under
// sustained refreshes of one grant it slows down with every token issued, which would
// measure the adapter rather than the provider. PEER_ADAPTER=builtin selects it anyway.
const entries = new Map();
const grants = new Map();
class MapAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    const expiresAt = expiresIn ? Date.now() + expiresIn * 1000 : Infinity;
    entries.set(key, { payload, expiresAt });
    if (payload.grantId) {
      let members = grants.get(payload.grantId);
      if (!members) {
        members = new Set();
        grants.set(payload.grantId, members);
      }
      members.add(key);
    }
  }

  async find(id) {
    const entry = entries.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }

  async findByUid(uid) {
    for (const [key, entry] of entries) {
      if (key.startsWith(`${this.model}:`) && entry.payload.uid === uid) return entry.payload;
    }
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [key, entry] of entries) {
      if (key.startsWith(`${this.model}:`) && entry.payload.userCode === userCode) {
        return entry.payload;
      }
    }
    return undefined;
  }

  async consume(id) {
    const entry = entries.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    entries.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const key of grants.get(grantId) ?? []) entries.delete(key);
    grants.delete(grantId);
  }
}

// One ES256 key, as linkd signs with ES256: the ID token of each refresh costs the peer one
// ES256 signature, as the access token costs linkd one.
const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256', use: 'sig' };

const account = {
  accountId: 'bench-user',
  async claims() {
    return {
      sub: 'bench-user',
      email: 'bench@example.com',
      email_verified: true,
      name: 'Bench User',
      given_name: 'Bench',
      family_name: 'User',
    };
  },
};

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: ['https://oauth-redirect.googleusercontent.com/r/bench-project'],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'ES256',
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name'],
  },
  features: { devInteractions: { enabled: false } },
  // oidc-provider's defaults, stated so that it does not warn about them.
  ttl: { AccessToken: 3600, IdToken: 3600, RefreshToken: 14 * 24 * 3600, Grant: 14 * 24 * 3600 },
  // linkd does not rotate refresh tokens of confidential clients; neither does the peer.
  rotateRefreshToken: false,
  async findAccount(_ctx, sub) {
    return sub === account.accountId ? account : undefined;
  },
};
if (process.env.PEER_ADAPTER !== 'builtin') configuration.adapter = MapAdapter;

const provider = new Provider(issuer, configuration);

// The grant a completed authorization-code flow would leave behind, made through the
// provider's models (there is no browser in a load test): a Grant with the scope, a refresh
// token bound to it, and an access token for userinfo.
const client = await provider.Client.find(clientId);
const grant = new provider.Grant({ accountId: account.accountId, clientId });
grant.addOIDCScope(scope);
const grantId = await grant.save();
const now = Math.floor(Date.now() / 1000);
const refreshToken = await new provider.RefreshToken({
  accountId: account.accountId,
  client,
  grantId,
  gty: 'authorization_code',
  scope,
  authTime: now,
  iiat: now,
}).save();
const accessToken = await new provider.AccessToken({
  accountId: account.accountId,
  client,
  grantId,
  gty: 'authorization_code',
  scope: 'openid email profile',
}).save();

provider.listen(port, '127.0.0.1', () => {
  const tokens = JSON.stringify({
    issuer,
    client_id: clientId,
    client_secret: clientSecret,
    refresh_token: refreshToken,
    access_token: accessToken,
  });
  fs.writeFileSync(`${tokensFile}.tmp`, tokens, { mode: 0o600 });
  fs.renameSync(`${tokensFile}.tmp`, tokensFile);
});
