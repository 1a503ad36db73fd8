//! Reading request bodies within a per-route size limit and a memory budget. hyper itself
//! imposes neither, so every handler that reads a body goes through [`read_limited`].
//!
//! Before a byte of a body is read, the whole of what it may hold (its announced length, or
//! the route's limit when none is announced) is reserved from two budgets: its connection's,
//! which makes one client's streams wait for each other, and the server's, which answers 503
//! once the bodies of all clients together would exceed it. Reserving the whole amount up
//! front means no body ever waits half-read for budget another half-read body holds.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use hyper::body::{Body as _, Incoming};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    /// The server holds as many request bodies as its budget allows: answer 503.
    #[error("too many request bodies in flight")]
    Busy,
}

/// The memory request bodies may take: one budget per connection and one for the server.
/// The HTTP layer puts one into every request's extensions.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    connection: Arc<Semaphore>,
    connection_bytes: usize,
    server: Arc<Semaphore>,
    server_bytes: usize,
}

impl BodyBudget {
    /// The server-wide budget of `bytes`, shared by every connection.
    pub fn server(bytes: usize) -> Arc<Semaphore> {
        Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS)))
    }

    /// A budget of `connection_bytes` for one connection, inside `server` (of `server_bytes`).
    pub fn for_connection(
        server: Arc<Semaphore>,
        server_bytes: usize,
        connection_bytes: usize,
    ) -> Self {
        Self {
            connection: Arc::new(Semaphore::new(connection_bytes.min(Semaphore::MAX_PERMITS))),
            connection_bytes,
            server,
            server_bytes,
        }
    }

    /// Reserves `bytes` for one body: waits for the connection's budget, then takes the
    /// server's or fails with [`BodyError::Busy`]. An amount over either budget is cut to it,
    /// so that a body the route allows is never refused outright.
    async fn reserve(&self, bytes: usize) -> Result<Reservation, BodyError> {
        let bytes = bytes.min(self.connection_bytes).min(self.server_bytes);
        let permits = u32::try_from(bytes).map_err(|_| BodyError::Busy)?;
        let connection = Arc::clone(&self.connection)
            .acquire_many_owned(permits)
            .await
            .map_err(|_closed| BodyError::Busy)?;
        let server = Arc::clone(&self.server)
            .try_acquire_many_owned(permits)
            .map_err(|_exhausted| BodyError::Busy)?;
        crate::metrics::record_body_bytes_reserved(bytes, true);
        Ok(Reservation {
            bytes,
            _connection: connection,
            _server: server,
        })
    }
}

/// Budget held by a body while it is read and handled.
struct Reservation {
    bytes: usize,
    _connection: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        crate::metrics::record_body_bytes_reserved(self.bytes, false);
    }
}

/// Reads the whole body of `request`, refusing more than `limit` bytes. An announced
/// `Content-Length` over the limit is refused before anything is read. When the request
/// carries a [`BodyBudget`], the body's size is reserved from it first and stays reserved
/// until the returned request parts are dropped.
pub async fn read_limited(
    request: hyper::Request<Incoming>,
    limit: usize,
) -> Result<(hyper::http::request::Parts, Bytes), BodyError> {
    let (mut parts, body) = request.into_parts();
    let announced = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    // hyper knows the exact size of a body with a `Content-Length` or none at all (an
    // HTTP/2 request whose headers end the stream); anything else may use the whole limit.
    let most = body.size_hint().exact().map_or(limit, |exact| {
        usize::try_from(exact).unwrap_or(limit).min(limit)
    });
    if most > 0
        && let Some(budget) = parts.extensions.remove::<BodyBudget>()
    {
        let reservation = budget.reserve(most).await?;
        parts.extensions.insert(ReservationHolder {
            _reservation: Arc::new(reservation),
        });
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok((parts, collected.to_bytes())),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            Err(BodyError::TooLarge { limit })
        }
        Err(_) => Err(BodyError::Interrupted),
    }
}

/// Keeps a body's reservation alive in the request's extensions (which must be `Clone`)
/// for as long as the request is handled.
#[derive(Clone)]
struct ReservationHolder {
    _reservation: Arc<Reservation>,
}
