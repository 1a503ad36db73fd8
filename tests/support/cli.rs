//! Running the linkd binary as an operator does, on a given store.

use std::ffi::OsStr;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

/// Runs `linkd --store <store> <args>` with `stdin` on its standard input (none: empty) and
/// `LINKD_STORE`/`LINKD_KEYS_DIR` cleared, so that only the arguments given count.
pub fn run(store: impl AsRef<OsStr>, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_linkd"))
        .env_remove("LINKD_STORE")
        .env_remove("LINKD_KEYS_DIR")
        .arg("--store")
        .arg(store)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A command refused before it reads stdin closes the pipe early; that is not a failure.
    let _ = pipe.write_all(stdin.unwrap_or_default().as_bytes());
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// [`run`], asserting that the command succeeded; returns its standard output.
pub fn run_ok(store: impl AsRef<OsStr>, args: &[&str], stdin: Option<&str>) -> String {
    let output = run(store, args, stdin);
    assert!(
        output.status.success(),
        "linkd {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `linkd` with `args` (ending in `--output json`) against `store`: its JSON output.
pub fn run_json(store: impl AsRef<OsStr>, args: &[&str]) -> serde_json::Value {
    let out = run_ok(store, args, None);
    serde_json::from_str(&out).unwrap_or_else(|error| panic!("{args:?}: {error}: {out}"))
}
