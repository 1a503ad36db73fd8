//! The embedded backend: one SQLite file in WAL mode, for a single machine without Redis.
//!
//! WAL lets the CLI write (add a client, rotate a user's password) while `serve` reads. Calls
//! run on tokio's blocking pool: writes on one connection behind a mutex (SQLite serialises
//! writers anyway), reads on a small pool of read-only connections, which WAL lets run side
//! by side and beside the writer; statements are prepared once per connection
//! (`prepare_cached`). `busy_timeout` makes another process's write wait instead of failing,
//! and a wait longer than the store timeout is [`StoreError::Unavailable`].
//!
//! Writes of clients, users and revocations also record a row in `changes`, in the same
//! transaction: the change feed that keeps the server's caches ([`super::cached`]) coherent
//! with every other writer of the file, the CLI included. The server reads it when
//! `PRAGMA data_version` says another connection committed.
//!
//! Records are JSON beside the columns that are keys or unique, so the schema needs no
//! change when a record gains a `#[serde(default)]` field.
//!
//! Expiry: a session is ignored once the caller's `now` reaches its `expires_at`. Used codes
//! and access-token revocations are read without a time, so they stay in force until purged,
//! a day after their expiry, on a later write: erring towards "used" and "revoked" is what
//! the traits allow ("may be forgotten after"). Grant revocations are never purged. Throttle
//! windows and purges are measured by the caller's `now` too: the store reads no clock.
//! `PRAGMA user_version` records the schema version, brought up to date on open by the
//! ordered steps of [`migrations`]; a file written by a newer schema is refused rather than
//! misread.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cached::{Caches, Change, ChangeFeed};
use super::{
    ClientRecord, ClientStore, CodeLedger, CodeRedemption, DeviceStore, IdentityProviderRecord,
    IdentityProviderStore, LinkRecord, LinkStore, LoginStateRecord, RedemptionFinish,
    RedemptionStart, RefreshTokenLookup, RefreshTokenRecord, RefreshTokenStore, RevocationStore,
    ServiceAccountRecord, ServiceAccountStore, SessionRecord, SessionStore, Store, StoreError,
    StoreResult, StoreTimeouts, ThrottleStore, UnlinkEvent, UserRecord, UserStore,
};

mod migrations;

/// The schema version this linkd reads and writes (`PRAGMA user_version`); see
/// [`migrations`].
pub const SCHEMA_VERSION: i64 = migrations::SCHEMA_VERSION;

/// The embedded SQLite store.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    timeouts: StoreTimeouts,
    /// The one connection that writes: SQLite admits one writer at a time anyway, and one
    /// connection keeps this process's writers from waiting on one another's busy timeouts.
    writer: Arc<Mutex<Connection>>,
    /// Idle read-only connections: in WAL mode readers neither wait for the writer nor for
    /// one another, so reads run side by side on the blocking pool.
    readers: Arc<Mutex<Vec<Connection>>>,
}

/// Most idle reader connections kept open; more are opened while many reads run at once.
const IDLE_READERS: usize = 8;

/// Most rows of `changes` kept: the feed reads them within a request of their commit, so
/// this only bounds the table (a reader that fell further behind starts a new epoch).
const CHANGES_KEPT: i64 = 10_000;

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn unavailable(error: &rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("sqlite: {error}"))
}

fn is_constraint_violation(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(failure, _) if failure.code == ErrorCode::ConstraintViolation)
}

fn encode<T: Serialize>(record: &T) -> StoreResult<String> {
    serde_json::to_string(record).map_err(|error| StoreError::Corrupt(error.to_string()))
}

fn decode<T: DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|error| StoreError::Corrupt(error.to_string()))
}

/// How long after its expiry a row is purged, by the caller's clock. Expired rows are
/// already ignored where the caller gives the time; purging a day late means that a caller
/// whose clock runs behind another's sharing the file never sees a still-valid mark
/// disappear.
const PURGE_GRACE_SECS: i64 = 86_400;

/// Creates the database file (and any missing directory above it) readable by its owner
/// only, before SQLite opens it: the store holds emails, password hashes and token digests.
/// SQLite gives the `-wal` and `-shm` files it creates the database file's mode. Files an
/// earlier version created readable by others are made owner-only.
fn restrict_to_owner(path: &Path) -> StoreResult<()> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};

    let failed = |what: &Path, error: std::io::Error| {
        StoreError::Unavailable(format!("cannot create {}: {error}", what.display()))
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|error| failed(parent, error))?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|error| failed(path, error))?;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        let Ok(metadata) = std::fs::metadata(&file) else {
            continue;
        };
        let mode = metadata.permissions().mode();
        if mode & 0o077 != 0
            && let Err(error) =
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o700))
        {
            tracing::warn!(file = %file.display(), %error, "cannot make the store file owner-only");
        }
    }
    Ok(())
}

/// A connection that only reads (the schema is the writer's business).
fn open_reader(path: &Path, timeouts: StoreTimeouts) -> StoreResult<Connection> {
    let connection = Connection::open(path).map_err(|error| unavailable(&error))?;
    connection
        .busy_timeout(timeouts.response)
        .map_err(|error| unavailable(&error))?;
    connection
        .execute_batch("PRAGMA query_only = ON;")
        .map_err(|error| unavailable(&error))?;
    Ok(connection)
}

/// Records `change` for the change feed, in the caller's transaction, and keeps the table
/// to its last [`CHANGES_KEPT`] rows.
fn record_change(db: &Connection, change: &Change) -> StoreResult<()> {
    let (kind, key) = change.parts();
    db.prepare_cached("INSERT INTO changes (kind, key) VALUES (?1, ?2)")
        .and_then(|mut statement| statement.execute(params![kind, key]))
        .and_then(|_| {
            db.prepare_cached("DELETE FROM changes WHERE seq <= last_insert_rowid() - ?1")
        })
        .and_then(|mut statement| statement.execute(params![CHANGES_KEPT]))
        .map(|_| ())
        .map_err(|error| unavailable(&error))
}

/// The pulled change feed of [`SqliteStore`]: see [`super::cached`].
struct SqliteFeed {
    state: Mutex<FeedState>,
}

impl std::fmt::Debug for SqliteFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteFeed").finish_non_exhaustive()
    }
}

struct FeedState {
    connection: Connection,
    /// `PRAGMA data_version` when the changes were last read.
    data_version: i64,
    /// The last change applied.
    seq: i64,
    /// When `data_version` was last read.
    checked_at: Option<std::time::Instant>,
}

/// How long the server answers from memory before it looks again for commits of other
/// processes (the CLI): the bound on how late it honours them. Its own writes update the
/// caches at once. Looking costs a statement per cached answer, a few microseconds, which
/// under load is a tenth of a userinfo request.
pub const CHANGES_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

impl SqliteFeed {
    fn open(path: &Path, timeouts: StoreTimeouts) -> StoreResult<Self> {
        let connection = open_reader(path, timeouts)?;
        let data_version = data_version(&connection)?;
        let seq = connection
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM changes", [], |row| {
                row.get(0)
            })
            .map_err(|error| unavailable(&error))?;
        Ok(Self {
            state: Mutex::new(FeedState {
                connection,
                data_version,
                seq,
                checked_at: None,
            }),
        })
    }
}

fn data_version(connection: &Connection) -> StoreResult<i64> {
    connection
        .prepare_cached("PRAGMA data_version")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(|error| unavailable(&error))
}

impl FeedState {
    /// Applies the changes committed since the last call.
    fn catch_up(&mut self, caches: &Caches) -> StoreResult<()> {
        let now = std::time::Instant::now();
        if self
            .checked_at
            .is_some_and(|checked| now.duration_since(checked) < CHANGES_CHECK_INTERVAL)
        {
            return Ok(());
        }
        let version = data_version(&self.connection)?;
        if version == self.data_version {
            self.checked_at = Some(now);
            return Ok(());
        }
        let mut statement = self
            .connection
            .prepare_cached("SELECT seq, kind, key FROM changes WHERE seq > ?1 ORDER BY seq")
            .map_err(|error| unavailable(&error))?;
        let rows = statement
            .query_map(params![self.seq], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                ))
            })
            .map_err(|error| unavailable(&error))?;
        for row in rows {
            let (seq, kind, key) = row.map_err(|error| unavailable(&error))?;
            if seq > self.seq + 1 {
                // Rows were purged before this reader saw them.
                caches.lost();
            }
            if let Some(change) = Change::from_parts(&kind, &key) {
                caches.apply(&change);
            }
            self.seq = seq;
        }
        self.data_version = version;
        self.checked_at = Some(now);
        Ok(())
    }
}

#[async_trait]
impl ChangeFeed for SqliteFeed {
    fn catch_up(&self, caches: &Caches) -> Option<bool> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(match state.catch_up(caches) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(%error, "cannot read the store's changes; asking the store");
                false
            }
        })
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// The file and its `-wal` and `-shm` companions are readable by their owner only; see
    /// [`restrict_to_owner`].
    pub fn open(path: &Path, timeouts: StoreTimeouts) -> StoreResult<Self> {
        restrict_to_owner(path)?;
        let mut connection = Connection::open(path).map_err(|error| unavailable(&error))?;
        connection
            .busy_timeout(timeouts.response)
            .map_err(|error| unavailable(&error))?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
            )
            .map_err(|error| unavailable(&error))?;
        migrations::migrate(&mut connection, path)?;
        Ok(Self {
            path: path.to_owned(),
            timeouts,
            writer: Arc::new(Mutex::new(connection)),
            readers: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Runs `operation` with the writing connection on the blocking pool.
    async fn with<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let connection = Arc::clone(&self.writer);
        tokio::task::spawn_blocking(move || {
            let mut guard = connection
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            operation(&mut guard)
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("sqlite task failed: {error}")))?
    }

    /// Runs the write `operation` and records `change` for the feed, in one transaction on
    /// the writing connection.
    async fn change<T, F>(&self, change: Change, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            let result = operation(&transaction)?;
            record_change(&transaction, &change)?;
            transaction.commit().map_err(|error| unavailable(&error))?;
            Ok(result)
        })
        .await
    }

    /// Runs the short read-only `query` on the calling thread when an idle reader is at hand
    /// and SQLite answers without waiting on a lock: the hot paths' point lookups then cost no
    /// hop to the blocking pool and back (two thread switches, more than the query itself).
    /// Otherwise — no idle reader, or the file is busy (a checkpoint, another process's
    /// recovery) — it runs on the blocking pool as [`SqliteStore::read`] does, so the caller's
    /// thread never waits on a lock. A page not in the operating system's cache still costs
    /// one read from the disk on the caller's thread.
    async fn read_now<T, F>(&self, query: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        if let Some(connection) = idle {
            let answer = connection
                .busy_timeout(std::time::Duration::ZERO)
                .and_then(|()| query(&connection));
            let restored = connection.busy_timeout(self.timeouts.response);
            if restored.is_ok() {
                let mut idle = self
                    .readers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if idle.len() < IDLE_READERS {
                    idle.push(connection);
                }
            }
            let busy = matches!(&answer, Err(rusqlite::Error::SqliteFailure(failure, _))
                if matches!(failure.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked));
            if !busy {
                return answer.map_err(|error| unavailable(&error));
            }
        }
        self.read(move |db| query(db).map_err(|error| unavailable(&error)))
            .await
    }

    /// The JSON `record` column of the one row `sql` selects with `key`, decoded.
    async fn record_where<T: DeserializeOwned + Send + 'static>(
        &self,
        sql: &'static str,
        key: &str,
    ) -> StoreResult<Option<T>> {
        let key = key.to_owned();
        self.read(move |db| {
            db.prepare_cached(sql)
                .map_err(|error| unavailable(&error))?
                .query_row(params![key], |row| row.get::<_, String>(0))
                .optional()
                .map_err(|error| unavailable(&error))?
                .map(|text| decode(&text))
                .transpose()
        })
        .await
    }

    /// Every record a `SELECT record FROM … ORDER BY …` statement returns, decoded.
    async fn all_records<T: DeserializeOwned + Send + 'static>(
        &self,
        sql: &'static str,
    ) -> StoreResult<Vec<T>> {
        self.read(move |db| {
            let mut statement = db
                .prepare_cached(sql)
                .map_err(|error| unavailable(&error))?;
            let rows = statement
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(|error| unavailable(&error))?;
            rows.map(|row| decode(&row.map_err(|error| unavailable(&error))?))
                .collect()
        })
        .await
    }

    /// Runs the read-only `operation` with a reader connection on the blocking pool.
    async fn read<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let (readers, path, timeouts) =
            (Arc::clone(&self.readers), self.path.clone(), self.timeouts);
        tokio::task::spawn_blocking(move || {
            let idle = readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            let mut connection = match idle {
                Some(connection) => connection,
                None => open_reader(&path, timeouts)?,
            };
            let result = operation(&mut connection);
            let mut idle = readers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if idle.len() < IDLE_READERS {
                idle.push(connection);
            }
            result
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("sqlite task failed: {error}")))?
    }

    /// One side of an agent user id ↔ user pair, by `query` over (project, the other side).
    async fn agent_user_side(
        &self,
        query: &'static str,
        project_id: &str,
        other_side: &str,
    ) -> StoreResult<Option<String>> {
        let (project_id, other_side) = (project_id.to_owned(), other_side.to_owned());
        self.read(move |db| {
            db.prepare_cached(query)
                .map_err(|error| unavailable(&error))?
                .query_row(params![project_id, other_side], |row| row.get(0))
                .optional()
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl ClientStore for SqliteStore {
    async fn insert_client(&self, client: &ClientRecord) -> StoreResult<()> {
        let (id, record) = (client.id.clone(), encode(client)?);
        self.change(Change::Client(client.id.clone()), move |db| {
            match db.execute(
                "INSERT INTO clients (id, record) VALUES (?1, ?2)",
                params![id, record],
            ) {
                Ok(_) => Ok(()),
                Err(error) if is_constraint_violation(&error) => {
                    Err(StoreError::AlreadyExists(format!("client {id}")))
                }
                Err(error) => Err(unavailable(&error)),
            }
        })
        .await
    }

    async fn update_client(&self, client: &ClientRecord) -> StoreResult<bool> {
        let (id, record) = (client.id.clone(), encode(client)?);
        self.change(Change::Client(client.id.clone()), move |db| {
            db.execute(
                "UPDATE clients SET record = ?2 WHERE id = ?1",
                params![id, record],
            )
            .map(|changed| changed == 1)
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_client(&self, id: &str) -> StoreResult<Option<ClientRecord>> {
        self.record_where("SELECT record FROM clients WHERE id = ?1", id)
            .await
    }

    async fn list_clients(&self) -> StoreResult<Vec<ClientRecord>> {
        self.all_records("SELECT record FROM clients ORDER BY id")
            .await
    }

    async fn remove_client(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.change(Change::Client(id.clone()), move |db| {
            db.execute("DELETE FROM clients WHERE id = ?1", params![id])
                .map(|changed| changed == 1)
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl UserStore for SqliteStore {
    async fn insert_user(&self, user: &UserRecord) -> StoreResult<()> {
        let (id, email, record) = (user.id.clone(), user.email.clone(), encode(user)?);
        self.change(Change::User(user.id.clone()), move |db| {
            match db.execute(
                "INSERT INTO users (id, email, record) VALUES (?1, ?2, ?3)",
                params![id, email, record],
            ) {
                Ok(_) => Ok(()),
                Err(error) if is_constraint_violation(&error) => {
                    Err(StoreError::AlreadyExists(format!("user {email}")))
                }
                Err(error) => Err(unavailable(&error)),
            }
        })
        .await
    }

    async fn update_user(&self, user: &UserRecord) -> StoreResult<bool> {
        let (id, email, record) = (user.id.clone(), user.email.clone(), encode(user)?);
        self.change(Change::User(user.id.clone()), move |db| {
            db.execute(
                "UPDATE users SET record = ?3 WHERE id = ?1 AND email = ?2",
                params![id, email, record],
            )
            .map(|changed| changed == 1)
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_user(&self, id: &str) -> StoreResult<Option<UserRecord>> {
        self.record_where("SELECT record FROM users WHERE id = ?1", id)
            .await
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<UserRecord>> {
        self.record_where("SELECT record FROM users WHERE email = ?1", email)
            .await
    }

    async fn list_users(&self) -> StoreResult<Vec<UserRecord>> {
        self.all_records("SELECT record FROM users ORDER BY email")
            .await
    }

    async fn remove_user(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.change(Change::User(id.clone()), move |db| {
            db.execute("DELETE FROM users WHERE id = ?1", params![id])
                .map(|changed| changed == 1)
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl RefreshTokenStore for SqliteStore {
    async fn put_refresh_token(
        &self,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<bool> {
        let (digest, grant_id, text) =
            (digest.to_owned(), record.grant_id.clone(), encode(record)?);
        self.with(move |db| {
            match db.execute(
                "INSERT INTO refresh_tokens (digest, grant_id, record)
                 SELECT ?1, ?2, ?3
                 WHERE NOT EXISTS (SELECT 1 FROM revoked_grants WHERE grant_id = ?2)",
                params![digest, grant_id, text],
            ) {
                Ok(inserted) => Ok(inserted == 1),
                Err(error) if is_constraint_violation(&error) => {
                    Err(StoreError::AlreadyExists("refresh token".to_owned()))
                }
                Err(error) => Err(unavailable(&error)),
            }
        })
        .await
    }

    async fn get_refresh_token(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> StoreResult<Option<RefreshTokenLookup>> {
        let (grant_id, digest) = (grant_id.to_owned(), digest.to_owned());
        let found = self
            .read_now(move |db| {
                db.prepare_cached(
                    "SELECT record, EXISTS (SELECT 1 FROM revoked_grants WHERE grant_id = ?2)
                     FROM refresh_tokens WHERE digest = ?1 AND grant_id = ?2",
                )?
                .query_row(params![digest, grant_id], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))
                })
                .optional()
            })
            .await?;
        found
            .map(|(text, grant_revoked)| {
                Ok(RefreshTokenLookup {
                    record: decode(&text)?,
                    grant_revoked,
                })
            })
            .transpose()
    }

    async fn delete_grant_refresh_tokens(&self, grant_id: &str) -> StoreResult<u64> {
        let grant_id = grant_id.to_owned();
        self.with(move |db| {
            db.execute(
                "DELETE FROM refresh_tokens WHERE grant_id = ?1",
                params![grant_id],
            )
            .map(|deleted| deleted as u64)
            .map_err(|error| unavailable(&error))
        })
        .await
    }
}

/// `code_redemptions` rows: `attempt` names the attempt holding a pending redemption and is
/// NULL once the code is redeemed.
#[async_trait]
impl CodeLedger for SqliteStore {
    async fn begin_redemption(&self, attempt: &CodeRedemption) -> StoreResult<RedemptionStart> {
        let attempt = attempt.clone();
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            transaction
                .execute(
                    "DELETE FROM code_redemptions WHERE expires_at < ?1",
                    params![attempt.now.saturating_sub(PURGE_GRACE_SECS)],
                )
                .map_err(|error| unavailable(&error))?;
            let current: Option<(Option<String>, i64)> = transaction
                .query_row(
                    "SELECT attempt, lease_until FROM code_redemptions WHERE jti = ?1",
                    params![attempt.jti],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(|error| unavailable(&error))?;
            let start = match current {
                Some((None, _)) => RedemptionStart::Redeemed,
                Some((Some(_), lease_until)) if lease_until >= attempt.now => {
                    RedemptionStart::InFlight { lease_until }
                }
                Some((Some(_), _)) | None => {
                    transaction
                        .execute(
                            "INSERT INTO code_redemptions (jti, attempt, lease_until, expires_at)
                             VALUES (?1, ?2, ?3, ?4)
                             ON CONFLICT (jti) DO UPDATE SET attempt = excluded.attempt,
                                 lease_until = excluded.lease_until",
                            params![
                                attempt.jti,
                                attempt.attempt,
                                attempt.lease_until,
                                attempt.expires_at
                            ],
                        )
                        .map_err(|error| unavailable(&error))?;
                    RedemptionStart::Started
                }
            };
            transaction.commit().map_err(|error| unavailable(&error))?;
            Ok(start)
        })
        .await
    }

    async fn finish_redemption(
        &self,
        attempt: &CodeRedemption,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<RedemptionFinish> {
        let (attempt, digest, text) = (attempt.clone(), digest.to_owned(), encode(record)?);
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            let spent = transaction
                .execute(
                    "UPDATE code_redemptions SET attempt = NULL WHERE jti = ?1 AND attempt = ?2",
                    params![attempt.jti, attempt.attempt],
                )
                .map_err(|error| unavailable(&error))?;
            if spent == 0 {
                return Ok(RedemptionFinish::Superseded);
            }
            let stored = transaction
                .execute(
                    "INSERT INTO refresh_tokens (digest, grant_id, record)
                     SELECT ?1, ?2, ?3
                     WHERE NOT EXISTS (SELECT 1 FROM revoked_grants WHERE grant_id = ?2)",
                    params![digest, attempt.grant_id, text],
                )
                .map_err(|error| unavailable(&error))?;
            transaction.commit().map_err(|error| unavailable(&error))?;
            Ok(if stored == 1 {
                RedemptionFinish::Issued
            } else {
                RedemptionFinish::GrantRevoked
            })
        })
        .await
    }
}

/// Marks a grant revoked for good: `expires_at` holds [`REVOKED_FOREVER`] and nothing purges
/// `revoked_grants` (marks written with an expiry by older versions are raised to it).
/// Announced on the change feed in the caller's transaction.
fn revoke_grant_for_good(db: &Connection, grant_id: &str) -> StoreResult<()> {
    db.execute(
        "INSERT INTO revoked_grants (grant_id, expires_at) VALUES (?1, ?2)
         ON CONFLICT (grant_id) DO UPDATE SET expires_at = excluded.expires_at",
        params![grant_id, REVOKED_FOREVER],
    )
    .map_err(|error| unavailable(&error))?;
    record_change(db, &Change::GrantRevoked(grant_id.to_owned()))
}

/// The `expires_at` of a grant's revocation mark: never.
const REVOKED_FOREVER: i64 = i64::MAX;

#[async_trait]
impl RevocationStore for SqliteStore {
    async fn revoke_grant(&self, grant_id: &str) -> StoreResult<()> {
        let grant_id = grant_id.to_owned();
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            revoke_grant_for_good(&transaction, &grant_id)?;
            transaction.commit().map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn is_grant_revoked(&self, grant_id: &str) -> StoreResult<bool> {
        let grant_id = grant_id.to_owned();
        self.read(move |db| {
            db.prepare_cached("SELECT EXISTS (SELECT 1 FROM revoked_grants WHERE grant_id = ?1)")
                .map_err(|error| unavailable(&error))?
                .query_row(params![grant_id], |row| row.get::<_, bool>(0))
                .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn revoke_token(&self, jti: &str, expires_at: i64, now: i64) -> StoreResult<()> {
        let jti = jti.to_owned();
        self.change(Change::TokenRevoked(jti.clone()), move |db| {
            db.execute(
                "DELETE FROM revoked_tokens WHERE expires_at < ?1",
                params![now.saturating_sub(PURGE_GRACE_SECS)],
            )
            .map_err(|error| unavailable(&error))?;
            db.execute(
                "INSERT INTO revoked_tokens (jti, expires_at) VALUES (?1, ?2)
                 ON CONFLICT (jti) DO UPDATE SET expires_at = MAX(expires_at, excluded.expires_at)",
                params![jti, expires_at],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn is_token_revoked(&self, jti: &str) -> StoreResult<bool> {
        let jti = jti.to_owned();
        self.read(move |db| {
            db.prepare_cached("SELECT EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = ?1)")
                .map_err(|error| unavailable(&error))?
                .query_row(params![jti], |row| row.get::<_, bool>(0))
                .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn is_access_revoked(&self, grant_id: &str, jti: &str) -> StoreResult<bool> {
        // One query, on the caller's thread when it can be.
        let (grant_id, jti) = (grant_id.to_owned(), jti.to_owned());
        self.read_now(move |db| {
            db.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM revoked_grants WHERE grant_id = ?1)
                     OR EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = ?2)",
            )?
            .query_row(params![grant_id, jti], |row| row.get::<_, bool>(0))
        })
        .await
    }
}

/// The tables of records that expire: browser sessions and sign-ins through a provider.
#[derive(Debug, Clone, Copy)]
enum ExpiringTable {
    Sessions,
    LoginStates,
}

/// Writes `text` under `key` in `table` until `expires_at`, first purging the rows of that
/// table expired for longer than the grace period (the table is small; no sweeper needed).
fn put_expiring(
    db: &Connection,
    table: ExpiringTable,
    key: &str,
    expires_at: i64,
    text: &str,
    now: i64,
) -> StoreResult<()> {
    let (purge, upsert) = match table {
        ExpiringTable::Sessions => (
            "DELETE FROM sessions WHERE expires_at < ?1",
            "INSERT INTO sessions (digest, expires_at, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (digest) DO UPDATE SET expires_at = excluded.expires_at, record = excluded.record",
        ),
        ExpiringTable::LoginStates => (
            "DELETE FROM login_states WHERE expires_at < ?1",
            "INSERT INTO login_states (key, expires_at, record) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at, record = excluded.record",
        ),
    };
    db.execute(purge, params![now.saturating_sub(PURGE_GRACE_SECS)])
        .map_err(|error| unavailable(&error))?;
    db.execute(upsert, params![key, expires_at, text])
        .map(|_| ())
        .map_err(|error| unavailable(&error))
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn put_session(
        &self,
        digest: &str,
        session: &SessionRecord,
        now: i64,
    ) -> StoreResult<()> {
        let (digest, expires_at, text) = (digest.to_owned(), session.expires_at, encode(session)?);
        self.with(move |db| {
            put_expiring(db, ExpiringTable::Sessions, &digest, expires_at, &text, now)
        })
        .await
    }

    async fn get_session(&self, digest: &str, now: i64) -> StoreResult<Option<SessionRecord>> {
        let digest = digest.to_owned();
        self.read(move |db| {
            db.prepare_cached("SELECT record FROM sessions WHERE digest = ?1 AND expires_at > ?2")
                .map_err(|error| unavailable(&error))?
                .query_row(params![digest, now], |row| row.get::<_, String>(0))
                .optional()
                .map_err(|error| unavailable(&error))?
                .map(|text| decode(&text))
                .transpose()
        })
        .await
    }

    async fn delete_session(&self, digest: &str) -> StoreResult<bool> {
        let digest = digest.to_owned();
        self.with(move |db| {
            db.execute("DELETE FROM sessions WHERE digest = ?1", params![digest])
                .map(|deleted| deleted == 1)
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl ThrottleStore for SqliteStore {
    async fn hit(&self, key: &str, window_secs: u64, now: i64) -> StoreResult<u64> {
        let key = key.to_owned();
        let window = i64::try_from(window_secs).unwrap_or(i64::MAX);
        self.with(move |db| {
            db.execute(
                "DELETE FROM counters WHERE window_ends < ?1",
                params![now.saturating_sub(PURGE_GRACE_SECS)],
            )
            .map_err(|error| unavailable(&error))?;
            // A lapsed window starts over at 1; a live one counts on without being extended.
            let count: i64 = db
                .prepare_cached(
                    "INSERT INTO counters (key, count, window_ends) VALUES (?1, 1, ?2)
                     ON CONFLICT (key) DO UPDATE SET
                        count = CASE WHEN window_ends <= ?3 THEN 1 ELSE count + 1 END,
                        window_ends = CASE WHEN window_ends <= ?3 THEN ?2 ELSE window_ends END
                     RETURNING count",
                )
                .map_err(|error| unavailable(&error))?
                .query_row(params![key, now.saturating_add(window), now], |row| {
                    row.get(0)
                })
                .map_err(|error| unavailable(&error))?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
        .await
    }

    async fn current(&self, key: &str, now: i64) -> StoreResult<u64> {
        let key = key.to_owned();
        self.read(move |db| {
            let count: Option<i64> = db
                .prepare_cached("SELECT count FROM counters WHERE key = ?1 AND window_ends > ?2")
                .map_err(|error| unavailable(&error))?
                .query_row(params![key, now], |row| row.get(0))
                .optional()
                .map_err(|error| unavailable(&error))?;
            Ok(count
                .and_then(|count| u64::try_from(count).ok())
                .unwrap_or(0))
        })
        .await
    }

    async fn reset(&self, key: &str) -> StoreResult<()> {
        let key = key.to_owned();
        self.with(move |db| {
            db.execute("DELETE FROM counters WHERE key = ?1", params![key])
                .map(|_| ())
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl DeviceStore for SqliteStore {
    async fn put_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
        devices: &[serde_json::Value],
    ) -> StoreResult<()> {
        let (project_id, agent_user_id, text) = (
            project_id.to_owned(),
            agent_user_id.to_owned(),
            encode(&devices)?,
        );
        self.with(move |db| {
            db.execute(
                "INSERT INTO devices (project_id, agent_user_id, devices) VALUES (?1, ?2, ?3)
                 ON CONFLICT (project_id, agent_user_id) DO UPDATE SET devices = excluded.devices",
                params![project_id, agent_user_id, text],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<Vec<serde_json::Value>>> {
        // The device-graph API's lookup: on the caller's thread when it can be.
        let (project_id, agent_user_id) = (project_id.to_owned(), agent_user_id.to_owned());
        self.read_now(move |db| {
            db.prepare_cached(
                "SELECT devices FROM devices WHERE project_id = ?1 AND agent_user_id = ?2",
            )?
            .query_row(params![project_id, agent_user_id], |row| {
                row.get::<_, String>(0)
            })
            .optional()
        })
        .await?
        .map(|text| decode(&text))
        .transpose()
    }

    async fn delete_agent_user(&self, project_id: &str, agent_user_id: &str) -> StoreResult<bool> {
        let (project_id, agent_user_id) = (project_id.to_owned(), agent_user_id.to_owned());
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            let deleted = transaction
                .execute(
                    "DELETE FROM devices WHERE project_id = ?1 AND agent_user_id = ?2",
                    params![project_id, agent_user_id],
                )
                .map_err(|error| unavailable(&error))?;
            for table in ["device_states", "agent_users"] {
                transaction
                    .execute(
                        &format!(
                            "DELETE FROM {table} WHERE project_id = ?1 AND agent_user_id = ?2"
                        ),
                        params![project_id, agent_user_id],
                    )
                    .map_err(|error| unavailable(&error))?;
            }
            transaction.commit().map_err(|error| unavailable(&error))?;
            Ok(deleted == 1)
        })
        .await
    }

    async fn put_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        let (project_id, agent_user_id, user_id) = (
            project_id.to_owned(),
            agent_user_id.to_owned(),
            user_id.to_owned(),
        );
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            transaction
                .execute(
                    "DELETE FROM agent_users
                     WHERE project_id = ?1 AND (agent_user_id = ?2 OR user_id = ?3)",
                    params![project_id, agent_user_id, user_id],
                )
                .map_err(|error| unavailable(&error))?;
            transaction
                .execute(
                    "INSERT INTO agent_users (project_id, agent_user_id, user_id) VALUES (?1, ?2, ?3)",
                    params![project_id, agent_user_id, user_id],
                )
                .map_err(|error| unavailable(&error))?;
            transaction.commit().map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn user_of_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<String>> {
        self.agent_user_side(
            "SELECT user_id FROM agent_users WHERE project_id = ?1 AND agent_user_id = ?2",
            project_id,
            agent_user_id,
        )
        .await
    }

    async fn agent_user_of_user(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<String>> {
        self.agent_user_side(
            "SELECT agent_user_id FROM agent_users WHERE project_id = ?1 AND user_id = ?2",
            project_id,
            user_id,
        )
        .await
    }

    async fn put_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
        states: &[(String, serde_json::Value)],
    ) -> StoreResult<()> {
        let encoded = states
            .iter()
            .map(|(device_id, state)| Ok((device_id.clone(), encode(state)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let (project_id, agent_user_id) = (project_id.to_owned(), agent_user_id.to_owned());
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            for (device_id, state) in &encoded {
                transaction
                    .execute(
                        "INSERT INTO device_states (project_id, agent_user_id, device_id, state)
                         VALUES (?1, ?2, ?3, ?4)
                         ON CONFLICT (project_id, agent_user_id, device_id)
                         DO UPDATE SET state = excluded.state",
                        params![project_id, agent_user_id, device_id, state],
                    )
                    .map_err(|error| unavailable(&error))?;
            }
            transaction.commit().map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<std::collections::BTreeMap<String, serde_json::Value>> {
        let (project_id, agent_user_id) = (project_id.to_owned(), agent_user_id.to_owned());
        self.read(move |db| {
            let mut statement = db
                .prepare_cached(
                    "SELECT device_id, state FROM device_states
                     WHERE project_id = ?1 AND agent_user_id = ?2",
                )
                .map_err(|error| unavailable(&error))?;
            let rows = statement
                .query_map(params![project_id, agent_user_id], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(|error| unavailable(&error))?;
            let mut states = std::collections::BTreeMap::new();
            for row in rows {
                let (device_id, text) = row.map_err(|error| unavailable(&error))?;
                states.insert(device_id, decode(&text)?);
            }
            Ok(states)
        })
        .await
    }
}

#[async_trait]
impl LinkStore for SqliteStore {
    async fn put_link(&self, link: &LinkRecord) -> StoreResult<()> {
        let (grant_id, user_id, created_at, text) = (
            link.grant_id.clone(),
            link.user_id.clone(),
            link.created_at,
            encode(link)?,
        );
        self.with(move |db| {
            db.execute(
                "INSERT INTO links (grant_id, user_id, created_at, record) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (grant_id) DO NOTHING",
                params![grant_id, user_id, created_at, text],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn list_links(&self, user_id: &str) -> StoreResult<Vec<LinkRecord>> {
        let user_id = user_id.to_owned();
        self.read(move |db| {
            let mut statement = db
                .prepare_cached(
                    "SELECT record FROM links WHERE user_id = ?1 ORDER BY created_at, grant_id",
                )
                .map_err(|error| unavailable(&error))?;
            let rows = statement
                .query_map(params![user_id], |row| row.get::<_, String>(0))
                .map_err(|error| unavailable(&error))?;
            rows.map(|row| decode(&row.map_err(|error| unavailable(&error))?))
                .collect()
        })
        .await
    }

    async fn remove_link(&self, user_id: &str, grant_id: &str) -> StoreResult<Option<LinkRecord>> {
        let (user_id, grant_id) = (user_id.to_owned(), grant_id.to_owned());
        self.with(move |db| {
            db.prepare_cached(
                "DELETE FROM links WHERE grant_id = ?1 AND user_id = ?2 RETURNING record",
            )
            .map_err(|error| unavailable(&error))?
            .query_row(params![grant_id, user_id], |row| row.get::<_, String>(0))
            .optional()
            .map_err(|error| unavailable(&error))?
            .map(|text| decode(&text))
            .transpose()
        })
        .await
    }

    async fn put_consent(&self, user_id: &str, client_id: &str, scope: &str) -> StoreResult<()> {
        let (user_id, client_id, scope) =
            (user_id.to_owned(), client_id.to_owned(), scope.to_owned());
        self.with(move |db| {
            db.execute(
                "INSERT INTO consents (user_id, client_id, scope) VALUES (?1, ?2, ?3)
                 ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope",
                params![user_id, client_id, scope],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_consent(&self, user_id: &str, client_id: &str) -> StoreResult<Option<String>> {
        let (user_id, client_id) = (user_id.to_owned(), client_id.to_owned());
        self.read(move |db| {
            db.prepare_cached("SELECT scope FROM consents WHERE user_id = ?1 AND client_id = ?2")
                .map_err(|error| unavailable(&error))?
                .query_row(params![user_id, client_id], |row| row.get::<_, String>(0))
                .optional()
                .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn delete_consent(&self, user_id: &str, client_id: &str) -> StoreResult<bool> {
        let (user_id, client_id) = (user_id.to_owned(), client_id.to_owned());
        self.with(move |db| {
            db.execute(
                "DELETE FROM consents WHERE user_id = ?1 AND client_id = ?2",
                params![user_id, client_id],
            )
            .map(|deleted| deleted == 1)
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn unlink_grant(&self, event: &UnlinkEvent) -> StoreResult<bool> {
        let (event, text) = (event.clone(), encode(event)?);
        self.with(move |db| {
            let failed = |error: rusqlite::Error| unavailable(&error);
            let transaction = db.transaction().map_err(failed)?;
            revoke_grant_for_good(&transaction, &event.grant_id)?;
            transaction
                .execute(
                    "DELETE FROM refresh_tokens WHERE grant_id = ?1",
                    params![event.grant_id],
                )
                .map_err(failed)?;
            let linked = transaction
                .execute(
                    "DELETE FROM links WHERE grant_id = ?1 AND user_id = ?2",
                    params![event.grant_id, event.user_id],
                )
                .map_err(failed)?
                == 1;
            if linked {
                transaction
                    .execute(
                        "INSERT INTO unlink_events (id, at, record) VALUES (?1, ?2, ?3)
                         ON CONFLICT (id) DO NOTHING",
                        params![event.id, event.at, text],
                    )
                    .map_err(failed)?;
                transaction
                    .execute(
                        "DELETE FROM consents WHERE user_id = ?1 AND client_id = ?2",
                        params![event.user_id, event.client_id],
                    )
                    .map_err(failed)?;
            }
            transaction.commit().map_err(failed)?;
            Ok(linked)
        })
        .await
    }

    async fn push_unlink_event(&self, event: &UnlinkEvent) -> StoreResult<()> {
        let (id, at, text) = (event.id.clone(), event.at, encode(event)?);
        self.with(move |db| {
            db.execute(
                "INSERT INTO unlink_events (id, at, record) VALUES (?1, ?2, ?3) ON CONFLICT (id) DO NOTHING",
                params![id, at, text],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn pending_unlink_events(&self, limit: usize) -> StoreResult<Vec<UnlinkEvent>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |db| {
            let mut statement = db
                .prepare_cached("SELECT record FROM unlink_events ORDER BY at, id LIMIT ?1")
                .map_err(|error| unavailable(&error))?;
            let rows = statement
                .query_map(params![limit], |row| row.get::<_, String>(0))
                .map_err(|error| unavailable(&error))?;
            rows.map(|row| decode(&row.map_err(|error| unavailable(&error))?))
                .collect()
        })
        .await
    }

    async fn ack_unlink_event(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        self.with(move |db| {
            db.execute("DELETE FROM unlink_events WHERE id = ?1", params![id])
                .map(|_| ())
                .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl ServiceAccountStore for SqliteStore {
    async fn put_service_account(&self, account: &ServiceAccountRecord) -> StoreResult<()> {
        let (email, text) = (account.email.clone(), encode(account)?);
        let key_ids: Vec<String> = account.keys.keys().cloned().collect();
        self.with(move |db| {
            let transaction = db.transaction().map_err(|error| unavailable(&error))?;
            transaction
                .execute(
                    "INSERT INTO service_accounts (email, record) VALUES (?1, ?2)
                     ON CONFLICT (email) DO UPDATE SET record = excluded.record",
                    params![email, text],
                )
                .map_err(|error| unavailable(&error))?;
            transaction
                .execute(
                    "DELETE FROM service_account_keys WHERE email = ?1",
                    params![email],
                )
                .map_err(|error| unavailable(&error))?;
            for key_id in key_ids {
                match transaction.execute(
                    "INSERT INTO service_account_keys (key_id, email) VALUES (?1, ?2)",
                    params![key_id, email],
                ) {
                    Ok(_) => {}
                    Err(error) if is_constraint_violation(&error) => {
                        return Err(StoreError::AlreadyExists(format!("key {key_id}")));
                    }
                    Err(error) => return Err(unavailable(&error)),
                }
            }
            transaction.commit().map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_service_account(&self, email: &str) -> StoreResult<Option<ServiceAccountRecord>> {
        self.record_where(
            "SELECT record FROM service_accounts WHERE email = ?1",
            email,
        )
        .await
    }

    async fn service_account_by_key(
        &self,
        key_id: &str,
    ) -> StoreResult<Option<ServiceAccountRecord>> {
        let key_id = key_id.to_owned();
        self.read(move |db| {
            db.prepare_cached("SELECT a.record FROM service_account_keys k JOIN service_accounts a ON a.email = k.email
                 WHERE k.key_id = ?1")
                .map_err(|error| unavailable(&error))?
                .query_row(
                params![key_id],
                |row| row.get::<_, String>(0),
            )
            .optional()
            .map_err(|error| unavailable(&error))?
            .map(|text| decode(&text))
            .transpose()
        })
        .await
    }

    async fn list_service_accounts(&self) -> StoreResult<Vec<ServiceAccountRecord>> {
        self.all_records("SELECT record FROM service_accounts ORDER BY email")
            .await
    }

    async fn remove_service_account(&self, email: &str) -> StoreResult<bool> {
        let email = email.to_owned();
        self.with(move |db| {
            db.execute(
                "DELETE FROM service_accounts WHERE email = ?1",
                params![email],
            )
            .map(|deleted| deleted == 1)
            .map_err(|error| unavailable(&error))
        })
        .await
    }
}

#[async_trait]
impl IdentityProviderStore for SqliteStore {
    async fn insert_identity_provider(&self, provider: &IdentityProviderRecord) -> StoreResult<()> {
        let (id, text) = (provider.id.clone(), encode(provider)?);
        self.with(move |db| {
            match db.execute(
                "INSERT INTO identity_providers (id, record) VALUES (?1, ?2)",
                params![id, text],
            ) {
                Ok(_) => Ok(()),
                Err(error) if is_constraint_violation(&error) => {
                    Err(StoreError::AlreadyExists(format!("identity provider {id}")))
                }
                Err(error) => Err(unavailable(&error)),
            }
        })
        .await
    }

    async fn update_identity_provider(
        &self,
        provider: &IdentityProviderRecord,
    ) -> StoreResult<bool> {
        let (id, text) = (provider.id.clone(), encode(provider)?);
        self.with(move |db| {
            db.execute(
                "UPDATE identity_providers SET record = ?2 WHERE id = ?1",
                params![id, text],
            )
            .map(|changed| changed == 1)
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn get_identity_provider(&self, id: &str) -> StoreResult<Option<IdentityProviderRecord>> {
        self.record_where("SELECT record FROM identity_providers WHERE id = ?1", id)
            .await
    }

    async fn list_identity_providers(&self) -> StoreResult<Vec<IdentityProviderRecord>> {
        self.all_records("SELECT record FROM identity_providers ORDER BY id")
            .await
    }

    async fn remove_identity_provider(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.with(move |db| {
            let failed = |error: rusqlite::Error| unavailable(&error);
            let transaction = db.transaction().map_err(failed)?;
            transaction
                .execute(
                    "DELETE FROM external_identities WHERE provider_id = ?1",
                    params![id],
                )
                .map_err(failed)?;
            let removed = transaction
                .execute("DELETE FROM identity_providers WHERE id = ?1", params![id])
                .map_err(failed)?
                == 1;
            transaction.commit().map_err(failed)?;
            Ok(removed)
        })
        .await
    }

    async fn get_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
    ) -> StoreResult<Option<String>> {
        let (provider_id, subject) = (provider_id.to_owned(), subject.to_owned());
        self.read(move |db| {
            db.prepare_cached(
                "SELECT user_id FROM external_identities WHERE provider_id = ?1 AND subject = ?2",
            )
            .map_err(|error| unavailable(&error))?
            .query_row(params![provider_id, subject], |row| row.get::<_, String>(0))
            .optional()
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn put_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        let (provider_id, subject, user_id) = (
            provider_id.to_owned(),
            subject.to_owned(),
            user_id.to_owned(),
        );
        self.with(move |db| {
            db.execute(
                "INSERT INTO external_identities (provider_id, subject, user_id) VALUES (?1, ?2, ?3)
                 ON CONFLICT (provider_id, subject) DO UPDATE SET user_id = excluded.user_id",
                params![provider_id, subject, user_id],
            )
            .map(|_| ())
            .map_err(|error| unavailable(&error))
        })
        .await
    }

    async fn put_login_state(
        &self,
        key: &str,
        state: &LoginStateRecord,
        now: i64,
    ) -> StoreResult<()> {
        let (key, expires_at, text) = (key.to_owned(), state.expires_at, encode(state)?);
        self.with(move |db| {
            put_expiring(db, ExpiringTable::LoginStates, &key, expires_at, &text, now)
        })
        .await
    }

    async fn take_login_state(&self, key: &str, now: i64) -> StoreResult<Option<LoginStateRecord>> {
        let key = key.to_owned();
        // One statement on the one writing connection: of two takes, the second finds the
        // row gone. An expired row is deleted too, and reported as absent.
        let taken = self
            .with(move |db| {
                db.query_row(
                    "DELETE FROM login_states WHERE key = ?1 RETURNING expires_at, record",
                    params![key],
                    |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()
                .map_err(|error| unavailable(&error))
            })
            .await?;
        match taken {
            Some((expires_at, text)) if expires_at > now => decode(&text).map(Some),
            _ => Ok(None),
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn ping(&self) -> StoreResult<()> {
        self.read(|db| {
            db.prepare_cached("SELECT 1")
                .map_err(|error| unavailable(&error))?
                .query_row([], |_| Ok(()))
                .map_err(|error| unavailable(&error))
        })
        .await
    }

    fn backend_name(&self) -> &'static str {
        "sqlite"
    }

    fn change_feed(&self) -> Option<Arc<dyn ChangeFeed>> {
        match SqliteFeed::open(&self.path, self.timeouts) {
            Ok(feed) => Some(Arc::new(feed)),
            Err(error) => {
                tracing::warn!(%error, "cannot follow the store's changes; caching nothing");
                None
            }
        }
    }
}
