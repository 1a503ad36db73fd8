//! The device-graph API over HTTP: the caller authenticated from the request head, the
//! body handed to the method, and every answer in the platform API's conventions (errors as
//! `{"error":{"code","message","status"}}`, with `WWW-Authenticate` on 401 and
//! `Retry-After` on 503).

use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Request, StatusCode};

use crate::app::App;
use crate::devicegraph::{self, ApiError, agent_users, auth, request_sync, state, sync};
use crate::http::{HttpResponse, response};
use crate::store::ServiceAccountRecord;

/// A device-graph method, as the route table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `devices.sync`.
    Sync,
    /// `devices.requestSync`.
    RequestSync,
    /// `devices.reportStateAndNotification`.
    ReportState,
    /// `devices.query`.
    Query,
    /// `agentUsers.delete`.
    DeleteAgentUser,
}

/// The checks that need only the request head: the caller's credential and, when the
/// method takes a body, its media type.
pub async fn admit(
    app: &App,
    headers: &HeaderMap,
    takes_body: bool,
) -> Result<ServiceAccountRecord, HttpResponse> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|value: &HeaderValue| value.to_str().ok())
    };
    let account = auth::authenticate(app, text(AUTHORIZATION))
        .await
        .map_err(|error| api_error(&error))?;
    if takes_body {
        devicegraph::require_json(text(CONTENT_TYPE)).map_err(|error| api_error(&error))?;
    }
    Ok(account)
}

/// Answers `request` to `method`, made by `caller`.
pub async fn answer(
    app: &App,
    method: Method,
    caller: &ServiceAccountRecord,
    request: &Request<Bytes>,
) -> HttpResponse {
    let body = request.body();
    let outcome = match method {
        Method::Sync => sync::sync(app, caller, body).await,
        Method::RequestSync => request_sync::request_sync(app, caller, body).await,
        Method::ReportState => state::report_state(app, caller, body).await,
        Method::Query => state::query(app, caller, body).await,
        Method::DeleteAgentUser => {
            agent_users::delete_agent_user(app, caller, request.uri().path()).await
        }
    };
    match outcome {
        Ok(body) => response::json(StatusCode::OK, &body),
        Err(error) => api_error(&error),
    }
}

/// The wire form of an API error.
pub fn api_error(error: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = response::json(
        status,
        &serde_json::json!({
            "error": {
                "code": status.as_u16(),
                "message": error.message,
                "status": error.canonical,
            }
        }),
    );
    match error.canonical {
        "UNAUTHENTICATED" => {
            answer.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"linkd\", error=\"invalid_token\""),
            );
        }
        "UNAVAILABLE" => {
            answer
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(5u32));
        }
        _ => {}
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind of API error: its status, canonical name and the header it needs.
    #[test]
    fn every_api_error_has_its_wire_form() {
        let cases = [
            (ApiError::invalid_argument("x"), 400, "INVALID_ARGUMENT"),
            (ApiError::unauthenticated("x"), 401, "UNAUTHENTICATED"),
            (ApiError::permission_denied("x"), 403, "PERMISSION_DENIED"),
            (ApiError::not_found("x"), 404, "NOT_FOUND"),
            (ApiError::unsupported_media_type(), 415, "INVALID_ARGUMENT"),
            (
                ApiError::failed_precondition("x"),
                400,
                "FAILED_PRECONDITION",
            ),
            (ApiError::unavailable(), 503, "UNAVAILABLE"),
        ];
        for (error, status, canonical) in cases {
            let answer = api_error(&error);
            assert_eq!(answer.status().as_u16(), status, "{error:?}");
            assert_eq!(error.canonical, canonical, "{error:?}");
            assert_eq!(
                answer.headers().contains_key(WWW_AUTHENTICATE),
                status == 401
            );
            assert_eq!(answer.headers().contains_key(RETRY_AFTER), status == 503);
        }
    }
}
