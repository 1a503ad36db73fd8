//! Signing users in through the integrator's own identity system: the claims an upstream
//! provider vouches for, and linkd as the relying party of an OpenID Connect provider.

pub mod claims;
pub mod oidc;
