//! When a user unlinks an integration, the device graph forgets that user's devices: linkd
//! queues an unlink event in the store (so that a crash between the unlink and the delete
//! loses nothing) and this module carries the events out with `agentUsers.delete`, on linkd's
//! own graph or on an external one (`serve --device-graph-url` and `--device-graph-key-file`),
//! through the same [`DeviceGraphClient`]. The agent user id is the one the integration's
//! fulfilment answered SYNC with for that user, or the user's linkd id if it never did.

use std::sync::Arc;
use std::time::Duration;

use super::graph_client::DeviceGraphClient;
use crate::app::App;
use crate::store::{StoreError, UnlinkEvent};

/// Events handled per pass; the rest wait for the next one.
const BATCH: usize = 100;

/// What carrying out unlink events needs, detached from a request.
#[derive(Clone, Debug)]
pub struct UnlinkWorker {
    app: Arc<App>,
    device_graph: Arc<DeviceGraphClient>,
}

impl UnlinkWorker {
    /// The worker for `app`'s store, telling `device_graph` to forget users.
    pub fn new(app: &Arc<App>, device_graph: Arc<DeviceGraphClient>) -> Self {
        Self {
            app: Arc::clone(app),
            device_graph,
        }
    }

    /// Forgets the devices of users who unlinked; returns how many events were handled. An
    /// event whose delete fails stays queued for the next pass.
    pub async fn forget_unlinked_users(&self) -> Result<usize, String> {
        let store_failed = |error: StoreError| error.to_string();
        let store = &self.app.store;
        let events = store
            .pending_unlink_events(BATCH)
            .await
            .map_err(store_failed)?;
        let pending = events.len();
        let mut handled = 0;
        let outcome = async {
            for event in events {
                let agent_user_id = self.agent_user_id(&event).await.map_err(store_failed)?;
                self.device_graph
                    .delete_agent_user(&self.app, &event.client_id, &agent_user_id)
                    .await
                    .map_err(|error| format!("agentUsers.delete {error}"))?;
                store
                    .ack_unlink_event(&event.id)
                    .await
                    .map_err(store_failed)?;
                handled += 1;
            }
            Ok::<(), String>(())
        }
        .await;
        crate::metrics::record_unlink_events("handled", handled);
        crate::metrics::record_unlink_queue_depth(pending - handled);
        if let Err(error) = outcome {
            crate::metrics::record_unlink_events("failed", 1);
            return Err(error);
        }
        if handled > 0 {
            tracing::info!(
                events = handled,
                "device graph forgot the users who unlinked"
            );
        }
        Ok(handled)
    }

    /// The agent user id the integration's fulfilment answered SYNC with for the user who
    /// unlinked, or the user's linkd id when it never answered.
    async fn agent_user_id(&self, event: &UnlinkEvent) -> Result<String, StoreError> {
        let store = &self.app.store;
        let recorded = match store.get_client(&event.client_id).await? {
            Some(client) => {
                store
                    .agent_user_of_user(&client.project_id, &event.user_id)
                    .await?
            }
            None => None,
        };
        Ok(recorded.unwrap_or_else(|| event.user_id.clone()))
    }

    async fn pass(&self) {
        if let Err(error) = self.forget_unlinked_users().await {
            tracing::warn!(%error, "unlink events not handled; retrying later");
        }
    }

    /// Handles the queue at once after each unlink of this instance ([`App::unlink_grant`]),
    /// and every `interval` for events whose first attempt failed or that another instance
    /// queued before it stopped.
    pub fn spawn(self, interval: Duration) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = self.app.unlink_queued() => {}
                }
                self.pass().await;
            }
        })
    }
}
