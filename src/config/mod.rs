//! Configuration of `linkd serve`, in three steps:
//!
//! 1. [`raw`]: flags, `LINKD_*` environment variables and the optional `--config` TOML file
//!    fill one [`RawSettings`], layered flag over variable over file;
//! 2. [`validate`]: one pure function per section turns it into typed [`ValidSettings`],
//!    applying the [`defaults`] and reporting every problem at once, each naming the flag
//!    that fixes it;
//! 3. [`load`]: reads the files the settings name and assembles the [`ServeSettings`] a
//!    server runs with.
//!
//! Nothing here opens the store, loads the keyring or listens: that is the server's.
//! [`check`] makes the checks of a start that need no writing, for `serve --check-config`.

pub mod check;
pub mod defaults;
pub mod load;
pub mod raw;
pub mod validate;

pub use defaults::{
    KEYS_DIR as DEFAULT_KEYS_DIR, LISTEN as DEFAULT_LISTEN, STORE as DEFAULT_STORE,
};
pub use load::ServeSettings;
pub use raw::RawSettings;
pub use validate::listener::TlsSettings;
pub use validate::{Problems, ValidSettings};

/// Lays `flags` (the flags and environment clap read) over the `--config` file they name and
/// validates the result, reporting the file's problems with every other.
pub fn resolve(flags: RawSettings) -> Result<ValidSettings, Problems> {
    let (raw, file_problem) = raw::layered(flags);
    match (validate::validate(&raw), file_problem) {
        (Ok(valid), None) => Ok(valid),
        (Ok(_), Some(problem)) => Err(vec![problem]),
        (Err(problems), problem) => Err(problem.into_iter().chain(problems).collect()),
    }
}
