//! `linkd keys generate|rotate|list|retire`: the operator's side of key rotation
//! (DESIGN.md "Keys and rotation").

use std::path::Path;
use std::process::ExitCode;

use crate::clock::{Clock as _, SystemClock};
use crate::tokens::keyring::{self, Algorithm, KeyringError, RotationPolicy};

/// Key management commands.
#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Add a next key: published in every server's JWKS, not signing until rotated in.
    Generate {
        /// Signing algorithm: es256 (default) or eddsa.
        #[arg(long, default_value = "es256")]
        alg: Algorithm,
    },
    /// Make the next key current and the current key previous.
    Rotate {
        /// Seconds the next key must have been published (longer than the servers'
        /// reload interval, and than JWKS caches live).
        #[arg(long, default_value_t = 3600)]
        min_published_secs: i64,
        /// The servers' keyring reload interval (`serve --key-reload-secs`).
        #[arg(long, default_value_t = 10)]
        reload_interval_secs: i64,
        /// Rotate even if the next key was published too recently.
        #[arg(long)]
        force: bool,
    },
    /// Print the keyring as a table.
    List(super::terminal::OutputArgs),
    /// Remove a previous key once no token it signed can still be valid.
    Retire {
        /// The key id.
        kid: String,
        /// Longest token lifetime plus clock leeway, in seconds.
        #[arg(long, default_value_t = 3660)]
        max_token_lifetime_secs: i64,
        /// Retire even if tokens it signed may still be valid.
        #[arg(long)]
        force: bool,
    },
}

fn report(error: &KeyringError) -> ExitCode {
    if error.is_refusal() {
        super::bad_input(error)
    } else {
        super::failure(error)
    }
}

fn rfc3339(seconds: Option<i64>) -> String {
    seconds
        .and_then(|seconds| time::OffsetDateTime::from_unix_timestamp(seconds).ok())
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "-".to_owned())
}

/// Runs a `keys` command against the keys directory `keys_dir`.
pub async fn run(keys_dir: &Path, command: KeysCommand) -> ExitCode {
    let now = SystemClock.now();
    match command {
        KeysCommand::Generate { alg } => match keyring::generate(keys_dir, alg, now) {
            Ok(key) => {
                println!("{}", key.kid);
                eprintln!(
                    "generated {} key {} as next; servers publish it within their reload interval",
                    key.alg, key.kid
                );
                ExitCode::SUCCESS
            }
            Err(error) => report(&error),
        },
        KeysCommand::Rotate {
            min_published_secs,
            reload_interval_secs,
            force,
        } => {
            let policy = RotationPolicy {
                min_published_secs,
                reload_interval_secs,
                ..RotationPolicy::default()
            };
            match keyring::rotate(keys_dir, now, policy, force) {
                Ok(key) => {
                    println!("{}", key.kid);
                    eprintln!("key {} is now current", key.kid);
                    ExitCode::SUCCESS
                }
                Err(error) => report(&error),
            }
        }
        KeysCommand::List(output) => match keyring::list(keys_dir) {
            Ok(keys) => {
                let rows = keys
                    .iter()
                    .map(|key| {
                        [
                            key.kid.clone(),
                            key.alg.to_string(),
                            key.state.to_string(),
                            rfc3339(Some(key.created_at)),
                            rfc3339(key.activated_at),
                            rfc3339(key.deactivated_at),
                        ]
                    })
                    .collect::<Vec<_>>();
                let objects = keys
                    .iter()
                    .map(|key| {
                        let at = |time: Option<i64>| time.map(super::terminal::rfc3339);
                        serde_json::json!({
                            "kid": key.kid,
                            "alg": key.alg.to_string(),
                            "state": key.state.to_string(),
                            "created_at": super::terminal::rfc3339(key.created_at),
                            "activated_at": at(key.activated_at),
                            "deactivated_at": at(key.deactivated_at),
                        })
                    })
                    .collect();
                super::terminal::print_listing(
                    output.output,
                    ["KID", "ALG", "STATE", "CREATED", "ACTIVATED", "DEACTIVATED"],
                    &rows,
                    objects,
                );
                ExitCode::SUCCESS
            }
            Err(error) => report(&error),
        },
        KeysCommand::Retire {
            kid,
            max_token_lifetime_secs,
            force,
        } => {
            let policy = RotationPolicy {
                max_token_lifetime_secs,
                ..RotationPolicy::default()
            };
            match keyring::retire(keys_dir, &kid, now, policy, force) {
                Ok(key) => {
                    eprintln!("retired key {}", key.kid);
                    ExitCode::SUCCESS
                }
                Err(error) => report(&error),
            }
        }
    }
}
