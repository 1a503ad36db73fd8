//! A fault-injecting proxy between linkd and Redis. It reads the client's commands one at a
//! time (RESP arrays of bulk strings, as client libraries send them) and, depending on the
//! fault in force, forwards each to Redis and relays its one reply, holds it before
//! forwarding (so that it lands after the client gave up), answers it with an error of its
//! own (`-READONLY`, `-LOADING`, `-OOM`, …) without forwarding, or drops the connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does to each command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forward and relay.
    None,
    /// Hold every command this long, then forward it: it lands after a short client timeout.
    Delay(Duration),
    /// Answer every command with this error (e.g. `LOADING Redis is loading the dataset`).
    FailAll(&'static str),
    /// Answer commands that may write (scripts included) with this error; forward the rest.
    FailWrites(&'static str),
    /// Close every connection at its next command, and new ones at once.
    Drop,
    /// Hold the next command whose bytes contain this text (e.g. one script's key) this long,
    /// then forward it; the fault clears as that command is caught.
    DelayOnce(&'static str, Duration),
}

/// Errors of a Redis that cannot take writes, is starting, or is full.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// The running proxy.
pub struct FaultProxy {
    pub address: SocketAddr,
    fault: Arc<Mutex<Fault>>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy in front of the Redis on `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let fault = Arc::new(Mutex::new(Fault::None));
        let task = tokio::spawn({
            let fault = Arc::clone(&fault);
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    let fault = Arc::clone(&fault);
                    tokio::spawn(async move {
                        let _ = serve(client, upstream, fault).await;
                    });
                }
            }
        });
        Self {
            address,
            fault,
            task,
        }
    }

    /// The `redis://` URL linkd should use.
    pub fn url(&self) -> String {
        format!("redis://{}", self.address)
    }

    /// Puts `fault` in force for every command from now on.
    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Commands that never write; every other command (scripts included) may.
const READ_ONLY_COMMANDS: &[&str] = &[
    "GET",
    "MGET",
    "HGET",
    "HMGET",
    "HGETALL",
    "HKEYS",
    "HVALS",
    "HLEN",
    "HEXISTS",
    "EXISTS",
    "TTL",
    "PTTL",
    "SMEMBERS",
    "SISMEMBER",
    "SCARD",
    "ZRANGE",
    "ZSCORE",
    "LRANGE",
    "LLEN",
    "SCAN",
    "HSCAN",
    "TYPE",
    "PING",
    "ECHO",
    "INFO",
    "TIME",
    "HELLO",
    "CLIENT",
    "SELECT",
    "READONLY",
    "CLUSTER",
    "COMMAND",
    "STRLEN",
];

async fn serve(
    client: TcpStream,
    upstream: SocketAddr,
    fault: Arc<Mutex<Fault>>,
) -> std::io::Result<()> {
    if *fault.lock().unwrap() == Fault::Drop {
        return Ok(());
    }
    let (client_read, mut client_write) = client.into_split();
    let mut client_read = BufReader::new(client_read);
    let server = TcpStream::connect(upstream).await?;
    let (server_read, mut server_write) = server.into_split();
    let mut server_read = BufReader::new(server_read);
    loop {
        let Some((raw, name)) = read_command(&mut client_read).await? else {
            return Ok(());
        };
        let current = {
            let mut fault = fault.lock().unwrap();
            let current = fault.clone();
            match current {
                Fault::DelayOnce(needle, _) if contains(&raw, needle) => {
                    *fault = Fault::None;
                    current
                }
                // Not the command to hold: it passes.
                Fault::DelayOnce(..) => Fault::None,
                current => current,
            }
        };
        match current {
            Fault::Drop => return Ok(()),
            Fault::FailAll(error) => {
                client_write
                    .write_all(format!("-{error}\r\n").as_bytes())
                    .await?;
                continue;
            }
            Fault::FailWrites(error) if !READ_ONLY_COMMANDS.contains(&name.as_str()) => {
                client_write
                    .write_all(format!("-{error}\r\n").as_bytes())
                    .await?;
                continue;
            }
            Fault::Delay(delay) | Fault::DelayOnce(_, delay) => tokio::time::sleep(delay).await,
            Fault::FailWrites(_) | Fault::None => {}
        }
        server_write.write_all(&raw).await?;
        let mut reply = Vec::new();
        read_value(&mut server_read, &mut reply).await?;
        client_write.write_all(&reply).await?;
    }
}

fn contains(raw: &[u8], needle: &str) -> bool {
    raw.windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// Reads one command: its raw bytes and its upper-case name; `None` at end of stream.
async fn read_command<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<(Vec<u8>, String)>> {
    let mut raw = Vec::new();
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).await? == 0 {
        return Ok(None);
    }
    raw.extend_from_slice(&line);
    let header = String::from_utf8_lossy(&line).trim_end().to_owned();
    let Some(count) = header.strip_prefix('*') else {
        // An inline command: its first word is its name.
        let name = header.split(' ').next().unwrap_or_default().to_uppercase();
        return Ok(Some((raw, name)));
    };
    let count: usize = count.parse().map_err(invalid)?;
    let mut name = String::new();
    for index in 0..count {
        let mut value = Vec::new();
        let content = read_value(reader, &mut value).await?;
        if index == 0 {
            name = String::from_utf8_lossy(&content).to_uppercase();
        }
        raw.extend_from_slice(&value);
    }
    Ok(Some((raw, name)))
}

fn invalid<E: std::fmt::Debug>(error: E) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{error:?}"))
}

/// Reads one RESP2/RESP3 value into `raw`; returns the payload of a bulk string (empty for
/// other types).
async fn read_value<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    raw: &mut Vec<u8>,
) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    raw.extend_from_slice(&line);
    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
    let (kind, rest) = text.split_at(1);
    match kind {
        "+" | "-" | ":" | "_" | "#" | "," | "(" => Ok(Vec::new()),
        "$" | "=" | "!" => {
            let length: i64 = rest.parse().map_err(invalid)?;
            if length < 0 {
                return Ok(Vec::new());
            }
            let mut content = vec![0; usize::try_from(length).unwrap() + 2];
            reader.read_exact(&mut content).await?;
            raw.extend_from_slice(&content);
            content.truncate(content.len() - 2);
            Ok(content)
        }
        "*" | "~" | ">" | "%" | "|" => {
            let count: i64 = rest.parse().map_err(invalid)?;
            let items = if matches!(kind, "%" | "|") {
                count * 2
            } else {
                count
            };
            for _ in 0..items.max(0) {
                Box::pin(read_value(reader, raw)).await?;
            }
            Ok(Vec::new())
        }
        _ => Err(invalid(text)),
    }
}
