"""An integrator's backend calling linkd's device graph with Python's google-auth library,
unchanged: it reads the service-account key file written by `linkd service-accounts create`,
gets an access token from the key file's token_uri (the JWT-bearer grant) and calls
devices:sync. Prints the response body; exits non-zero on any failure.

Usage: devicegraph_client.py KEY_FILE API_BASE SCOPE AGENT_USER_ID
(REQUESTS_CA_BUNDLE names the certificate to trust.)
"""

import json
import sys

from google.auth.transport.requests import AuthorizedSession, Request
from google.oauth2 import service_account


def main():
    key_file, api_base, scope, agent_user_id = sys.argv[1:5]
    credentials = service_account.Credentials.from_service_account_file(
        key_file, scopes=[scope]
    )
    credentials.refresh(Request())
    session = AuthorizedSession(credentials)
    response = session.post(
        api_base + "/v1/devices:sync",
        json={"requestId": "interop-1", "agentUserId": agent_user_id},
    )
    if response.status_code != 200:
        sys.exit("devices:sync answered %d: %s" % (response.status_code, response.text))
    print(json.dumps(response.json()))


if __name__ == "__main__":
    main()
