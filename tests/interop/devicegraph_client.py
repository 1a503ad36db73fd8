"""An integrator's backend calling linkd's device graph with Google's Python client libraries
as released (google-auth, google-api-python-client and its bundled Home Graph discovery
document), unchanged: it reads the service-account key file written by `linkd
service-accounts create` and calls devices.sync through a Home Graph client whose endpoint
is linkd.

Modes:
  grant        the library gets an access token from the key file's token_uri with the
               JWT-bearer grant (its assertion says aud=https://oauth2.googleapis.com/token)
  self-signed  always_use_jwt_access=True: the library signs a JWT itself, with a `scope`
               claim and no `aud` (AIP-4111), and presents it as the Bearer credential

Prints one JSON object: the devices.sync answer, the claims of the Bearer credential sent to
the API and, in grant mode, the claims of the assertion the library signed. Exits non-zero
on any failure, with the library's error on stderr.

Usage: devicegraph_client.py MODE KEY_FILE API_BASE SCOPE AGENT_USER_ID
(HTTPLIB2_CA_CERTS names the certificate to trust.)
"""

import base64
import json
import socket
import sys

import google.auth.exceptions
from google.oauth2 import service_account
from googleapiclient import discovery, errors


def loopback_only():
    """Lets the process resolve loopback names only. google-auth looks up a "regional access
    boundary" at iamcredentials.googleapis.com in a background thread after every token it
    gets, sending that token along; the test's credentials stay on this machine."""
    resolve = socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise socket.gaierror(socket.EAI_NONAME, "only loopback is reachable here")
        return resolve(host, *args, **kwargs)

    socket.getaddrinfo = guarded


def claims(jwt):
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def main():
    loopback_only()
    mode, key_file, api_base, scope, agent_user_id = sys.argv[1:6]
    if mode not in ("grant", "self-signed"):
        sys.exit("unknown mode %r" % mode)
    credentials = service_account.Credentials.from_service_account_file(
        key_file, scopes=[scope]
    )
    homegraph = discovery.build(
        "homegraph",
        "v1",
        credentials=credentials,
        client_options={"api_endpoint": api_base},
        static_discovery=True,
        always_use_jwt_access=(mode == "self-signed"),
    )
    try:
        answer = homegraph.devices().sync(
            body={"requestId": "interop-1", "agentUserId": agent_user_id}
        ).execute()
    except errors.HttpError as error:
        sys.exit("devices.sync answered %d: %s" % (error.status_code, error.content))
    except google.auth.exceptions.RefreshError as error:
        sys.exit("the token request failed: %s" % (error,))
    # The credentials build() actually used: the client's own copy.
    used = homegraph._http.credentials
    report = {"response": answer, "bearer_claims": claims(used.token)}
    if mode == "grant":
        report["assertion_claims"] = claims(
            used._make_authorization_grant_assertion().decode()
        )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
