//! The version of the Redis key layout, kept in Redis itself: `linkd:schema` holds
//! [`LAYOUT_VERSION`] of the linkd that first wrote there.
//!
//! A store checks the marker before its first command, and writes it when it is absent (a
//! new Redis, or one written before the marker existed: both hold layout 1). A marker this
//! linkd does not know — a newer layout, or anything that is not a version — is refused with
//! [`StoreError::Incompatible`], and nothing is written, so that a binary never writes keys in
//! a layout another binary sharing the Redis would misread.
//!
//! The check happens once per store: at connect, or — for a server that started before
//! Redis answered — before the first command that reaches Redis. A failure to reach Redis
//! is [`StoreError::Unavailable`] and the check is tried again on the next command.
//!
//! A release that changes the layout raises [`LAYOUT_VERSION`] and says in the changelog
//! how to move (docs/upgrading.md); one that only adds `#[serde(default)]` fields to records
//! keeps it.

use tokio::sync::OnceCell;

use super::{RedisStore, cmd};
use crate::store::{StoreError, StoreResult};

/// The key layout this linkd reads and writes (the table in [`super`]).
pub const LAYOUT_VERSION: u64 = 1;

/// Where the layout version is kept. No hash tag: one key, on whichever slot it hashes to.
pub const SCHEMA_KEY: &str = "linkd:schema";

/// Longest part of an unknown marker quoted in the refusal.
const QUOTED_MARKER_CHARS: usize = 40;

/// Whether the marker has been found acceptable, shared by every clone of a store.
#[derive(Debug, Default)]
pub(super) struct SchemaCheck(OnceCell<()>);

/// What a marker found in Redis means for this linkd.
pub(super) fn judge(marker: &str) -> StoreResult<()> {
    let advice = "Run the linkd that wrote it (or a newer one); see docs/upgrading.md";
    match marker.trim().parse::<u64>() {
        Ok(LAYOUT_VERSION) => Ok(()),
        Ok(version) if version > LAYOUT_VERSION => Err(StoreError::Incompatible(format!(
            "Redis holds linkd's key layout {version} ({SCHEMA_KEY}), newer than the layout {LAYOUT_VERSION} this linkd reads and writes: it was written by a newer linkd. {advice}"
        ))),
        Ok(version) => Err(StoreError::Incompatible(format!(
            "Redis holds linkd's key layout {version} ({SCHEMA_KEY}), which this linkd (layout {LAYOUT_VERSION}) cannot read. {advice}"
        ))),
        Err(_) => {
            let quoted: String = marker.chars().take(QUOTED_MARKER_CHARS).collect();
            Err(StoreError::Incompatible(format!(
                "{SCHEMA_KEY} holds {quoted:?}, not a key layout version: this Redis was not written by linkd, or was damaged. {advice}"
            )))
        }
    }
}

impl RedisStore {
    /// Checks the layout marker unless a clone of this store already has.
    pub(super) async fn ensure_schema(&self) -> StoreResult<()> {
        if self.schema.0.initialized() {
            return Ok(());
        }
        self.schema
            .0
            .get_or_try_init(|| self.check_schema())
            .await
            .map(|_| ())
    }

    /// Reads the marker, writing this linkd's when there is none, and judges it. A marker
    /// written by another instance between the read and the write wins: `SET NX` keeps it
    /// and the second read judges it.
    async fn check_schema(&self) -> StoreResult<()> {
        let mut read = cmd("GET");
        read.arg(SCHEMA_KEY);
        let marker = match self.send_command::<Option<String>>(read.clone()).await? {
            Some(marker) => marker,
            None => {
                let mut claim = cmd("SET");
                claim.arg(SCHEMA_KEY).arg(LAYOUT_VERSION).arg("NX");
                let _: Option<String> = self.send_command(claim).await?;
                let marker: Option<String> = self.send_command(read).await?;
                marker.unwrap_or_default()
            }
        };
        judge(&marker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_layout_is_accepted() {
        assert!(judge("1").is_ok());
        for marker in ["2", "0", "", "one", "1.5"] {
            assert!(
                matches!(judge(marker), Err(StoreError::Incompatible(_))),
                "{marker:?}"
            );
        }
    }

    #[test]
    fn a_newer_layout_is_named_in_the_refusal() {
        let message = judge("7").unwrap_err().to_string();
        assert!(message.contains("layout 7"), "{message}");
        assert!(message.contains("newer linkd"), "{message}");
        assert!(message.contains(SCHEMA_KEY), "{message}");
    }

    #[test]
    fn an_unknown_marker_is_quoted_shortly() {
        let message = judge(&"x".repeat(500)).unwrap_err().to_string();
        assert!(message.len() < 400, "{message}");
    }
}
