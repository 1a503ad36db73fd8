//! When a user unlinks an integration, the device graph forgets that user's devices: linkd
//! queues an unlink event in the store (so that a crash between the unlink and the delete
//! loses nothing) and this module carries the events out — on linkd's own graph, or with
//! `agentUsers.delete` on an external one (`serve --device-graph-url` and
//! `--device-graph-key-file`). The agent user id is the integrator's user id.

use std::sync::Arc;
use std::time::Duration;

use super::remote::RemoteGraph;
use crate::app::App;
use crate::clock::SharedClock;
use crate::store::{SharedStore, StoreError};

/// Events handled per pass; the rest wait for the next one.
const BATCH: usize = 100;

/// What carrying out unlink events needs, detached from a request.
#[derive(Clone)]
pub struct UnlinkWorker {
    store: SharedStore,
    clock: SharedClock,
    remote: Option<Arc<RemoteGraph>>,
}

impl std::fmt::Debug for UnlinkWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UnlinkWorker")
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

impl UnlinkWorker {
    /// The worker for `app`'s store and device graph.
    pub fn new(app: &App) -> Self {
        Self {
            store: Arc::clone(&app.store),
            clock: Arc::clone(&app.clock),
            remote: app.remote_device_graph.clone(),
        }
    }

    /// Forgets the devices of users who unlinked; returns how many events were handled. An
    /// event whose delete fails stays queued for the next pass.
    pub async fn forget_unlinked_users(&self) -> Result<usize, String> {
        let store_failed = |error: StoreError| error.to_string();
        let events = self
            .store
            .pending_unlink_events(BATCH)
            .await
            .map_err(store_failed)?;
        let mut handled = 0;
        for event in events {
            match &self.remote {
                Some(remote) => remote
                    .delete_agent_user(&event.user_id, self.clock.now())
                    .await
                    .map_err(|error| error.to_string())?,
                None => {
                    // A client removed since the unlink has no devices left to forget.
                    if let Some(client) = self
                        .store
                        .get_client(&event.client_id)
                        .await
                        .map_err(store_failed)?
                    {
                        self.store
                            .delete_agent_user(&client.project_id, &event.user_id)
                            .await
                            .map_err(store_failed)?;
                    }
                }
            }
            self.store
                .ack_unlink_event(&event.id)
                .await
                .map_err(store_failed)?;
            handled += 1;
        }
        if handled > 0 {
            tracing::info!(
                events = handled,
                "device graph forgot the users who unlinked"
            );
        }
        Ok(handled)
    }

    async fn pass(&self) {
        if let Err(error) = self.forget_unlinked_users().await {
            tracing::warn!(%error, "unlink events not handled; retrying later");
        }
    }

    /// Handles the queue every `interval`, for events whose first attempt (right after the
    /// unlink) failed or that another instance queued before it stopped.
    pub fn spawn(self, interval: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                self.pass().await;
            }
        })
    }

    /// Handles the queue now, in the background, after an unlink.
    pub fn handle_soon(self) {
        tokio::spawn(async move { self.pass().await });
    }
}
