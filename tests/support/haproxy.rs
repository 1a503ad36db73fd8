//! What the tests that run linkd behind HAProxy share: finding the system tools, child
//! processes with their output collected, a keys directory with a TLS certificate as
//! production has it, and the configurations of deploy/haproxy adapted to the test's
//! addresses.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

const LINKD: &str = env!("CARGO_BIN_EXE_linkd");
const REPOSITORY: &str = env!("CARGO_MANIFEST_DIR");

/// The path of `relative` under deploy/.
pub fn deploy_file(relative: &str) -> PathBuf {
    Path::new(REPOSITORY).join("deploy").join(relative)
}

/// The text of `relative` under deploy/.
pub fn read_deploy_file(relative: &str) -> String {
    std::fs::read_to_string(deploy_file(relative)).unwrap()
}

/// `program` from PATH or the system directories, or a failure naming what installs it.
pub fn tool(program: &str, install: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is missing: scripts/test installs it ({install})"))
}

/// Runs `command` to its end.
pub fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"))
}

/// `bytes` as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fails the test with `what`'s output unless it succeeded.
pub fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// Writes `contents` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Replaces `from` (which must occur) in `text`, so a changed artifact breaks the test that
/// adapts it instead of being tested unchanged.
pub fn substitute(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "expected {from:?} in the artifact");
    text.replace(from, to)
}

/// A keys directory as production has it: a current ES256 signing key, and a TLS
/// certificate for `localhost` and 127.0.0.1 (`tls.crt`, `tls.key`; `tls.pem` holds both,
/// as HAProxy wants them).
pub fn keys_dir(dir: &Path) -> PathBuf {
    let keys = dir.join("keys");
    for args in [&["keys", "generate"][..], &["keys", "rotate", "--force"]] {
        let output = run(Command::new(LINKD).arg("--keys-dir").arg(&keys).args(args));
        assert_success("linkd keys", &output);
    }
    let output = run(Command::new(tool("openssl", "apt-get install openssl"))
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:P-256", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        // rustls refuses a CA certificate as a server's, which openssl makes by default.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(keys.join("tls.key"))
        .arg("-out")
        .arg(keys.join("tls.crt")));
    assert_success("openssl req", &output);
    let pem = std::fs::read_to_string(keys.join("tls.crt")).unwrap()
        + &std::fs::read_to_string(keys.join("tls.key")).unwrap();
    write(&keys, "tls.pem", &pem);
    keys
}

/// An HAProxy configuration of deploy/haproxy with the test's certificate and addresses.
pub fn config(name: &str, keys: &Path, bind: &str, servers: &[(&str, &str)]) -> String {
    let mut config = read_deploy_file(&format!("haproxy/{name}"));
    config = substitute(&config, "    bind :443", &format!("    bind {bind}"));
    config = config
        .replace(
            "/etc/haproxy/certs/linkd.pem",
            &keys.join("tls.pem").display().to_string(),
        )
        .replace(
            "/etc/haproxy/linkd-ca.pem",
            &keys.join("tls.crt").display().to_string(),
        );
    for (from, to) in servers {
        config = substitute(&config, from, to);
    }
    config
}

/// A child process killed when the test ends, with its standard output and error
/// collected.
pub struct Running {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Running {
    /// Spawns `command` with its output collected.
    pub fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("{command:?}: {error}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().unwrap().push(line);
                }
            });
        }
        Self { child, log }
    }

    /// The lines the process wrote so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Sends `signal` (`TERM`, `HUP`, …) to the process.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// The exit status, if the process has exited.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
