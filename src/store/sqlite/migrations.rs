//! The embedded store's schema as the ordered steps that built it: every file, new or old,
//! reaches the current schema by the same steps, so a fresh file and an upgraded one cannot
//! differ.
//!
//! `PRAGMA user_version` records the last step applied. Each step runs in its own
//! `BEGIN IMMEDIATE` transaction together with the version update, so a step either lands
//! whole or not at all: a crash or a failure part-way leaves the file at the previous
//! version, and the next open applies the step again. The version is read again inside the
//! transaction because another process (the CLI beside a starting server) may have applied
//! the step meanwhile.
//!
//! A file whose version is above the last step was written by a newer linkd and is refused
//! ([`StoreError::Incompatible`]): an older binary would misread what it does not know, and
//! must not write to it either.
//!
//! A change of schema is a new step at the end of [`MIGRATIONS`], never an edit of a
//! released one. Records are JSON beside their key columns, so a record that gains a
//! `#[serde(default)]` field needs no step at all.
//!
//! The steps are kept in-house rather than with `rusqlite_migration`: that crate is not in
//! the packages this project draws from, and the whole mechanism is the loop in [`migrate`].

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::store::{StoreError, StoreResult};

/// One step of the schema.
#[derive(Debug)]
pub(super) struct Migration {
    /// The schema version of a file once the step is applied.
    pub version: i64,
    /// What the step changes, for the log line that reports it.
    pub summary: &'static str,
    /// The statements, run in one transaction with the version update.
    pub sql: &'static str,
}

/// Every step, in order; versions count up from 1 without a gap.
pub(super) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        summary: "clients, users, tokens, revocations, codes, sessions, throttling, links, devices and service accounts",
        sql: VERSION_1,
    },
    Migration {
        version: 2,
        summary: "two-phase code redemption: used codes become settled redemptions",
        sql: VERSION_2,
    },
    Migration {
        version: 3,
        summary: "the change feed that keeps the server's caches coherent",
        sql: VERSION_3,
    },
    Migration {
        version: 4,
        summary: "identity providers, external identities and login states",
        sql: VERSION_4,
    },
];

/// The schema version this linkd reads and writes: the last step's.
pub(super) const SCHEMA_VERSION: i64 = match MIGRATIONS.last() {
    Some(last) => last.version,
    None => 0,
};

/// The schema of version-1 files. `IF NOT EXISTS` everywhere, as it was then: linkd created
/// every missing table on each open.
const VERSION_1: &str = "
CREATE TABLE IF NOT EXISTS clients (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refresh_tokens (
    digest TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refresh_tokens_by_grant ON refresh_tokens (grant_id);
CREATE TABLE IF NOT EXISTS revoked_grants (
    grant_id TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS revoked_tokens (
    jti TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS used_codes (
    jti TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS used_codes_by_expiry ON used_codes (expires_at);
CREATE TABLE IF NOT EXISTS sessions (
    digest TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (
    key TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    window_ends INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS links (
    grant_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_by_user ON links (user_id, created_at);
CREATE TABLE IF NOT EXISTS consents (
    user_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);
CREATE TABLE IF NOT EXISTS unlink_events (
    id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS service_accounts (
    email TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS service_account_keys (
    key_id TEXT PRIMARY KEY,
    email TEXT NOT NULL REFERENCES service_accounts (email) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS devices (
    project_id TEXT NOT NULL,
    agent_user_id TEXT NOT NULL,
    devices TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_user_id)
);
CREATE TABLE IF NOT EXISTS device_states (
    project_id TEXT NOT NULL,
    agent_user_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_user_id, device_id)
);
CREATE TABLE IF NOT EXISTS agent_users (
    project_id TEXT NOT NULL,
    agent_user_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_user_id),
    UNIQUE (project_id, user_id)
);
";

/// Used codes move into the redemption ledger as settled (no attempt, lease over), so a
/// code spent before the upgrade stays spent. The device tables are created here too
/// because the earliest version-1 files predate them: version 1 gained them without a new
/// version number.
const VERSION_2: &str = "
CREATE TABLE IF NOT EXISTS device_states (
    project_id TEXT NOT NULL,
    agent_user_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_user_id, device_id)
);
CREATE TABLE IF NOT EXISTS agent_users (
    project_id TEXT NOT NULL,
    agent_user_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (project_id, agent_user_id),
    UNIQUE (project_id, user_id)
);
CREATE TABLE code_redemptions (
    jti TEXT PRIMARY KEY,
    attempt TEXT,
    lease_until INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX code_redemptions_by_expiry ON code_redemptions (expires_at);
INSERT INTO code_redemptions (jti, attempt, lease_until, expires_at)
    SELECT jti, NULL, 0, expires_at FROM used_codes;
DROP TABLE used_codes;
";

/// Starts the change feed empty: the caches of a server that opens the file begin from the
/// store, not from the feed.
const VERSION_3: &str = "
CREATE TABLE changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    key TEXT NOT NULL
);
";

/// Sign-in through upstream identity providers: the providers, which user each provider's
/// subject is, and the one-time states of sign-ins in progress.
const VERSION_4: &str = "
CREATE TABLE identity_providers (
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE external_identities (
    provider_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL,
    PRIMARY KEY (provider_id, subject)
);
CREATE TABLE login_states (
    key TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX login_states_by_expiry ON login_states (expires_at);
";

fn schema_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// The refusal of a file written by a newer linkd.
fn newer_file(path: &Path, found: i64) -> StoreError {
    StoreError::Incompatible(format!(
        "{} has schema version {found}, newer than this linkd's {SCHEMA_VERSION}: it was written by a newer linkd. Run that version (or a newer one), or restore a backup taken before the upgrade; see docs/upgrading.md",
        path.display()
    ))
}

/// Brings the file open on `connection` up to [`SCHEMA_VERSION`], one step per transaction;
/// refuses a file of a newer version without writing to it.
pub(super) fn migrate(connection: &mut Connection, path: &Path) -> StoreResult<()> {
    let failed = |version: i64, error: rusqlite::Error| {
        StoreError::Unavailable(format!(
            "sqlite: upgrading {} to schema version {version}: {error}",
            path.display()
        ))
    };
    let found = schema_version(connection).map_err(|error| failed(SCHEMA_VERSION, error))?;
    if found > SCHEMA_VERSION {
        return Err(newer_file(path, found));
    }
    for step in MIGRATIONS.iter().filter(|step| step.version > found) {
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| failed(step.version, error))?;
        let current = schema_version(&transaction).map_err(|error| failed(step.version, error))?;
        if current > SCHEMA_VERSION {
            return Err(newer_file(path, current));
        }
        if current >= step.version {
            continue;
        }
        transaction
            .execute_batch(step.sql)
            .and_then(|()| transaction.pragma_update(None, "user_version", step.version))
            .and_then(|()| transaction.commit())
            .map_err(|error| failed(step.version, error))?;
        if found > 0 {
            tracing::info!(
                store = %path.display(),
                version = step.version,
                change = step.summary,
                "store schema upgraded"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_up_from_one_without_a_gap() {
        for (index, step) in MIGRATIONS.iter().enumerate() {
            assert_eq!(step.version, i64::try_from(index).unwrap() + 1, "{step:?}");
        }
        assert_eq!(SCHEMA_VERSION, i64::try_from(MIGRATIONS.len()).unwrap());
    }

    #[test]
    fn a_fresh_file_gets_every_step_and_a_second_open_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh.db");
        let mut connection = Connection::open(&path).unwrap();
        migrate(&mut connection, &path).unwrap();
        assert_eq!(schema_version(&connection).unwrap(), SCHEMA_VERSION);
        let tables = |connection: &Connection| -> Vec<String> {
            let mut statement = connection
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .unwrap();
            statement
                .query_map([], |row| row.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        let before = tables(&connection);
        assert!(
            before.contains(&"code_redemptions".to_owned()),
            "{before:?}"
        );
        assert!(before.contains(&"changes".to_owned()), "{before:?}");
        assert!(before.contains(&"login_states".to_owned()), "{before:?}");
        assert!(!before.contains(&"used_codes".to_owned()), "{before:?}");
        migrate(&mut connection, &path).unwrap();
        assert_eq!(tables(&connection), before);
    }

    #[test]
    fn a_newer_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("newer.db");
        let mut connection = Connection::open(&path).unwrap();
        connection
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let error = migrate(&mut connection, &path).unwrap_err();
        assert!(matches!(error, StoreError::Incompatible(_)), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("newer linkd"), "{message}");
        let tables: i64 = connection
            .query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get(0))
            .unwrap();
        assert_eq!(tables, 0);
    }
}
