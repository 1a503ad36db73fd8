//! When a user unlinks an integration, the platform forgets that user's devices: linkd queues
//! an unlink event in the store (so that a crash between the unlink and the delete loses
//! nothing) and this module carries the events out on linkd's own device graph, where the
//! agent user id is the integrator's user id.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{SharedStore, StoreResult};

/// Events handled per pass; the rest wait for the next one.
const BATCH: usize = 100;

/// Forgets the devices of users who unlinked; returns how many events were handled. An event
/// whose delete fails stays queued for the next pass.
pub async fn forget_unlinked_users(store: &SharedStore) -> StoreResult<usize> {
    let events = store.pending_unlink_events(BATCH).await?;
    let mut handled = 0;
    for event in events {
        // A client removed since the unlink has no devices left to forget.
        if let Some(client) = store.get_client(&event.client_id).await? {
            store
                .delete_agent_user(&client.project_id, &event.user_id)
                .await?;
        }
        store.ack_unlink_event(&event.id).await?;
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

/// Runs [`forget_unlinked_users`] every `interval`, for events whose first attempt (right
/// after the unlink) failed or that another instance queued before it stopped.
pub fn spawn_worker(store: SharedStore, interval: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(error) = forget_unlinked_users(&store).await {
                tracing::warn!(%error, "unlink events not handled; retrying later");
            }
        }
    })
}

/// Handles the queue now, in the background, after an unlink.
pub fn handle_soon(store: &SharedStore) {
    let store = Arc::clone(store);
    tokio::spawn(async move {
        if let Err(error) = forget_unlinked_users(&store).await {
            tracing::warn!(%error, "unlink events not handled; retrying later");
        }
    });
}
