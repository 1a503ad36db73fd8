// Obtains the credentials linkd's load benchmark calls with, over HTTPS as a real client
// would, and writes them as JSON to stdout. No dependencies beyond Node itself.
//
//   node tokens.mjs link BASE_URL CA_FILE CLIENT_ID PROJECT_ID EMAIL
//     (client secret and password on stdin, one per line)
//     Drives the authorization-code flow as the browser and the platform would: GET
//     /authorize, the sign-in form with its CSRF cookie and hidden fields, the consent form,
//     the redirect's code, POST /token. Prints {refresh_token, access_token}.
//   node tokens.mjs service-token BASE_URL CA_FILE KEY_FILE SCOPE
//     Signs an RS256 assertion with the service-account key file and redeems it with the
//     JWT-bearer grant. Prints {access_token}.
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';

const TIMEOUT_MS = 10_000;

function request(base, ca, method, path, { headers = {}, form } = {}) {
  const url = new URL(path, base);
  const body = form ? new URLSearchParams(form).toString() : undefined;
  const allHeaders = { ...headers };
  if (body !== undefined) {
    allHeaders['content-type'] = 'application/x-www-form-urlencoded';
    allHeaders['content-length'] = Buffer.byteLength(body);
  }
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers: allHeaders, ca, timeout: TIMEOUT_MS }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({
        status: res.statusCode,
        headers: res.headers,
        text: Buffer.concat(chunks).toString('utf8'),
      }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: timed out`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function expect(reply, status, what) {
  if (reply.status !== status) {
    throw new Error(`${what}: expected ${status}, got ${reply.status}: ${reply.text.slice(0, 300)}`);
  }
}

function cookie(reply, name) {
  for (const line of reply.headers['set-cookie'] ?? []) {
    const [pair] = line.split(';');
    const eq = pair.indexOf('=');
    if (pair.slice(0, eq) === name && eq + 1 < pair.length) return `${name}=${pair.slice(eq + 1)}`;
  }
  throw new Error(`no ${name} cookie`);
}

function hidden(html, name) {
  const marker = `name="${name}" value="`;
  const start = html.indexOf(marker);
  if (start < 0) throw new Error(`no ${name} field`);
  const value = html.slice(start + marker.length, html.indexOf('"', start + marker.length));
  return value.replaceAll('&amp;', '&').replaceAll('&#38;', '&');
}

function basic(id, secret) {
  const enc = (s) => encodeURIComponent(s).replaceAll('%20', '+');
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString('base64')}`;
}

function stdinLines() {
  return fs.readFileSync(0, 'utf8').split('\n');
}

async function link(base, ca, clientId, projectId, email) {
  const [secret, password] = stdinLines();
  const redirectUri = `https://oauth-redirect.googleusercontent.com/r/${projectId}`;
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    state: 'bench-state',
    response_type: 'code',
    scope: 'openid email profile devices',
  });
  const page = await request(base, ca, 'GET', `/authorize?${query}`);
  expect(page, 200, 'sign-in page');
  const signedIn = await request(base, ca, 'POST', '/authorize/signin', {
    headers: { cookie: cookie(page, '__Host-linkd-csrf') },
    form: {
      csrf: hidden(page.text, 'csrf'),
      request: hidden(page.text, 'request'),
      email,
      password,
    },
  });
  expect(signedIn, 303, 'sign-in');
  const session = cookie(signedIn, '__Host-linkd-session');
  let redirect = await request(base, ca, 'GET', signedIn.headers.location, {
    headers: { cookie: session },
  });
  if (redirect.status === 200) {
    redirect = await request(base, ca, 'POST', '/authorize/consent', {
      headers: { cookie: session },
      form: {
        csrf: hidden(redirect.text, 'csrf'),
        request: hidden(redirect.text, 'request'),
        action: 'agree',
      },
    });
    expect(redirect, 303, 'consent');
  } else {
    expect(redirect, 302, 'remembered consent');
  }
  const location = new URL(redirect.headers.location);
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code in the redirect (${location.searchParams.get('error')})`);
  const tokens = await request(base, ca, 'POST', '/token', {
    headers: { authorization: basic(clientId, secret) },
    form: { grant_type: 'authorization_code', code, redirect_uri: redirectUri },
  });
  expect(tokens, 200, 'code exchange');
  const { refresh_token: refreshToken, access_token: accessToken } = JSON.parse(tokens.text);
  return { refresh_token: refreshToken, access_token: accessToken };
}

async function serviceToken(base, ca, keyFile, scope) {
  const key = JSON.parse(fs.readFileSync(keyFile, 'utf8'));
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64({ alg: 'RS256', typ: 'JWT', kid: key.private_key_id })}.${b64({
    iss: key.client_email,
    sub: key.client_email,
    aud: key.token_uri,
    scope,
    iat: now,
    exp: now + 3600,
  })}`;
  const signature = crypto.sign('sha256', Buffer.from(input), key.private_key).toString('base64url');
  const reply = await request(base, ca, 'POST', '/token', {
    form: {
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion: `${input}.${signature}`,
    },
  });
  expect(reply, 200, 'JWT-bearer grant');
  return { access_token: JSON.parse(reply.text).access_token };
}

const [command, base, caFile, ...rest] = process.argv.slice(2);
const ca = caFile ? fs.readFileSync(caFile) : undefined;
try {
  let result;
  if (command === 'link' && rest.length === 3) {
    result = await link(base, ca, ...rest);
  } else if (command === 'service-token' && rest.length === 2) {
    result = await serviceToken(base, ca, ...rest);
  } else {
    console.error('usage: node tokens.mjs link BASE CA CLIENT_ID PROJECT_ID EMAIL | service-token BASE CA KEY_FILE SCOPE');
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  console.error(`tokens.mjs ${command}: ${error.message}`);
  process.exit(1);
}
