//! The router: every route linkd serves is listed here and nowhere else.
//!
//! | method | path | endpoint | body limit |
//! |---|---|---|---|
//! | GET, HEAD | `/healthz` | [`ops::healthz`]: the process is alive | none |
//! | GET, HEAD | `/readyz` | [`ops::readyz`]: signing key loaded, not draining; store health reported | none |
//! | GET | `/metrics` | [`ops::metrics`]: Prometheus text format | none |
//! | GET | `/.well-known/jwks.json` | [`oauth::jwks`]: public signing keys | none |
//! | GET | `/.well-known/oauth-authorization-server` | [`oauth::discovery`]: RFC 8414 | none |
//! | GET, POST | `/authorize` | [`crate::web::authorize::authorize`]: RFC 6749 §4.1.1 | 8 KiB form |
//! | POST | `/authorize/signin` | [`crate::web::authorize::sign_in`]: the sign-in form | 8 KiB form |
//! | POST | `/authorize/consent` | [`crate::web::authorize::consent`]: Agree and link, or Cancel | 8 KiB form |
//! | POST | `/authorize/switch` | [`crate::web::authorize::switch_account`]: sign out and start over | 8 KiB form |
//! | POST | `/token` | [`oauth::token`]: RFC 6749 §4.1.3, §6 | 8 KiB form |
//! | GET, POST | `/userinfo` | [`oauth::userinfo`]: the linked user's claims | 8 KiB |
//! | POST | `/revoke` | [`oauth::revoke`]: RFC 7009 | 8 KiB form |
//! | POST | `/introspect` | [`oauth::introspect`]: RFC 7662 | 8 KiB form |
//! | GET | `/account` | [`account::account`]: linked integrations | none |
//! | GET, POST | `/account/unlink` | GET [`account::confirm_unlink`]: ask first; POST [`account::unlink`]: revoke one link | 8 KiB form |
//! | POST | `/signout` | [`account::sign_out`]: end the session | 8 KiB form |
//! | GET | `/signin/{id}/start`, `/signin/{id}/callback` | [`signin_upstream::answer`]: sign-in through an identity provider | none |
//! | GET | `/assets/linkd.css` | [`page::stylesheet`]: the stylesheet | none |
//! | POST | `/v1/devices:sync` | [`sync::sync`]: the devices of an agent user | 64 KiB JSON |
//! | POST | `/v1/devices:requestSync` | [`request_sync::request_sync`]: SYNC from the fulfilment | 64 KiB JSON |
//! | POST | `/v1/devices:reportStateAndNotification` | [`state::report_state`]: store states | 64 KiB JSON |
//! | POST | `/v1/devices:query` | [`state::query`]: stored states | 64 KiB JSON |
//! | DELETE | `/v1/agentUsers/{agentUserId}` | [`agent_users::delete_agent_user`]: forget a user | none |
//!
//! The admin listener (`--admin-listen`) serves the three operations routes only
//! ([`Surface::Admin`]); when it is configured, the public listener does not serve `/metrics`.
//! A HEAD request is answered as its GET without the body.
//!
//! An unknown path answers 404 JSON; a known path with another method answers 405 with
//! `Allow`; a body over the route's limit answers 413 before the endpoint runs, except on the
//! device-graph API (`/v1/…`), which answers 400 `INVALID_ARGUMENT` in its own error format.
//! A body that does not fit the server's memory budget for bodies answers 503.
//!
//! The device-graph API authenticates its caller (401/403) and checks that a body is declared
//! JSON (415) from the request head, before it reads the body: its bodies are the largest
//! linkd takes, and a stranger must not make linkd hold them.

use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request};

use crate::app::App;
use crate::devicegraph::graph_client::InProcessGraph;
use crate::devicegraph::{self, ApiError, agent_users, request_sync, state, sync};
use crate::http::body::{self, BodyError};
use crate::http::{BoxFuture, Handler, HttpResponse, RequestContext, RouteLabel, response};
use crate::oauth::{authorize, grant, introspect, metadata, revoke, userinfo};
use crate::pages;
use crate::store::ServiceAccountRecord;
use crate::web::devicegraph::{self as graph_api, Method as GraphMethod};
use crate::web::{account, oauth, ops, page, signin_upstream};

/// What a route leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Liveness.
    Healthz,
    /// Readiness.
    Readyz,
    /// Prometheus metrics.
    Metrics,
    /// JSON Web Key Set.
    Jwks,
    /// Authorization-server metadata.
    Discovery,
    /// Authorization endpoint.
    Authorize,
    /// Sign-in form submission.
    SignIn,
    /// Consent form submission.
    Consent,
    /// Switch-account form submission.
    SwitchAccount,
    /// Token endpoint.
    Token,
    /// Userinfo endpoint.
    Userinfo,
    /// Token revocation.
    Revoke,
    /// Token introspection.
    Introspect,
    /// Account page.
    Account,
    /// Unlink: its confirmation page (GET) and the confirmed form (POST).
    Unlink,
    /// Sign-out form submission.
    SignOut,
    /// Sign-in through an identity provider (`/signin/{id}/…`).
    SignInUpstream,
    /// The pages' stylesheet.
    Stylesheet,
    /// `devices.sync`.
    DevicesSync,
    /// `devices.requestSync`.
    DevicesRequestSync,
    /// `devices.reportStateAndNotification`.
    DevicesReportState,
    /// `devices.query`.
    DevicesQuery,
    /// `agentUsers.delete`.
    AgentUsersDelete,
}

/// One entry of the route table.
#[derive(Debug)]
pub struct Route {
    /// Exact path.
    pub path: &'static str,
    /// Methods served; anything else gets 405.
    pub methods: &'static [Method],
    /// Where the request goes.
    pub endpoint: Endpoint,
    /// Label for logs and metrics.
    pub label: &'static str,
    /// Largest request body accepted, in bytes.
    pub body_limit: usize,
}

/// Body limit of routes that take no body.
pub const NO_BODY: usize = 0;
/// Body limit of form posts: OAuth parameters and page forms are small.
pub const FORM_BODY: usize = 8 * 1024;
/// Body limit of device-graph API requests.
pub const API_BODY: usize = 64 * 1024;

const GET: &[Method] = &[Method::GET];
const GET_HEAD: &[Method] = &[Method::GET, Method::HEAD];
const POST: &[Method] = &[Method::POST];
const GET_POST: &[Method] = &[Method::GET, Method::POST];
const DELETE: &[Method] = &[Method::DELETE];

const fn route(
    path: &'static str,
    methods: &'static [Method],
    endpoint: Endpoint,
    label: &'static str,
    body_limit: usize,
) -> Route {
    Route {
        path,
        methods,
        endpoint,
        label,
        body_limit,
    }
}

/// Every route, in the order of the table above.
pub const ROUTES: &[Route] = &[
    route("/healthz", GET_HEAD, Endpoint::Healthz, "healthz", NO_BODY),
    route("/readyz", GET_HEAD, Endpoint::Readyz, "readyz", NO_BODY),
    route("/metrics", GET, Endpoint::Metrics, "metrics", NO_BODY),
    route(metadata::JWKS_PATH, GET, Endpoint::Jwks, "jwks", NO_BODY),
    route(
        metadata::DISCOVERY_PATH,
        GET,
        Endpoint::Discovery,
        "discovery",
        NO_BODY,
    ),
    route(
        authorize::PATH,
        GET_POST,
        Endpoint::Authorize,
        "authorize",
        FORM_BODY,
    ),
    route(
        authorize::SIGN_IN_PATH,
        POST,
        Endpoint::SignIn,
        "authorize_signin",
        FORM_BODY,
    ),
    route(
        authorize::CONSENT_PATH,
        POST,
        Endpoint::Consent,
        "authorize_consent",
        FORM_BODY,
    ),
    route(
        authorize::SWITCH_PATH,
        POST,
        Endpoint::SwitchAccount,
        "authorize_switch",
        FORM_BODY,
    ),
    route(grant::PATH, POST, Endpoint::Token, "token", FORM_BODY),
    route(
        userinfo::PATH,
        GET_POST,
        Endpoint::Userinfo,
        "userinfo",
        FORM_BODY,
    ),
    route(revoke::PATH, POST, Endpoint::Revoke, "revoke", FORM_BODY),
    route(
        introspect::PATH,
        POST,
        Endpoint::Introspect,
        "introspect",
        FORM_BODY,
    ),
    route(account::PATH, GET, Endpoint::Account, "account", NO_BODY),
    route(
        account::UNLINK_PATH,
        GET_POST,
        Endpoint::Unlink,
        "account_unlink",
        FORM_BODY,
    ),
    route(
        account::SIGN_OUT_PATH,
        POST,
        Endpoint::SignOut,
        "signout",
        FORM_BODY,
    ),
    // Matched by prefix: the rest of the path is the provider id and the step.
    route(
        signin_upstream::PREFIX,
        GET,
        Endpoint::SignInUpstream,
        "signin_upstream",
        NO_BODY,
    ),
    route(
        pages::STYLESHEET_PATH,
        GET,
        Endpoint::Stylesheet,
        "stylesheet",
        NO_BODY,
    ),
    route(
        sync::PATH,
        POST,
        Endpoint::DevicesSync,
        "devices_sync",
        API_BODY,
    ),
    route(
        request_sync::PATH,
        POST,
        Endpoint::DevicesRequestSync,
        "devices_request_sync",
        API_BODY,
    ),
    route(
        state::REPORT_STATE_PATH,
        POST,
        Endpoint::DevicesReportState,
        "devices_report_state",
        API_BODY,
    ),
    route(
        state::QUERY_PATH,
        POST,
        Endpoint::DevicesQuery,
        "devices_query",
        API_BODY,
    ),
    // Matched by prefix: the rest of the path is the agent user id.
    route(
        agent_users::PREFIX,
        DELETE,
        Endpoint::AgentUsersDelete,
        "agent_users_delete",
        NO_BODY,
    ),
];

/// Finds the route for `path`.
pub fn find(path: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|route| {
        route.path == path
            || (route.path.ends_with('/')
                && path.len() > route.path.len()
                && path.starts_with(route.path))
    })
}

/// Which routes a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Every route: the public listener when no admin listener is configured.
    Public,
    /// Every route but `/metrics`, which the admin listener serves instead.
    PublicWithoutMetrics,
    /// The operations routes only (`/healthz`, `/readyz`, `/metrics`): the admin listener,
    /// meant for a private network.
    Admin,
}

impl Surface {
    /// Whether a listener of this surface serves `endpoint`.
    pub fn serves(self, endpoint: Endpoint) -> bool {
        let operations = matches!(
            endpoint,
            Endpoint::Healthz | Endpoint::Readyz | Endpoint::Metrics
        );
        match self {
            Self::Public => true,
            Self::PublicWithoutMetrics => endpoint != Endpoint::Metrics,
            Self::Admin => operations,
        }
    }
}

/// The router: an [`App`] behind the HTTP layer's [`Handler`] interface.
#[derive(Debug, Clone)]
pub struct Router {
    app: Arc<App>,
    surface: Surface,
}

impl Router {
    /// A router serving every route of `app`.
    pub fn new(app: Arc<App>) -> Self {
        Self::with_surface(app, Surface::Public)
    }

    /// A router serving the routes of `surface`; any other path answers 404.
    pub fn with_surface(app: Arc<App>, surface: Surface) -> Self {
        Self { app, surface }
    }

    /// This router's app behind the routes of `surface`.
    pub fn with_surface_of(&self, surface: Surface) -> Self {
        Self::with_surface(Arc::clone(&self.app), surface)
    }

    async fn dispatch(&self, request: Request<Incoming>, context: &RequestContext) -> HttpResponse {
        let Some(route) =
            find(request.uri().path()).filter(|route| self.surface.serves(route.endpoint))
        else {
            return response::not_found();
        };
        let head = request.method() == Method::HEAD;
        let mut answer = self.serve_route(route, request, context).await;
        answer.extensions_mut().insert(RouteLabel(route.label));
        if head {
            answer = without_body(answer);
        }
        answer
    }

    async fn serve_route(
        &self,
        route: &'static Route,
        request: Request<Incoming>,
        context: &RequestContext,
    ) -> HttpResponse {
        if !route.methods.contains(request.method()) {
            return response::method_not_allowed(route.methods);
        }
        let unread_body_closes = unread_body_closes_connection(&request);
        let caller = match admit(&self.app, route, request.headers()).await {
            Ok(caller) => caller,
            Err(refusal) => return closing_if(unread_body_closes, refusal),
        };
        let request: Request<Bytes> = match body::read_limited(request, route.body_limit).await {
            Ok((parts, body)) => Request::from_parts(parts, body),
            Err(BodyError::TooLarge { limit }) => {
                return closing_if(unread_body_closes, too_large(route, limit));
            }
            Err(BodyError::Busy) => return closing_if(unread_body_closes, busy(route)),
            Err(BodyError::Interrupted) => {
                return response::error(
                    hyper::StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "request body could not be read",
                );
            }
        };
        answer(&self.app, route, &request, context, caller.as_ref()).await
    }
}

/// `answer` as the answer to a HEAD request: its headers, with the length of the body it
/// would have had, and no body. HTTP/1 leaves the body out by itself; HTTP/2 would send it.
fn without_body(answer: HttpResponse) -> HttpResponse {
    let (mut parts, body) = answer.into_parts();
    let length = hyper::body::Body::size_hint(&body).exact().unwrap_or(0);
    parts
        .headers
        .entry(hyper::header::CONTENT_LENGTH)
        .or_insert_with(|| hyper::header::HeaderValue::from(length));
    HttpResponse::from_parts(parts, crate::http::ResponseBody::default())
}

/// Whether answering `request` without reading its body ends the connection: on HTTP/1 the
/// unread bytes would be taken for the next request, so hyper closes the connection, and the
/// client must be told, or it sends its next request (a retry after a 401, say) into a closed
/// connection. HTTP/2 resets only the stream.
fn unread_body_closes_connection<B>(request: &Request<B>) -> bool {
    let headers = request.headers();
    let declares_body = headers.contains_key(hyper::header::TRANSFER_ENCODING)
        || headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .is_some_and(|length| length > 0);
    declares_body && request.version() < hyper::Version::HTTP_2
}

/// `answer` with `Connection: close` when `closes`.
fn closing_if(closes: bool, mut answer: HttpResponse) -> HttpResponse {
    if closes {
        answer.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    answer
}

/// The checks of the device-graph API that need only the request head: the caller's
/// credential and, on routes that take a body, its media type. `None` outside the API.
async fn admit(
    app: &App,
    route: &Route,
    headers: &hyper::HeaderMap,
) -> Result<Option<ServiceAccountRecord>, HttpResponse> {
    if !route.path.starts_with(devicegraph::API_PREFIX) {
        return Ok(None);
    }
    graph_api::admit(app, headers, route.body_limit > NO_BODY)
        .await
        .map(Some)
}

/// The answer to a body that does not fit the server's budget for bodies in flight.
fn busy(route: &Route) -> HttpResponse {
    if route.path.starts_with(devicegraph::API_PREFIX) {
        graph_api::api_error(&ApiError::unavailable_because(
            "The server is busy; try again shortly.",
        ))
    } else {
        response::service_unavailable("the server is busy; try again shortly", 5)
    }
}

/// The answer to a body over `route`'s limit.
fn too_large(route: &Route, limit: usize) -> HttpResponse {
    if route.path.starts_with(devicegraph::API_PREFIX) {
        graph_api::api_error(&ApiError::invalid_argument(format!(
            "The request body exceeds {limit} bytes."
        )))
    } else {
        response::payload_too_large(limit)
    }
}

/// Answers a request made inside this process — linkd calling its own device graph — as one
/// from the network is answered: the same route lookup, method and size checks, endpoint and
/// authentication.
pub async fn answer_in_process(app: &Arc<App>, request: Request<Bytes>) -> HttpResponse {
    let Some(route) = find(request.uri().path()) else {
        return response::not_found();
    };
    if !route.methods.contains(request.method()) {
        return response::method_not_allowed(route.methods);
    }
    let caller = match admit(app, route, request.headers()).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    if request.body().len() > route.body_limit {
        return too_large(route, route.body_limit);
    }
    let context = RequestContext {
        request_id: crate::secrets::new_uuid(),
        remote_addr: std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
        tls: true,
    };
    answer(app, route, &request, &context, caller.as_ref()).await
}

async fn answer(
    app: &Arc<App>,
    route: &Route,
    request: &Request<Bytes>,
    context: &RequestContext,
    caller: Option<&ServiceAccountRecord>,
) -> HttpResponse {
    let graph_method = match route.endpoint {
        Endpoint::Healthz => return ops::healthz(),
        Endpoint::Readyz => return ops::readyz(app),
        Endpoint::Metrics => return ops::metrics(app),
        Endpoint::Jwks => return oauth::jwks(app),
        Endpoint::Discovery => return oauth::discovery(app, discovered()).await,
        Endpoint::Authorize => {
            return crate::web::authorize::authorize(app, request, context).await;
        }
        Endpoint::SignIn => return crate::web::authorize::sign_in(app, request, context).await,
        Endpoint::Consent => return crate::web::authorize::consent(app, request, context).await,
        Endpoint::SwitchAccount => {
            return crate::web::authorize::switch_account(app, request, context).await;
        }
        Endpoint::Token => return oauth::token(app, request, context).await,
        Endpoint::Userinfo => return oauth::userinfo(app, request, context).await,
        Endpoint::Revoke => return oauth::revoke(app, request, context).await,
        Endpoint::Introspect => return oauth::introspect(app, request, context).await,
        Endpoint::Account => return account::account(app, request, context).await,
        Endpoint::Unlink if request.method() == Method::GET => {
            return account::confirm_unlink(app, request, context).await;
        }
        Endpoint::Unlink => return account::unlink(app, request, context).await,
        Endpoint::SignOut => return account::sign_out(app, request, context).await,
        Endpoint::SignInUpstream => return signin_upstream::answer(app, request, context).await,
        Endpoint::Stylesheet => return page::stylesheet(),
        Endpoint::DevicesSync => GraphMethod::Sync,
        Endpoint::DevicesRequestSync => GraphMethod::RequestSync,
        Endpoint::DevicesReportState => GraphMethod::ReportState,
        Endpoint::DevicesQuery => GraphMethod::Query,
        Endpoint::AgentUsersDelete => GraphMethod::DeleteAgentUser,
    };
    // The API's routes are admitted with a caller; one without is refused, never served.
    match caller {
        Some(caller) => graph_api::answer(app, graph_method, caller, request).await,
        None => graph_api::api_error(&ApiError::unauthenticated(
            "Request is missing a bearer token.",
        )),
    }
}

/// The endpoints the discovery document names, as RFC 8414 field and path: only routes of
/// this table, so that it cannot advertise an endpoint that 404s.
fn discovered() -> impl Iterator<Item = (&'static str, &'static str)> {
    ROUTES
        .iter()
        .filter_map(|route| metadata_field(route.endpoint).map(|field| (field, route.path)))
}

/// The RFC 8414 field naming an endpoint, for endpoints that have one.
fn metadata_field(endpoint: Endpoint) -> Option<&'static str> {
    match endpoint {
        Endpoint::Jwks => Some("jwks_uri"),
        Endpoint::Authorize => Some("authorization_endpoint"),
        Endpoint::Token => Some("token_endpoint"),
        Endpoint::Userinfo => Some("userinfo_endpoint"),
        Endpoint::Revoke => Some("revocation_endpoint"),
        Endpoint::Introspect => Some("introspection_endpoint"),
        Endpoint::Healthz
        | Endpoint::Readyz
        | Endpoint::Metrics
        | Endpoint::Discovery
        | Endpoint::SignIn
        | Endpoint::Consent
        | Endpoint::SwitchAccount
        | Endpoint::Account
        | Endpoint::Unlink
        | Endpoint::SignOut
        | Endpoint::SignInUpstream
        | Endpoint::Stylesheet
        | Endpoint::DevicesSync
        | Endpoint::DevicesRequestSync
        | Endpoint::DevicesReportState
        | Endpoint::DevicesQuery
        | Endpoint::AgentUsersDelete => None,
    }
}

impl InProcessGraph for Router {
    fn call(&self, request: Request<Bytes>) -> BoxFuture<'_, HttpResponse> {
        Box::pin(answer_in_process(&self.app, request))
    }
}

impl Handler for Router {
    fn handle<'a>(
        &'a self,
        request: Request<Incoming>,
        context: &'a RequestContext,
    ) -> BoxFuture<'a, HttpResponse> {
        Box::pin(self.dispatch(request, context))
    }
}
