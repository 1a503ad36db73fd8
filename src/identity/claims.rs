//! The claims an upstream identity provider vouches for, whichever way they arrived (a verified
//! OpenID Connect `id_token` completed by the provider's userinfo, or a verified hand-off
//! assertion).

/// Who the provider says signed in. `subject` is the provider's stable id for the person
/// (`sub`); everything else is profile data that may change between sign-ins.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExternalClaims {
    /// The provider's `sub`: stable, unique per provider.
    pub subject: String,
    /// `email`, if the provider shared it.
    pub email: Option<String>,
    /// `email_verified`, if the provider said.
    pub email_verified: Option<bool>,
    /// `name`.
    pub name: Option<String>,
    /// `given_name`.
    pub given_name: Option<String>,
    /// `family_name`.
    pub family_name: Option<String>,
    /// `picture` (a URL).
    pub picture: Option<String>,
}
