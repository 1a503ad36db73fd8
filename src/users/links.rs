//! A user's links as the account page shows them, and Unlink of one of them.
//!
//! Unlink is [`crate::grants::unlink`] (through [`App::unlink_grant`]), which kills the
//! grant before it removes the link: a store failure part-way leaves the link listed beside
//! a dead grant, never a link gone while its grant still works. Unlinking again finishes the
//! job, and so does listing, when it finds a link whose grant is already revoked (also after
//! `/revoke` or a replayed code).

use crate::app::App;
use crate::store::{LinkRecord, StoreError};

/// One live link and the name of its integration.
#[derive(Debug, Clone)]
pub struct LinkedIntegration {
    /// The link.
    pub link: LinkRecord,
    /// The integration's name, or its client id when it was removed.
    pub name: String,
}

/// The live links of `user_id`, finishing any unlink left half-done.
pub async fn live_links(app: &App, user_id: &str) -> Result<Vec<LinkedIntegration>, StoreError> {
    let mut live = Vec::new();
    for link in app.store.list_links(user_id).await? {
        // A link whose grant is already dead is an unlink left half-done: finish it rather
        // than list a link that no longer works.
        if app.store.is_grant_revoked(&link.grant_id).await? {
            app.unlink_grant(user_id, &link.client_id, &link.grant_id)
                .await?;
            continue;
        }
        let name = match app.store.get_client(&link.client_id).await? {
            Some(client) => client.name,
            None => link.client_id.clone(),
        };
        live.push(LinkedIntegration { link, name });
    }
    Ok(live)
}

/// Ends `user_id`'s link of grant `grant_id`; a grant that is not one of the user's links
/// (the form names any id it likes) changes nothing. The link ended, if any.
pub async fn unlink_own(
    app: &App,
    user_id: &str,
    grant_id: &str,
) -> Result<Option<LinkRecord>, StoreError> {
    let link = app
        .store
        .list_links(user_id)
        .await?
        .into_iter()
        .find(|link| link.grant_id == grant_id);
    if let Some(link) = &link {
        app.unlink_grant(user_id, &link.client_id, &link.grant_id)
            .await?;
        tracing::info!(client_id = %link.client_id, "user unlinked an integration");
    }
    Ok(link)
}
