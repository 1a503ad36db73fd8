//! Signed tokens: the keyring in the keys directory and JWT signing and verification
//! through it.

pub mod bearer;
pub mod jwt;
pub mod keyring;
pub mod verified;

pub use jwt::{Expectations, TokenError, TokenKind};
