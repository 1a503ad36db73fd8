//! OAuth scopes (RFC 6749 §3.3): a list of space-delimited, case-sensitive tokens, each
//! `1*NQCHAR` (printable ASCII without `"` and `\`). Parsed once into [`Scope`], which keeps
//! the request's order, drops repeats and joins with single spaces, so that every later
//! comparison is on tokens, never on strings split again.

use std::fmt;

/// Why a scope string is not a scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a scope token contains a character RFC 6749 does not allow")]
pub struct ScopeError;

/// A normalised scope: tokens in first-seen order, none repeated, joined by one space.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope(String);

/// Whether `c` may appear in a scope token (`NQCHAR`).
pub fn is_scope_char(c: char) -> bool {
    matches!(c, '\x21' | '\x23'..='\x5B' | '\x5D'..='\x7E')
}

impl Scope {
    /// Parses a space-delimited scope; empty is allowed (no scope asked for).
    pub fn parse(value: &str) -> Result<Self, ScopeError> {
        let mut tokens: Vec<&str> = Vec::new();
        for token in value.split(' ').filter(|token| !token.is_empty()) {
            if !token.chars().all(is_scope_char) {
                return Err(ScopeError);
            }
            if !tokens.contains(&token) {
                tokens.push(token);
            }
        }
        Ok(Self(tokens.join(" ")))
    }

    /// A scope linkd itself stored after parsing it; read back without a second check.
    pub fn from_stored(value: &str) -> Self {
        Self::parse(value).unwrap_or_else(|_| Self(value.to_owned()))
    }

    /// A scope of `tokens`, each already valid.
    pub fn from_tokens<'a>(tokens: impl IntoIterator<Item = &'a str>) -> Self {
        let mut scope = Self::default();
        for token in tokens {
            if !scope.contains(token) {
                if !scope.0.is_empty() {
                    scope.0.push(' ');
                }
                scope.0.push_str(token);
            }
        }
        scope
    }

    /// The scope as sent on the wire and stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tokens, in order.
    pub fn tokens(&self) -> impl Iterator<Item = &str> {
        self.0.split(' ').filter(|token| !token.is_empty())
    }

    /// Whether `token` is one of the scope's tokens.
    pub fn contains(&self, token: &str) -> bool {
        self.tokens().any(|own| own == token)
    }

    /// Whether every token of `self` is in `granted`.
    pub fn is_subset_of(&self, granted: &Scope) -> bool {
        self.tokens().all(|token| granted.contains(token))
    }

    /// Whether no token was asked for.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_normalises_spacing_and_repeats_keeping_order() {
        let scope = Scope::parse("  email openid  email devices ").unwrap();
        assert_eq!(scope.as_str(), "email openid devices");
        assert_eq!(
            scope.tokens().collect::<Vec<_>>(),
            ["email", "openid", "devices"]
        );
        assert!(Scope::parse("").unwrap().is_empty());
        assert_eq!(Scope::parse("read:x!~").unwrap().as_str(), "read:x!~");
    }

    #[test]
    fn characters_outside_nqchar_are_refused() {
        for bad in ["a\"b", "a\\b", "caf\u{e9}", "tab\there", "nul\0"] {
            assert_eq!(Scope::parse(bad), Err(ScopeError), "{bad:?}");
        }
    }

    #[test]
    fn subsets_compare_tokens_not_substrings() {
        let granted = Scope::parse("openid email devices").unwrap();
        assert!(Scope::parse("email").unwrap().is_subset_of(&granted));
        assert!(Scope::parse("").unwrap().is_subset_of(&granted));
        assert!(!Scope::parse("mail").unwrap().is_subset_of(&granted));
        assert!(
            !Scope::parse("email profile")
                .unwrap()
                .is_subset_of(&granted)
        );
        assert!(!granted.contains("emails"));
    }

    #[test]
    fn built_from_tokens_without_repeats() {
        assert_eq!(Scope::from_tokens(["a", "b", "a"]).as_str(), "a b");
    }
}
