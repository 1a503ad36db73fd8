//! One sign-in through an upstream provider, from the redirect to the provider to the
//! callback that comes back.
//!
//! [`begin`] draws a random `state` (also the hand-off's `login_challenge`), `nonce` and PKCE
//! verifier, and stores them with the authorization request to resume (or the account page)
//! under a digest of a random browser-binding value, which the browser keeps in a short-lived
//! cookie ([`BINDING_COOKIE`]). [`finish`] takes that login state once — of two concurrent
//! callbacks only one gets it, and a replayed callback finds nothing — and accepts the
//! callback only when its `state` (or `login_challenge`) matches, in constant time, the one
//! stored for that browser. A callback from another browser has no cookie, or another one,
//! and is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::app::App;
use crate::identity::claims::ExternalClaims;
use crate::identity::handoff::{self, AssertionKey};
use crate::identity::oidc::{OidcError, OidcProviderConfig, ProviderAnswer};
use crate::identity::{SignInFailure, accounts, providers};
use crate::oauth::params::Params;
use crate::secrets;
use crate::store::{IdentityProviderKind, IdentityProviderRecord, LoginStateRecord, UserRecord};

/// The browser-binding cookie of a sign-in in progress.
pub const BINDING_COOKIE: &str = "__Host-linkd-upstream";
/// How long a sign-in at a provider may take, seconds.
pub const LOGIN_STATE_TTL_SECS: i64 = 600;

/// A sign-in that has begun: where to send the browser, and the cookie binding it.
#[derive(Debug)]
pub struct Started {
    /// The binding cookie's value.
    pub binding: String,
    /// The provider's authorization URL or the hand-off's login URL.
    pub location: String,
}

/// How a callback ended when it did not fail.
#[derive(Debug)]
pub enum Finished {
    /// The person is this user; resume `request` (empty: the account page).
    SignedIn {
        /// The mapped user.
        user: UserRecord,
        /// The authorization request to resume.
        request: String,
    },
    /// The person cancelled (or the provider refused) at the provider; the linking flow
    /// answers the platform `access_denied` for `request`.
    Denied {
        /// The authorization request to answer; empty for the account page.
        request: String,
        /// The provider's error code, for the log.
        error: String,
    },
}

fn oidc_config(kind: &IdentityProviderKind) -> Option<OidcProviderConfig<'_>> {
    match kind {
        IdentityProviderKind::Oidc {
            issuer,
            client_id,
            client_secret,
            scopes,
        } => Some(OidcProviderConfig {
            issuer,
            client_id,
            client_secret,
            scopes,
        }),
        IdentityProviderKind::Handoff { .. } => None,
    }
}

/// The S256 PKCE challenge of `verifier` (RFC 7636 §4.2).
pub fn s256_challenge(verifier: &str) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// The store key of a login state: a digest of the binding cookie, so that the store never
/// holds what the browser presents.
fn state_key(binding: &str) -> String {
    secrets::sha256_hex(format!("linkd-login-state:{binding}").as_bytes())
}

fn unavailable(provider: &IdentityProviderRecord, error: &OidcError) -> SignInFailure {
    match error {
        OidcError::Unavailable(reason) => {
            tracing::warn!(provider = %provider.id, %reason, "identity provider unavailable");
            SignInFailure::Unavailable {
                name: provider.name.clone(),
            }
        }
        OidcError::Rejected(reason) => {
            tracing::info!(provider = %provider.id, %reason, "identity provider answer refused");
            SignInFailure::Failed {
                name: provider.name.clone(),
            }
        }
    }
}

/// Begins a sign-in at `provider` that resumes `request` (an authorization request's raw
/// query, already validated; empty for the account page).
pub async fn begin(
    app: &App,
    provider: &IdentityProviderRecord,
    request: &str,
) -> Result<Started, SignInFailure> {
    let now = app.clock.now();
    let binding = app.random.token(32)?;
    let record = LoginStateRecord {
        provider_id: provider.id.clone(),
        state: app.random.token(32)?,
        nonce: app.random.token(32)?,
        code_verifier: app.random.token(48)?,
        request: request.to_owned(),
        created_at: now,
        expires_at: now + LOGIN_STATE_TTL_SECS,
    };
    let location = match &provider.kind {
        IdentityProviderKind::Oidc { .. } => {
            let config = oidc_config(&provider.kind).ok_or(SignInFailure::ServiceUnavailable)?;
            app.oidc
                .authorization_url(
                    &config,
                    &providers::callback_url(&app.issuer, &provider.id),
                    &record.state,
                    &record.nonce,
                    &s256_challenge(&record.code_verifier),
                )
                .await
                .map_err(|error| unavailable(provider, &error))?
        }
        IdentityProviderKind::Handoff { login_url, .. } => {
            format!("{login_url}?login_challenge={}", record.state)
        }
    };
    app.store
        .put_login_state(&state_key(&binding), &record, now)
        .await?;
    Ok(Started { binding, location })
}

/// The claims of a hand-off `assertion`, verified with the integrator's key: the stored
/// public key, or the integrator's JWKS, cached and fetched again when the assertion names a
/// key the cached set lacks.
async fn verify_assertion(
    app: &App,
    provider: &IdentityProviderRecord,
    public_key_pem: Option<&str>,
    jwks_url: Option<&str>,
    assertion: &str,
    expected: &handoff::Expectations<'_>,
) -> Result<ExternalClaims, SignInFailure> {
    let failed = || SignInFailure::Failed {
        name: provider.name.clone(),
    };
    let refused = |refusal: handoff::AssertionRefusal| {
        tracing::info!(provider = %provider.id, %refusal, "hand-off assertion refused");
        failed()
    };
    if let Some(pem) = public_key_pem {
        let key = AssertionKey::from_pem(pem).map_err(|reason| {
            tracing::error!(provider = %provider.id, %reason, "stored hand-off key unusable");
            failed()
        })?;
        return handoff::verify(assertion, &[key], expected).map_err(refused);
    }
    let Some(url) = jwks_url else {
        tracing::error!(provider = %provider.id, "hand-off provider has neither key nor JWKS URL");
        return Err(failed());
    };
    let fetch = || fetch_handoff_keys(app, provider, url);
    let keys = app.handoff_keys.get(url, fetch).await?;
    match handoff::verify(assertion, &keys, expected) {
        Err(refusal) if refusal.may_be_a_new_key() => {
            match app.handoff_keys.refetch(url, fetch).await? {
                Some(keys) => handoff::verify(assertion, &keys, expected).map_err(refused),
                None => Err(refused(refusal)),
            }
        }
        verified => verified.map_err(refused),
    }
}

/// The signature keys of the integrator's JWKS at `url`: each key linkd can use, the others
/// (encryption keys, kinds it does not know) left out; a set without one is refused.
async fn fetch_handoff_keys(
    app: &App,
    provider: &IdentityProviderRecord,
    url: &str,
) -> Result<Vec<AssertionKey>, SignInFailure> {
    let answer = app.outbound.get_json(url, None).await.map_err(|error| {
        tracing::warn!(provider = %provider.id, %error, "hand-off JWKS unavailable");
        SignInFailure::Unavailable {
            name: provider.name.clone(),
        }
    })?;
    let keys: Vec<AssertionKey> = answer["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["use"].as_str().is_none_or(|usage| usage == "sig"))
        .filter_map(|entry| serde_json::from_value(entry.clone()).ok())
        .filter_map(|jwk| AssertionKey::from_jwk(&jwk))
        .collect();
    if keys.is_empty() {
        tracing::warn!(provider = %provider.id, "hand-off JWKS holds no signature key linkd can use");
        return Err(SignInFailure::Failed {
            name: provider.name.clone(),
        });
    }
    Ok(keys)
}

/// Who the person asks for help: the company of the integration being linked, or the
/// provider's name on the account page.
async fn company_of(app: &App, request: &str, provider: &IdentityProviderRecord) -> String {
    let client_id = Params::parse(request.as_bytes())
        .ok()
        .and_then(|params| params.get("client_id").map(str::to_owned));
    let client = match client_id {
        Some(client_id) => app.store.get_client(&client_id).await.ok().flatten(),
        None => None,
    };
    client.map_or_else(
        || provider.name.clone(),
        |client| client.settings.company_name.unwrap_or(client.name),
    )
}

/// Finishes the sign-in at provider `provider_id` whose browser presents the binding cookie
/// `binding` and the callback parameters `params`.
pub async fn finish(
    app: &App,
    provider_id: &str,
    binding: Option<&str>,
    params: &Params,
) -> Result<Finished, SignInFailure> {
    let now = app.clock.now();
    let Some(binding) = binding.filter(|binding| !binding.is_empty()) else {
        return Err(SignInFailure::Expired);
    };
    let presented = params
        .get("state")
        .or_else(|| params.get("login_challenge"))
        .unwrap_or_default();
    let Some(login) = app.store.take_login_state(&state_key(binding), now).await? else {
        return Err(SignInFailure::Expired);
    };
    if login.provider_id != provider_id
        || !secrets::constant_time_eq(login.state.as_bytes(), presented.as_bytes())
    {
        return Err(SignInFailure::Expired);
    }
    let Some(provider) = app.store.get_identity_provider(provider_id).await? else {
        return Err(SignInFailure::Expired);
    };
    let config = oidc_config(&provider.kind);
    if let Some(error) = params.get("error") {
        // A refusal needs no discovery document (which may be out of reach): an `iss` naming
        // another issuer is a mix-up (RFC 9207), and linkd only ever uses a document whose
        // issuer is exactly the configured one.
        if let (Some(config), Some(iss)) = (&config, params.get("iss"))
            && iss != config.issuer
        {
            tracing::info!(provider = %provider.id, "identity provider refusal names another issuer");
            return Err(SignInFailure::Failed {
                name: provider.name.clone(),
            });
        }
        return Ok(Finished::Denied {
            request: login.request,
            error: error.chars().take(64).collect(),
        });
    }
    let failed = || SignInFailure::Failed {
        name: provider.name.clone(),
    };
    let claims: ExternalClaims = match &provider.kind {
        IdentityProviderKind::Oidc { .. } => {
            let config = config.ok_or(SignInFailure::ServiceUnavailable)?;
            let answer = ProviderAnswer {
                code: params.get("code").ok_or_else(failed)?,
                issuer: params.get("iss"),
            };
            app.oidc
                .finish(
                    &config,
                    &providers::callback_url(&app.issuer, &provider.id),
                    answer,
                    &login.code_verifier,
                    &login.nonce,
                    now,
                )
                .await
                .map_err(|error| unavailable(&provider, &error))?
        }
        IdentityProviderKind::Handoff {
            public_key_pem,
            jwks_url,
            ..
        } => {
            let assertion = params.get("assertion").ok_or_else(failed)?;
            let expected = handoff::Expectations {
                provider_id: &provider.id,
                audience: &app.issuer,
                challenge: &login.state,
                now,
                leeway: app.oauth.leeway_secs,
            };
            verify_assertion(
                app,
                &provider,
                public_key_pem.as_deref(),
                jwks_url.as_deref(),
                assertion,
                &expected,
            )
            .await?
        }
    };
    let company = company_of(app, &login.request, &provider).await;
    let user = accounts::user_for(app, &provider, &claims, &company).await?;
    Ok(Finished::SignedIn {
        user,
        request: login.request,
    })
}
