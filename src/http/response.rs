//! Small named constructors for the responses linkd sends, so that status, content type
//! and caching headers are decided in one place.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};

use super::HttpResponse;

const JSON: &str = "application/json";

/// A response with `status`, a body and its content type; not cacheable, also by HTTP/1.0
/// caches (`Pragma`), as RFC 6749 §5.1 asks of every token response, including the ones the
/// router makes before the endpoint sees the request (405, 413, timeouts).
pub fn with_body(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> HttpResponse {
    let mut response = hyper::Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// A JSON response; the value is serialised here so callers cannot forget the content type.
pub fn json(status: StatusCode, value: &serde_json::Value) -> HttpResponse {
    // Serialising a `Value` cannot fail: its keys are strings.
    with_body(status, JSON, serde_json::to_vec(value).unwrap_or_default())
}

/// A JSON document that clients may cache for `max_age_secs` (JWKS, discovery).
pub fn cacheable_json(body: impl Into<Bytes>, max_age_secs: u32) -> HttpResponse {
    let mut response = with_body(StatusCode::OK, JSON, body);
    response.headers_mut().remove(header::PRAGMA);
    if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={max_age_secs}")) {
        response.headers_mut().insert(header::CACHE_CONTROL, value);
    }
    response
}

/// A plain-text response.
pub fn text(status: StatusCode, body: impl Into<Bytes>) -> HttpResponse {
    with_body(status, "text/plain; charset=utf-8", body)
}

/// `{"error": code, "error_description": description}` with `status`.
pub fn error(status: StatusCode, code: &str, description: &str) -> HttpResponse {
    json(
        status,
        &serde_json::json!({ "error": code, "error_description": description }),
    )
}

/// 404 for a path no route serves.
pub fn not_found() -> HttpResponse {
    error(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

/// 405 naming the methods the route accepts in `Allow`.
pub fn method_not_allowed(allowed: &[Method]) -> HttpResponse {
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed for this endpoint",
    );
    let allow = allowed
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if let Ok(value) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// 413 for a body over the route's limit.
pub fn payload_too_large(limit: usize) -> HttpResponse {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_request",
        &format!("request body larger than {limit} bytes"),
    )
}

/// 503 with `Retry-After`, for a dependency that cannot answer now.
pub fn service_unavailable(description: &str, retry_after_secs: u32) -> HttpResponse {
    let mut response = error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        description,
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}
