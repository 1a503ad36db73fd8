//! Sign-in through the integrator's own accounts: upstream identity providers.
//!
//! | module | owns |
//! |---|---|
//! | [`providers`] | the provider records the operator registers: ids, settings, removal |
//! | [`login`] | one sign-in through a provider: the login state bound to the browser, the redirect to the provider, the callback's checks |
//! | [`handoff`] | verifying the signed assertion of a login hand-off |
//! | [`key_sets`] | the providers' and integrators' key sets, cached per URL and fetched again for unknown keys |
//! | [`oidc`] | the OpenID Connect relying party (discovery, code redemption, `id_token` checks) |
//! | [`accounts`] | mapping a provider's (provider, subject) to a linkd user, created just in time |
//! | [`claims`] | the claims a provider vouches for |
//!
//! Whichever way the person signed in, the result is a linkd user and a session; linkd's own
//! consent page, codes and tokens follow as after a password sign-in. Nothing here speaks
//! HTTP: [`crate::web::signin_upstream`] turns outcomes and [`SignInFailure`]s into answers.

pub mod accounts;
pub mod claims;
pub mod handoff;
pub mod key_sets;
pub mod login;
pub mod oidc;
pub mod providers;

/// Why a sign-in through a provider ended without a session, as the person is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInFailure {
    /// The provider did not answer: try again later (503).
    Unavailable {
        /// The provider's display name.
        name: String,
    },
    /// The provider's answer was refused (a bad assertion or token, no usable email).
    Failed {
        /// The provider's display name.
        name: String,
    },
    /// The person cancelled at the provider (the account page's sign-in; the linking flow
    /// sends `access_denied` back to the platform instead).
    Denied {
        /// The provider's display name.
        name: String,
    },
    /// No sign-in in progress matches: it expired, was used, or began in another browser.
    Expired,
    /// The provider's email belongs to a linkd user not signed in through this provider.
    EmailTaken {
        /// The email address.
        email: String,
        /// Who to ask for help.
        company: String,
    },
    /// linkd's store or random generator failed (503).
    ServiceUnavailable,
}

impl SignInFailure {
    /// The page's message: its id in linkd's translations (`src/pages/locales`) and the
    /// values of its variables.
    pub fn message(&self) -> (&'static str, Vec<(&'static str, &str)>) {
        match self {
            Self::Unavailable { name } => ("provider-unavailable", vec![("name", name)]),
            Self::Failed { name } => ("provider-failed", vec![("name", name)]),
            Self::Denied { name } => ("provider-denied", vec![("name", name)]),
            Self::Expired => ("signin-expired", Vec::new()),
            Self::EmailTaken { email, company } => (
                "provider-email-taken",
                vec![("email", email), ("company", company)],
            ),
            Self::ServiceUnavailable => ("service-unavailable", Vec::new()),
        }
    }

    /// The failure's kind, for logs: never the email or a provider's answer.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "provider_unavailable",
            Self::Failed { .. } => "provider_failed",
            Self::Denied { .. } => "provider_denied",
            Self::Expired => "signin_expired",
            Self::EmailTaken { .. } => "email_taken",
            Self::ServiceUnavailable => "service_unavailable",
        }
    }

    /// Whether trying again later may succeed (a 503 page).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::ServiceUnavailable)
    }
}

impl From<crate::store::StoreError> for SignInFailure {
    fn from(error: crate::store::StoreError) -> Self {
        tracing::warn!(%error, "store failed during a sign-in through an identity provider");
        crate::metrics::record_store_error("signin_upstream");
        Self::ServiceUnavailable
    }
}

impl From<crate::secrets::RandomUnavailable> for SignInFailure {
    fn from(_: crate::secrets::RandomUnavailable) -> Self {
        Self::ServiceUnavailable
    }
}
