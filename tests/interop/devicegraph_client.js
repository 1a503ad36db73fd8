// An integrator's backend calling linkd's device graph with Google's Node client libraries as
// released (google-auth-library and the googleapis Home Graph client), reading the
// service-account key file written by `linkd service-accounts create` unchanged.
//
// Modes:
//   grant        GoogleAuth gets an access token with the JWT-bearer grant. The library
//                signs its assertion for https://oauth2.googleapis.com/token without a kid
//                and posts it there whatever the key file's token_uri says, so a request
//                interceptor sends that one request to token_uri instead.
//   self-signed  useJWTAccessWithScope: the library signs a JWT itself, with a `scope`
//                claim and no `aud`, and presents it as the Bearer credential.
//
// Prints one JSON object: the devices.sync answer, the claims of the Bearer credential sent
// to the API and, in grant mode, the header and claims of the assertion the library signed.
// Exits non-zero on any failure, with the library's error on stderr.
//
// Usage: node devicegraph_client.js MODE KEY_FILE API_BASE SCOPE AGENT_USER_ID
// (NODE_EXTRA_CA_CERTS names the certificate to trust.)
'use strict';

const fs = require('node:fs');
const {GoogleAuth} = require('google-auth-library');
const {homegraph} = require('@googleapis/homegraph');

const LIBRARY_TOKEN_URL = 'https://oauth2.googleapis.com/token';

function decode(segment) {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
}

async function main() {
  const [mode, keyFile, apiBase, scope, agentUserId] = process.argv.slice(2);
  if (mode !== 'grant' && mode !== 'self-signed') {
    throw new Error(`unknown mode ${mode}`);
  }
  const key = JSON.parse(fs.readFileSync(keyFile, 'utf8'));
  const auth = new GoogleAuth({keyFile, scopes: [scope]});
  if (mode === 'self-signed') {
    auth.useJWTAccessWithScope = true;
  }
  const client = await auth.getClient();
  const report = {};
  const linkd = new URL(apiBase).host;
  client.transporter.interceptors.request.add({
    resolved: async options => {
      if (mode === 'grant' && String(options.url) === LIBRARY_TOKEN_URL) {
        options.url = new URL(key.token_uri);
        const assertion = new URLSearchParams(String(options.data)).get('assertion');
        const [header, payload] = assertion.split('.');
        report.assertion_header = decode(header);
        report.assertion_claims = decode(payload);
      }
      // Credentials of the test never leave for anywhere but linkd.
      const host = new URL(String(options.url)).host;
      if (host !== linkd) {
        throw new Error(`refusing to send a request to ${host}`);
      }
      return options;
    },
  });
  const api = homegraph({version: 'v1', auth: client, rootUrl: `${apiBase}/`});
  let answer;
  try {
    answer = await api.devices.sync({
      requestBody: {requestId: 'interop-1', agentUserId},
    });
  } catch (error) {
    const body = error.response ? JSON.stringify(error.response.data) : '';
    process.stderr.write(`devices.sync failed: ${error.message} ${body}\n`);
    process.exit(1);
  }
  const headers = await client.getRequestHeaders();
  const bearer = headers.get('authorization').replace(/^Bearer /, '');
  report.response = answer.data;
  report.bearer_claims = decode(bearer.split('.')[1]);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch(error => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
