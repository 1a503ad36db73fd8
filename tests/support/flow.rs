//! A browser's side of the linking flow in plain HTTPS requests: cookies, hidden form
//! fields and redirects handled by hand, for tests that need the flow without a browser.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use bytes::Bytes;
use http_body_util::Full;

use super::https;

/// Where the server under test listens, and the certificate to trust.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub address: SocketAddr,
    pub cert: &'a Path,
}

pub async fn get(
    server: &Target<'_>,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> https::Reply {
    let mut request = https::request("GET", path_and_query);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    https::send(
        server.address,
        https::client_config(server.cert, https::Offer::Both),
        request.body(Full::new(Bytes::new())).unwrap(),
    )
    .await
}

/// POSTs `form` to `path` with no cookie.
pub async fn post(server: &Target<'_>, path: &str, form: &[(&str, &str)]) -> https::Reply {
    post_form_with_headers(server, path, form, &[]).await
}

pub async fn post_form(
    server: &Target<'_>,
    path: &str,
    form: &[(&str, &str)],
    cookies: &str,
) -> https::Reply {
    post_form_with_headers(server, path, form, &[("cookie", cookies)]).await
}

/// [`post_form`] with any request headers.
pub async fn post_form_with_headers(
    server: &Target<'_>,
    path: &str,
    form: &[(&str, &str)],
    headers: &[(&str, &str)],
) -> https::Reply {
    let mut request =
        https::request("POST", path).header("content-type", "application/x-www-form-urlencoded");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    https::send(
        server.address,
        https::client_config(server.cert, https::Offer::Both),
        request
            .body(Full::new(Bytes::from(
                serde_urlencoded::to_string(form).unwrap(),
            )))
            .unwrap(),
    )
    .await
}

/// Redeems `code`, issued for `redirect_uri`, at `/token` as the client `acme` with `secret`
/// in the body.
pub async fn redeem(
    server: &Target<'_>,
    code: &str,
    redirect_uri: &str,
    secret: &str,
) -> https::Reply {
    post(
        server,
        "/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", "acme"),
            ("client_secret", secret),
        ],
    )
    .await
}

/// Calls `/userinfo` with `access_token` as the bearer token.
pub async fn userinfo(server: &Target<'_>, access_token: &str) -> https::Reply {
    get(
        server,
        "/userinfo",
        &[("authorization", &format!("Bearer {access_token}"))],
    )
    .await
}

pub fn redirect_query(reply: &https::Reply) -> HashMap<String, String> {
    let location = reply
        .header("location")
        .unwrap_or_else(|| panic!("no Location; status {} {}", reply.status, reply.text()));
    let (_, query) = location.split_once('?').unwrap();
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap()
        .into_iter()
        .collect()
}

/// The value of `name` in the reply's `Set-Cookie` headers.
pub fn set_cookie(reply: &https::Reply, name: &str) -> Option<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| {
            let (pair, _) = value.split_once(';').unwrap_or((value, ""));
            let (key, value) = pair.split_once('=')?;
            (key == name && !value.is_empty()).then(|| value.to_owned())
        })
}

pub fn hidden_field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} field"))
        + marker.len();
    let end = start + html[start..].find('"').unwrap();
    html[start..end].replace("&amp;", "&").replace("&#38;", "&")
}

/// Opens the sign-in page of authorization request `request` and submits `email` and
/// `password` with its CSRF token and cookie, plus `headers`; returns the answer, whatever it is.
pub async fn sign_in_attempt(
    server: &Target<'_>,
    request: &str,
    email: &str,
    password: &str,
    headers: &[(&str, &str)],
) -> https::Reply {
    let page = get(server, &format!("/authorize?{request}"), &[]).await;
    let csrf_cookie = format!(
        "__Host-linkd-csrf={}",
        set_cookie(&page, "__Host-linkd-csrf").unwrap()
    );
    let html = page.text();
    let mut all_headers = vec![("cookie", csrf_cookie.as_str())];
    all_headers.extend_from_slice(headers);
    post_form_with_headers(
        server,
        "/authorize/signin",
        &[
            ("csrf", hidden_field(&html, "csrf").as_str()),
            ("request", hidden_field(&html, "request").as_str()),
            ("email", email),
            ("password", password),
        ],
        &all_headers,
    )
    .await
}

/// Signs in on the page of authorization request `request`; returns the session cookie
/// (`name=value`) and the sign-in's redirect.
pub async fn sign_in_over_http(
    server: &Target<'_>,
    request: &str,
    email: &str,
    password: &str,
) -> (String, https::Reply) {
    let signed_in = sign_in_attempt(server, request, email, password, &[]).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.text());
    let session = set_cookie(&signed_in, "__Host-linkd-session").unwrap();
    (format!("__Host-linkd-session={session}"), signed_in)
}

/// Signs in and consents over plain HTTP requests, as a browser would; returns the session
/// cookie and the redirect carrying the code.
pub async fn link_with_session(
    server: &Target<'_>,
    request: &str,
    email: &str,
    password: &str,
) -> (String, https::Reply) {
    let (cookies, signed_in) = sign_in_over_http(server, request, email, password).await;
    let consent = get(
        server,
        &signed_in.header("location").unwrap(),
        &[("cookie", &cookies)],
    )
    .await;
    if consent.status == 302 {
        // Consent remembered from an earlier linking: the code comes back at once.
        return (cookies, consent);
    }
    assert_eq!(consent.status, 200);
    let html = consent.text();
    let policy = consent.header("content-security-policy").unwrap();
    assert!(
        policy.contains("form-action 'self' https://oauth-redirect.googleusercontent.com"),
        "{policy}"
    );
    let agreed = post_form(
        server,
        "/authorize/consent",
        &[
            ("csrf", hidden_field(&html, "csrf").as_str()),
            ("request", hidden_field(&html, "request").as_str()),
            ("action", "agree"),
        ],
        &cookies,
    )
    .await;
    assert_eq!(
        agreed.status, 303,
        "a credential POST answers 303, never 307"
    );
    (cookies, agreed)
}

/// [`link_with_session`] without the session.
pub async fn link_over_http(
    server: &Target<'_>,
    request: &str,
    email: &str,
    password: &str,
) -> https::Reply {
    link_with_session(server, request, email, password).await.1
}

/// Presses Unlink on the account page for the only linked integration, as the signed-in
/// user of `cookies`.
pub async fn unlink_over_http(server: &Target<'_>, cookies: &str) -> https::Reply {
    let page = get(server, "/account", &[("cookie", cookies)]).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    post_form(
        server,
        "/account/unlink",
        &[
            ("csrf", hidden_field(&html, "csrf").as_str()),
            ("grant", hidden_field(&html, "grant").as_str()),
        ],
        cookies,
    )
    .await
}
