//! The device graph (the interface's `devices.sync`; DESIGN.md "The device graph"): the
//! devices of every agent user per integration project, answered to the project's service
//! accounts in the platform API's conventions (camelCase JSON, errors as
//! `{"error":{"code","message","status"}}`).

pub mod auth;
pub mod devices;
pub mod sync;

use hyper::StatusCode;
use hyper::header::{HeaderValue, WWW_AUTHENTICATE};

use crate::http::{HttpResponse, response};

/// An API error in the platform's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Canonical status name (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, …).
    pub canonical: &'static str,
    /// What went wrong, for the integrator.
    pub message: String,
}

impl ApiError {
    /// 400 `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            canonical: "INVALID_ARGUMENT",
            message: message.into(),
        }
    }

    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            canonical: "UNAUTHENTICATED",
            message: message.into(),
        }
    }

    /// 403 `PERMISSION_DENIED`.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            canonical: "PERMISSION_DENIED",
            message: message.into(),
        }
    }

    /// 404 `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            canonical: "NOT_FOUND",
            message: message.into(),
        }
    }

    /// 503 `UNAVAILABLE`.
    pub fn unavailable() -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            canonical: "UNAVAILABLE",
            message: "The service is currently unavailable.".to_owned(),
        }
    }

    /// The wire form.
    pub fn response(&self) -> HttpResponse {
        let mut answer = response::json(
            self.status,
            &serde_json::json!({
                "error": {
                    "code": self.status.as_u16(),
                    "message": self.message,
                    "status": self.canonical,
                }
            }),
        );
        match self.canonical {
            "UNAUTHENTICATED" => {
                answer.headers_mut().insert(
                    WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"linkd\", error=\"invalid_token\""),
                );
            }
            "UNAVAILABLE" => {
                answer
                    .headers_mut()
                    .insert(hyper::header::RETRY_AFTER, HeaderValue::from(5u32));
            }
            _ => {}
        }
        answer
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        tracing::warn!(%error, "store failed in the device-graph API");
        crate::metrics::record_store_error("devicegraph");
        Self::unavailable()
    }
}
