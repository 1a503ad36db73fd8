//! Cookies of the sign-in pages on the wire: reading one from the request's `Cookie`
//! headers, and the `Set-Cookie` value of a `__Host-` cookie with every protection
//! ([`crate::sessions`] says why each is needed).

use hyper::HeaderMap;
use hyper::header::{COOKIE, HeaderValue};

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A `Set-Cookie` value for a `__Host-` cookie living `max_age` seconds (0 deletes it).
pub fn set_cookie(name: &str, value: &str, max_age: i64) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age={max_age}"
    ))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::SESSION_COOKIE;

    #[test]
    fn cookies_are_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            COOKIE,
            HeaderValue::from_static("a=1; __Host-linkd-session=abc"),
        );
        headers.append(COOKIE, HeaderValue::from_static("b=2"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "c"), None);
    }

    #[test]
    fn session_cookies_carry_every_protection() {
        let value = set_cookie(SESSION_COOKIE, "v", 60).unwrap();
        let text = value.to_str().unwrap();
        for part in ["Secure", "HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=60"] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
        assert!(!text.contains("Domain"));
    }
}
