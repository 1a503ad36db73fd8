//! HTML pages on the wire: a rendered view with its content type, no caching, and the
//! Content-Security-Policy of [`crate::pages::content_security_policy`]; the stylesheet.

use askama::Template;

use crate::http::{HttpResponse, response};
use crate::pages::{STYLESHEET, content_security_policy};

/// An HTML page response with the pages' security headers.
pub fn html(
    status: hyper::StatusCode,
    page: &impl Template,
    redirect_origin: Option<&str>,
) -> HttpResponse {
    let body = match page.render() {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(%error, "page rendering failed");
            return response::text(hyper::StatusCode::INTERNAL_SERVER_ERROR, "internal error");
        }
    };
    let mut answer = response::with_body(status, "text/html; charset=utf-8", body);
    if let Ok(policy) =
        hyper::header::HeaderValue::from_str(&content_security_policy(redirect_origin))
    {
        answer
            .headers_mut()
            .insert(hyper::header::CONTENT_SECURITY_POLICY, policy);
    }
    answer
}

/// `GET /assets/linkd.css`.
pub fn stylesheet() -> HttpResponse {
    let mut answer =
        response::with_body(hyper::StatusCode::OK, "text/css; charset=utf-8", STYLESHEET);
    answer.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("public, max-age=3600"),
    );
    answer
}
