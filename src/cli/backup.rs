//! `linkd backup --out FILE`: a consistent copy of the embedded SQLite store, taken with
//! SQLite's online backup while servers keep using it. A Redis store is backed up by Redis
//! itself (BGSAVE or the append-only file), not by linkd.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::cli::{bad_input, failure};

/// Pages copied per step: small steps let servers write between them.
const PAGES_PER_STEP: std::ffi::c_int = 256;
/// Pause between steps.
const PAUSE_BETWEEN_STEPS: Duration = Duration::from_millis(5);

/// Arguments of `linkd backup`.
#[derive(Debug, clap::Args)]
pub struct BackupArgs {
    /// Where to write the copy; an existing file is never replaced.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Copies the SQLite store at `store` to `args.out`.
pub fn run(store: &str, args: &BackupArgs) -> ExitCode {
    if crate::store::is_redis_location(store) {
        return bad_input(
            "backup: a Redis store is backed up by Redis itself (BGSAVE or the append-only file); see the README's \"Backups\"",
        );
    }
    if args.out.exists() {
        return bad_input(format_args!(
            "--out {}: file exists; choose a new path",
            args.out.display()
        ));
    }
    let source = Path::new(store);
    if !source.is_file() {
        return failure(format_args!("store {store}: no such file"));
    }
    match copy(source, &args.out) {
        Ok(()) => {
            eprintln!("backed up {store} to {}", args.out.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            let _ = std::fs::remove_file(&args.out);
            failure(format_args!("backup of {store}: {error}"))
        }
    }
}

fn copy(source: &Path, out: &Path) -> rusqlite::Result<()> {
    let source = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut copy = Connection::open(out)?;
    let backup = rusqlite::backup::Backup::new(&source, &mut copy)?;
    backup.run_to_completion(PAGES_PER_STEP, PAUSE_BETWEEN_STEPS, None)
}
