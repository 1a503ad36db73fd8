//! Parsing of OAuth request parameters (query strings and form bodies) by RFC 6749 §3.1
//! and §3.2: parameters sent without a value are treated as omitted, and request or
//! response parameters must not be included more than once.
//!
//! Decoding is strict: a `%` not followed by two hex digits, or a name or value that is not
//! UTF-8 once decoded (`%C3%28`, a raw 0xFF byte), makes the whole set malformed. Decoding
//! such input leniently would hand the rest of linkd a value the client never sent (with
//! U+FFFD in place of the bad bytes).

use std::collections::HashMap;

/// Parameters of one request, each name present at most once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    values: HashMap<String, String>,
}

/// Why a parameter set was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// The named parameter appears more than once (RFC 6749 §3.1).
    #[error("parameter {0} is repeated")]
    Repeated(String),
    /// The input is not `application/x-www-form-urlencoded`.
    #[error("malformed parameters")]
    Malformed,
}

impl Params {
    /// Parses `application/x-www-form-urlencoded` text (a query string or a form body).
    /// Empty values are dropped as absent; a repeated name with a value is an error.
    pub fn parse(encoded: &[u8]) -> Result<Self, ParamsError> {
        let pairs = decode_pairs(encoded)?;
        let mut values = HashMap::with_capacity(pairs.len());
        for (name, value) in pairs {
            if value.is_empty() {
                continue;
            }
            if values.insert(name.clone(), value).is_some() {
                return Err(ParamsError::Repeated(name));
            }
        }
        Ok(Self { values })
    }

    /// Parses like [`Params::parse`] but keeps going past repeated names, returning them
    /// (the first value of each is kept): the authorization endpoint must know whether
    /// `client_id` or `redirect_uri` were repeated before it may redirect an error.
    pub fn parse_reporting_repeats(encoded: &[u8]) -> Result<(Self, Vec<String>), ParamsError> {
        let pairs = decode_pairs(encoded)?;
        let mut values = HashMap::with_capacity(pairs.len());
        let mut repeated = Vec::new();
        for (name, value) in pairs {
            if value.is_empty() {
                continue;
            }
            match values.entry(name) {
                std::collections::hash_map::Entry::Occupied(entry) => {
                    if !repeated.contains(entry.key()) {
                        repeated.push(entry.key().clone());
                    }
                }
                std::collections::hash_map::Entry::Vacant(entry) => {
                    entry.insert(value);
                }
            }
        }
        Ok((Self { values }, repeated))
    }

    /// The value of `name`, if present and non-empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether `name` was sent with a value.
    pub fn contains(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }
}

/// The `name=value` pairs of `application/x-www-form-urlencoded` input, decoded strictly
/// (the WHATWG URL standard's parser, except that it refuses what it would replace).
fn decode_pairs(encoded: &[u8]) -> Result<Vec<(String, String)>, ParamsError> {
    encoded
        .split(|byte| *byte == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let mut parts = pair.splitn(2, |byte| *byte == b'=');
            let name = parts.next().unwrap_or_default();
            let value = parts.next().unwrap_or_default();
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

/// One form-encoded name or value: `+` is a space, `%XX` a byte, and the bytes must be UTF-8.
fn decode(part: &[u8]) -> Result<String, ParamsError> {
    let mut escapes = part.iter().enumerate().filter(|(_, byte)| **byte == b'%');
    if escapes.any(|(at, _)| {
        !part
            .get(at + 1..at + 3)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    }) {
        return Err(ParamsError::Malformed);
    }
    let spaced: Vec<u8> = part
        .iter()
        .map(|byte| if *byte == b'+' { b' ' } else { *byte })
        .collect();
    percent_encoding::percent_decode(&spaced)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| ParamsError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_count_as_absent() {
        let params = Params::parse(b"a=1&b=&c").unwrap();
        assert_eq!(params.get("a"), Some("1"));
        assert_eq!(params.get("b"), None);
        assert!(!params.contains("c"));
    }

    #[test]
    fn repeated_parameters_are_refused_by_name() {
        assert_eq!(
            Params::parse(b"state=1&state=2"),
            Err(ParamsError::Repeated("state".into()))
        );
        // A repeat without a value is "omitted", not a repeat.
        assert!(Params::parse(b"state=1&state=").is_ok());
    }

    #[test]
    fn repeats_are_reported_by_name() {
        let (params, repeated) =
            Params::parse_reporting_repeats(b"a=1&b=2&a=3&b=&c=4&c=5").unwrap();
        assert_eq!(params.get("a"), Some("1"));
        assert_eq!(repeated, ["a", "c"]);
    }

    #[test]
    fn invalid_utf8_and_broken_escapes_are_malformed() {
        for input in [
            &b"state=%C3%28"[..],
            b"state=%FF",
            b"state=\xff",
            b"st%E2te=1",
            b"state=%ZZ",
            b"state=%4",
            b"state=100%",
        ] {
            assert_eq!(
                Params::parse(input),
                Err(ParamsError::Malformed),
                "{}",
                String::from_utf8_lossy(input)
            );
            assert!(Params::parse_reporting_repeats(input).is_err());
        }
        assert!(Params::parse(b"state=%25ZZ&&a=%c3%a9").is_ok());
    }

    #[test]
    fn percent_encoding_and_plus_decode() {
        let params = Params::parse(b"state=a%2Fb+c&x=%E2%9C%93").unwrap();
        assert_eq!(params.get("state"), Some("a/b c"));
        assert_eq!(params.get("x"), Some("\u{2713}"));
    }
}
