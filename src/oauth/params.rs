//! Parsing of OAuth request parameters (query strings and form bodies) by RFC 6749 §3.1
//! and §3.2: parameters sent without a value are treated as omitted, and request or
//! response parameters must not be included more than once.

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
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_bytes(encoded).map_err(|_| ParamsError::Malformed)?;
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
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_bytes(encoded).map_err(|_| ParamsError::Malformed)?;
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
    fn percent_encoding_and_plus_decode() {
        let params = Params::parse(b"state=a%2Fb+c&x=%E2%9C%93").unwrap();
        assert_eq!(params.get("state"), Some("a/b c"));
        assert_eq!(params.get("x"), Some("\u{2713}"));
    }
}
