//! What the admin commands share at the terminal: opening the store, reading a secret from
//! stdin without echoing it anywhere, and printing tables and timestamps that stored text
//! cannot use to drive the operator's terminal.

use std::io::{BufRead as _, IsTerminal as _, Read as _};
use std::process::ExitCode;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::{bad_input, failure};
use crate::store::location::StoreLocation;
use crate::store::redis_connect::{RedisConnectSettings, RedisCredentials};
use crate::store::{SharedStore, StoreTimeouts};

/// Longest first line read from stdin, in bytes: room for the longest accepted secret or
/// password in four-byte characters, while a runaway pipe cannot exhaust memory.
const MAX_STDIN_LINE_BYTES: u64 = 8192;

/// Opens the store, with the Redis credentials and CA file of the environment: a location
/// that is not one, or unusable credentials or CA file, is bad input (exit code 2); a store
/// that cannot be reached is a failure (exit code 1).
pub(crate) async fn open_store(location: &str) -> Result<SharedStore, ExitCode> {
    let location = StoreLocation::parse(location).map_err(bad_input)?;
    let mut settings = RedisConnectSettings {
        timeouts: StoreTimeouts::default(),
        ..RedisConnectSettings::default()
    };
    if matches!(location, StoreLocation::Redis(_)) {
        settings.credentials = RedisCredentials::from_env().map_err(bad_input)?;
        if let Some(path) = std::env::var_os("LINKD_STORE_CA_FILE").filter(|path| !path.is_empty())
        {
            settings.ca_certificates = Some(
                crate::store::redis_connect::read_ca_file(std::path::Path::new(&path))
                    .map_err(|reason| bad_input(format_args!("LINKD_STORE_CA_FILE: {reason}")))?,
            );
        }
    }
    crate::store::open_location(&location, &settings)
        .await
        .map_err(failure)
}

/// Opens an existing store for a command that only reads: a SQLite file that does not exist
/// is reported (exit code 1) instead of being created empty.
pub(crate) async fn open_existing_store(location: &str) -> Result<SharedStore, ExitCode> {
    let parsed = StoreLocation::parse(location).map_err(bad_input)?;
    if let StoreLocation::Sqlite(path) = &parsed
        && !path.is_file()
    {
        return Err(failure(format_args!(
            "store {location}: no such file (give --store or LINKD_STORE; commands that only read never create a store)"
        )));
    }
    open_store(location).await
}

/// How a list or show command prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// A table (or `key: value` lines) for people.
    #[default]
    Text,
    /// JSON on one line, for scripts: an array of objects for a list, one object for a show.
    Json,
}

/// The `--output` option of list and show commands.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

/// Prints `value` as one line of JSON. JSON escapes control characters, so stored text
/// cannot drive the terminal.
pub(crate) fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

/// Prints rows as a table, or as the JSON array `objects`, as `output` asks.
pub(crate) fn print_listing<const COLUMNS: usize>(
    output: OutputFormat,
    header: [&str; COLUMNS],
    rows: &[[String; COLUMNS]],
    objects: Vec<serde_json::Value>,
) {
    match output {
        OutputFormat::Text => print_table(header, rows),
        OutputFormat::Json => print_json(&serde_json::Value::Array(objects)),
    }
}

/// Reads the first line of stdin without its line ending. Problems with the input itself are
/// bad input (exit 2); an unreadable stdin is a failure (exit 1). The content is never echoed.
pub(crate) fn read_stdin_line(flag: &str, what: &str) -> Result<String, ExitCode> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        // The typed text is echoed by the terminal; the prompt goes to stderr so that stdout
        // stays machine-readable.
        eprintln!("linkd: type the {what} and press Enter");
    }
    let mut line = Vec::new();
    let read = stdin
        .lock()
        .take(MAX_STDIN_LINE_BYTES)
        .read_until(b'\n', &mut line);
    if let Err(error) = read {
        return Err(failure(format_args!("{flag}: cannot read stdin: {error}")));
    }
    let complete = line.last() == Some(&b'\n');
    if !complete && line.len() as u64 >= MAX_STDIN_LINE_BYTES {
        return Err(bad_input(format_args!(
            "{flag}: the first line of stdin is longer than {MAX_STDIN_LINE_BYTES} bytes"
        )));
    }
    if complete {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    String::from_utf8(line).map_err(|_| {
        bad_input(format_args!(
            "{flag}: the {what} on stdin is not valid UTF-8"
        ))
    })
}

/// Unix seconds as an RFC 3339 UTC timestamp; the raw number if out of range.
pub(crate) fn rfc3339(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|time| time.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix_seconds.to_string())
}

/// Replaces control characters so that stored text cannot drive the operator's terminal.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Prints rows under a header, columns padded to their widest cell.
pub(crate) fn print_table<const COLUMNS: usize>(
    header: [&str; COLUMNS],
    rows: &[[String; COLUMNS]],
) {
    let header = header.map(str::to_owned);
    let lines = std::iter::once(&header)
        .chain(rows)
        .map(|row| row.each_ref().map(|cell| printable(cell)))
        .collect::<Vec<_>>();
    let mut widths = [0usize; COLUMNS];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for line in &lines {
        let mut text = String::new();
        for (column, (cell, width)) in line.iter().zip(widths).enumerate() {
            if column + 1 == COLUMNS {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        println!("{}", text.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(i64::MAX), i64::MAX.to_string());
    }

    #[test]
    fn control_characters_are_not_printed() {
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\u{fffd}[2Jb\u{fffd}");
        assert_eq!(printable("Acme ✨"), "Acme ✨");
    }
}
