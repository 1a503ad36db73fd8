//! Reading request bodies within a per-route size limit. hyper itself imposes none, so
//! every handler that reads a body goes through [`read_limited`].

use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body (or its announced `Content-Length`) exceeds the route's limit: answer 413.
    #[error("request body larger than {limit} bytes")]
    TooLarge {
        /// The route's limit in bytes.
        limit: usize,
    },
    /// The client stopped sending or the connection failed.
    #[error("request body could not be read")]
    Interrupted,
}

/// Reads the whole body of `request`, refusing more than `limit` bytes. An announced
/// `Content-Length` over the limit is refused before anything is read.
pub async fn read_limited(
    request: hyper::Request<Incoming>,
    limit: usize,
) -> Result<(hyper::http::request::Parts, Bytes), BodyError> {
    let (parts, body) = request.into_parts();
    let announced = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok((parts, collected.to_bytes())),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            Err(BodyError::TooLarge { limit })
        }
        Err(_) => Err(BodyError::Interrupted),
    }
}
