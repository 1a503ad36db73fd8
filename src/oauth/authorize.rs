//! The authorization endpoint's protocol core (RFC 6749 §4.1.1–4.1.2; the interface's
//! "Authorization endpoint"), free of HTTP.
//!
//! | step | where |
//! |---|---|
//! | validate `client_id` and `redirect_uri` (exact match); on failure an error page, never a redirect (§4.1.2.1) | [`validate`] |
//! | other errors go back to the redirect URI with `error` and the untouched `state` | [`validate`] → [`AuthorizeError::Redirect`] |
//! | with a session: the code when consent is remembered, else the consent page | [`next_step`] |
//! | consent, remembered per user, client and scope | [`agree`] |
//! | issue a single-use code JWT and redirect with `code` and `state` (§4.1.2) | [`issue_code`] |
//!
//! The pages' forms carry the original query string and every step validates it again from
//! scratch, so no authorization request is kept on the server between pages. The web
//! adapter ([`crate::web::authorize`]) renders the pages and sets the cookies.

use crate::app::App;
use crate::clients::ClientId;
use crate::grants::{self, CodeClaims};
use crate::oauth::params::Params;
use crate::oauth::pkce;
use crate::redirect_uri::{self as redirect, RedirectUri};
use crate::scope::Scope;
use crate::secrets;
use crate::store::{ClientRecord, StoreError, UserRecord};
use crate::tokens::TokenKind;

/// Path of the authorization endpoint.
pub const PATH: &str = "/authorize";
/// Path the sign-in form posts to.
pub const SIGN_IN_PATH: &str = "/authorize/signin";
/// Path the consent form posts to.
pub const CONSENT_PATH: &str = "/authorize/consent";
/// Path the switch-account form posts to.
pub const SWITCH_PATH: &str = "/authorize/switch";

/// A validated authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The client.
    pub client: ClientRecord,
    /// The exact redirect URI, one of the client's allowed ones.
    pub redirect_uri: RedirectUri,
    /// The client's `state`, returned untouched.
    pub state: String,
    /// Requested scope, normalised (in request order, no repeats).
    pub scope: Scope,
    /// PKCE S256 challenge.
    pub code_challenge: Option<String>,
    /// The platform's `user_locale`.
    pub user_locale: Option<String>,
    /// The request's parameters as received, carried by the forms.
    pub raw: String,
}

/// Why a request gets an error page rather than a redirect: its client or redirect URI
/// cannot be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not `application/x-www-form-urlencoded` (or not UTF-8).
    Malformed,
    /// `client_id` or `redirect_uri` more than once.
    Repeated,
    /// No `client_id`.
    NoClient,
    /// A `client_id` no client has.
    UnknownClient,
    /// No `redirect_uri`.
    NoRedirect,
    /// A `redirect_uri` the client does not have.
    UnregisteredRedirect,
}

impl Refusal {
    /// Every refusal.
    pub const ALL: [Self; 6] = [
        Self::Malformed,
        Self::Repeated,
        Self::NoClient,
        Self::UnknownClient,
        Self::NoRedirect,
        Self::UnregisteredRedirect,
    ];

    /// The reason in English, for logs.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Malformed => "The request is malformed.",
            Self::Repeated => "The request names its client or redirect address more than once.",
            Self::NoClient => "The request does not name a client.",
            Self::UnknownClient => "The request names an unknown client.",
            Self::NoRedirect => "The request has no redirect address.",
            Self::UnregisteredRedirect => "The redirect address is not registered for this client.",
        }
    }

    /// The id of the page message saying it ([`crate::pages::i18n`]).
    pub fn message_id(self) -> &'static str {
        match self {
            Self::Malformed => "request-malformed",
            Self::Repeated => "request-repeated",
            Self::NoClient => "request-no-client",
            Self::UnknownClient => "request-unknown-client",
            Self::NoRedirect => "request-no-redirect",
            Self::UnregisteredRedirect => "request-unregistered-redirect",
        }
    }
}

/// Why an authorization request cannot proceed, and how to say so.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or redirect URI cannot be trusted: show an error page (400), never
    /// redirect.
    Page(Refusal),
    /// An error the client should see: redirect with `error` and `state`.
    Redirect {
        /// The validated redirect URI.
        redirect_uri: RedirectUri,
        /// RFC 6749 §4.1.2.1 error code.
        error: &'static str,
        /// Human-readable description (ASCII, no secrets).
        description: &'static str,
        /// The request's `state`, when it had exactly one.
        state: Option<String>,
    },
    /// The store could not answer: 503 page.
    Unavailable,
}

impl From<StoreError> for AuthorizeError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed during authorization");
        crate::metrics::record_store_error("authorize");
        Self::Unavailable
    }
}

/// The redirect URIs `client` may use.
pub fn allowed_redirect_uris(app: &App, client: &ClientRecord) -> Vec<String> {
    redirect::allowed_redirect_uris(
        &app.oauth.redirect_bases,
        &client.project_id,
        &client.settings.extra_redirect_uris,
    )
}

/// Validates an authorization request given as `application/x-www-form-urlencoded`.
pub async fn validate(app: &App, raw: &str) -> Result<AuthorizationRequest, AuthorizeError> {
    let Ok((params, repeated)) = Params::parse_reporting_repeats(raw.as_bytes()) else {
        return Err(AuthorizeError::Page(Refusal::Malformed));
    };
    if repeated
        .iter()
        .any(|name| name == "client_id" || name == "redirect_uri")
    {
        return Err(AuthorizeError::Page(Refusal::Repeated));
    }
    let Some(client_id) = params.get("client_id") else {
        return Err(AuthorizeError::Page(Refusal::NoClient));
    };
    // An id no client can have is answered without asking the store.
    let Ok(client_id) = ClientId::parse(client_id) else {
        return Err(AuthorizeError::Page(Refusal::UnknownClient));
    };
    let Some(client) = app.store.get_client(client_id.as_str()).await? else {
        return Err(AuthorizeError::Page(Refusal::UnknownClient));
    };
    let Some(redirect_uri) = params.get("redirect_uri") else {
        return Err(AuthorizeError::Page(Refusal::NoRedirect));
    };
    let Some(redirect_uri) =
        RedirectUri::registered(redirect_uri, &allowed_redirect_uris(app, &client))
    else {
        return Err(AuthorizeError::Page(Refusal::UnregisteredRedirect));
    };
    let state = (!repeated.iter().any(|name| name == "state"))
        .then(|| params.get("state").map(str::to_owned))
        .flatten();
    let redirect_error = |error, description| AuthorizeError::Redirect {
        redirect_uri: redirect_uri.clone(),
        error,
        description,
        state: state.clone(),
    };
    if !repeated.is_empty() {
        return Err(redirect_error("invalid_request", "a parameter is repeated"));
    }
    let Some(state) = state.clone() else {
        return Err(redirect_error("invalid_request", "state is required"));
    };
    match params.get("response_type") {
        None => {
            return Err(redirect_error(
                "invalid_request",
                "response_type is required",
            ));
        }
        Some("code") => {}
        Some(_) => {
            return Err(redirect_error(
                "unsupported_response_type",
                "only response_type=code is supported",
            ));
        }
    }
    // The integration's own scopes bound the request; without one it gets all of them
    // (RFC 6749 §3.3 lets the server apply a pre-defined default).
    let allowed = &client.settings.scopes;
    let invalid_scope = || {
        redirect_error(
            "invalid_scope",
            "a requested scope is not allowed for this client",
        )
    };
    let requested =
        Scope::parse(params.get("scope").unwrap_or_default()).map_err(|_| invalid_scope())?;
    if requested.tokens().any(|scope| !allowed.allows(scope)) {
        return Err(invalid_scope());
    }
    let scope = if requested.is_empty() {
        Scope::from_tokens(allowed.0.iter().map(String::as_str))
    } else {
        requested
    };
    let code_challenge = match (
        params.get("code_challenge"),
        params.get("code_challenge_method"),
    ) {
        (Some(challenge), method) => {
            if pkce::validate_challenge(challenge, method).is_err() {
                return Err(redirect_error(
                    "invalid_request",
                    "code_challenge must be S256 and 43 base64url characters",
                ));
            }
            Some(challenge.to_owned())
        }
        (None, Some(_)) => {
            return Err(redirect_error(
                "invalid_request",
                "code_challenge_method without code_challenge",
            ));
        }
        (None, None) if client.settings.pkce_required => {
            return Err(redirect_error(
                "invalid_request",
                "code_challenge is required",
            ));
        }
        (None, None) => None,
    };
    Ok(AuthorizationRequest {
        redirect_uri,
        state,
        scope,
        code_challenge,
        user_locale: params.get("user_locale").map(str::to_owned),
        raw: raw.to_owned(),
        client,
    })
}

/// What a signed-in user's valid authorization request leads to.
#[derive(Debug)]
pub enum NextStep {
    /// Consent for this scope is remembered: back to the platform with a code, at this
    /// location.
    Code(String),
    /// Ask for consent.
    Consent(UserRecord),
    /// The session's user no longer exists: sign in again.
    SignIn,
}

/// The next step for `user_id`, signed in, with `request`.
pub async fn next_step(
    app: &App,
    request: &AuthorizationRequest,
    user_id: &str,
) -> Result<NextStep, AuthorizeError> {
    let Some(user) = app.store.get_user(user_id).await? else {
        return Ok(NextStep::SignIn);
    };
    let consented = app.store.get_consent(&user.id, &request.client.id).await?;
    if consented.is_some_and(|granted| request.scope.is_subset_of(&Scope::from_stored(&granted))) {
        return issue_code(app, request, &user).map(NextStep::Code);
    }
    Ok(NextStep::Consent(user))
}

/// `user_id` agreed to link: remembers the consent and issues the code. `None` when the
/// user no longer exists.
pub async fn agree(
    app: &App,
    request: &AuthorizationRequest,
    user_id: &str,
) -> Result<Option<String>, AuthorizeError> {
    let Some(user) = app.store.get_user(user_id).await? else {
        return Ok(None);
    };
    app.store
        .put_consent(&user.id, &request.client.id, request.scope.as_str())
        .await?;
    issue_code(app, request, &user).map(Some)
}

/// Where the platform goes when the user declines (RFC 6749 §4.1.2.1 `access_denied`).
pub fn declined(request: &AuthorizationRequest) -> String {
    request.redirect_uri.with_query(&[
        ("error", "access_denied"),
        ("error_description", "the user declined"),
        ("state", request.state.as_str()),
    ])
}

/// Where an error goes back to the platform, with `error` and the request's `state`.
pub fn error_location(
    redirect_uri: &RedirectUri,
    error: &str,
    description: &str,
    state: Option<&str>,
) -> String {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        params.push(("state", state));
    }
    redirect_uri.with_query(&params)
}

/// Signs a code for `user` and returns the redirect location carrying it with `state`.
pub fn issue_code(
    app: &App,
    request: &AuthorizationRequest,
    user: &UserRecord,
) -> Result<String, AuthorizeError> {
    let now = app.clock.now();
    let new_id = || grants::new_id(&*app.random).map_err(|_| AuthorizeError::Unavailable);
    let claims = CodeClaims {
        iss: app.issuer.clone(),
        aud: request.client.id.clone(),
        sub: user.id.clone(),
        exp: now + app.oauth.code_ttl_secs,
        iat: now,
        jti: new_id()?,
        rdh: secrets::sha256_hex(request.redirect_uri.as_str().as_bytes()),
        scope: request.scope.as_str().to_owned(),
        gid: new_id()?,
        pkce: request.code_challenge.clone(),
    };
    let code = app
        .keyring
        .load()
        .sign(TokenKind::AuthorizationCode, &claims)
        .map_err(|error| {
            tracing::error!(%error, "cannot sign an authorization code");
            AuthorizeError::Unavailable
        })?;
    tracing::info!(client_id = %request.client.id, "authorization code issued");
    Ok(request
        .redirect_uri
        .with_query(&[("code", code.as_str()), ("state", request.state.as_str())]))
}
