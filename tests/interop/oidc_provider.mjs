// node-oidc-provider, as released, as the upstream OpenID Connect provider of linkd's tests:
// HTTPS with a certificate the test made, its built-in development login and consent pages
// (any login name and password sign in; the login name becomes the `sub`), PKCE with S256
// required of every client, and the scopes openid, email and profile. With the authorization
// code flow the provider keeps email and profile claims out of the id_token and serves them
// at userinfo only (its default `conformIdTokenClaims`), as many hosted providers do.
//
// Usage: node oidc_provider.mjs PORT CERT_PEM KEY_PEM SIGNING_KEY_FILE
// Environment:
//   OIDC_CLIENTS       a JSON array of client metadata (client_id, client_secret,
//                      redirect_uris, token_endpoint_auth_method, …); kept out of argv since
//                      it holds secrets
//   OIDC_AUTH_METHODS  comma-separated token endpoint authentication methods the provider
//                      offers and lists in discovery (default client_secret_basic,client_secret_post)
//   OIDC_KEY_ALG       RS256 (default), ES256 or EdDSA: the algorithm of the signing key
//   OIDC_FAULTS_FILE   a JSON object read on every request, mapping a path (/token, /jwks,
//                      /me, /.well-known/openid-configuration) to the fault its requests
//                      meet instead of the provider: an HTTP status to answer with an empty
//                      body, "html" for a 200 page that is not JSON, or "hang" to never answer
// The signing key is read from SIGNING_KEY_FILE (a private JWK) when it exists, or made and
// written there, so that a restarted provider keeps its keys unless the file was removed.
// Prints one JSON line {"issuer": …} on stdout once it listens, then serves until killed.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';

import Provider from 'oidc-provider';

const [portArgument, certFile, keyFile, signingKeyFile] = process.argv.slice(2);
const port = Number(portArgument);
if (!Number.isInteger(port) || port <= 0 || !certFile || !keyFile || !signingKeyFile) {
  console.error('usage: node oidc_provider.mjs PORT CERT_PEM KEY_PEM SIGNING_KEY_FILE');
  process.exit(2);
}
const issuer = `https://127.0.0.1:${port}`;
const alg = process.env.OIDC_KEY_ALG || 'RS256';
const authMethods = (process.env.OIDC_AUTH_METHODS || 'client_secret_basic,client_secret_post')
  .split(',');
const clients = JSON.parse(process.env.OIDC_CLIENTS || '[]').map((client) => ({
  grant_types: ['authorization_code'],
  response_types: ['code'],
  id_token_signed_response_alg: alg,
  ...client,
}));

function signingKey() {
  if (fs.existsSync(signingKeyFile)) return JSON.parse(fs.readFileSync(signingKeyFile, 'utf8'));
  const { privateKey } = {
    RS256: () => crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }),
    ES256: () => crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    EdDSA: () => crypto.generateKeyPairSync('ed25519'),
  }[alg]();
  const jwk = {
    ...privateKey.export({ format: 'jwk' }),
    kid: crypto.randomBytes(8).toString('hex'),
    alg,
    use: 'sig',
  };
  fs.writeFileSync(signingKeyFile, JSON.stringify(jwk), { mode: 0o600 });
  return jwk;
}

const configuration = {
  clients,
  clientAuthMethods: authMethods,
  // HS256 is offered so that a test can register a client whose id_tokens are signed with its
  // secret, which linkd must refuse.
  enabledJWA: { idTokenSigningAlgValues: ['RS256', 'PS256', 'ES256', 'EdDSA', 'HS256'] },
  jwks: { keys: [signingKey()] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name'],
  },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Grant: 3600, Interaction: 600, Session: 3600 },
  async findAccount(_ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        const given = sub.charAt(0).toUpperCase() + sub.slice(1);
        return {
          sub,
          email: `${sub}@example.com`,
          email_verified: true,
          name: `${given} Example`,
          given_name: given,
          family_name: 'Example',
        };
      },
    };
  },
};

const provider = new Provider(issuer, configuration);

// Faults in front of the provider's routes, as a broken or overloaded deployment shows them.
provider.use(async (ctx, next) => {
  let faults = {};
  try {
    faults = JSON.parse(fs.readFileSync(process.env.OIDC_FAULTS_FILE, 'utf8'));
  } catch {
    // No faults file, or none yet.
  }
  // node-oidc-provider takes client_secret_basic and client_secret_post interchangeably;
  // a provider that lists only client_secret_post refuses Basic credentials, as such
  // providers do.
  if (ctx.path === '/token' && /^basic /i.test(ctx.get('authorization'))
    && !authMethods.includes('client_secret_basic')) {
    ctx.status = 401;
    ctx.body = { error: 'invalid_client', error_description: 'client_secret_basic is not accepted' };
    return;
  }
  const fault = faults[ctx.path];
  if (fault === 'hang') {
    await new Promise(() => {});
  } else if (fault === 'html') {
    ctx.type = 'html';
    ctx.body = '<!doctype html><title>Maintenance</title><p>Back soon.</p>';
  } else if (Number.isInteger(fault)) {
    ctx.status = fault;
    ctx.body = '';
  } else {
    await next();
  }
});
const tls = { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) };
https.createServer(tls, provider.callback()).listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ issuer }));
});
