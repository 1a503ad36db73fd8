//! Where the data lives: the `--store` location, parsed once into a [`StoreLocation`] before
//! anything is opened, so that a typo is bad input (exit 2, one line naming `--store`) and
//! never a new SQLite file named after a URL.
//!
//! | form | store |
//! |---|---|
//! | `redis://[user[:password]@]host[:port][/db]` | one Redis server |
//! | `rediss://…` | the same over TLS, the server's certificate checked against the host name |
//! | `redis+cluster://host:port,host:port…` | a Redis Cluster; any reachable node will do as a seed |
//! | `rediss+cluster://host:port,…` | a Redis Cluster over TLS (every node, seeds and discovered ones) |
//! | `redis+sentinel://host:port,host:port/SERVICE[?db=N]` | the primary Redis Sentinel names `SERVICE`, followed across failovers |
//! | `rediss+sentinel://…` | the same with TLS to the Sentinels and to the primary |
//! | anything else without a scheme | the path of the embedded SQLite file |
//!
//! A location that starts like a URL — a scheme of two or more letters followed by `:` —
//! is one, known or not: `postgres://db/linkd` and `redis:/host` are refused rather than
//! taken for file names. A SQLite file whose name has such a prefix is written with a
//! directory, `./name:with-colon.db`.

use std::path::PathBuf;

/// The parsed `--store` location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// The embedded SQLite store's file.
    Sqlite(PathBuf),
    /// A Redis deployment.
    Redis(RedisLocation),
}

/// How the Redis deployment is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum RedisTopology {
    /// One server, at the location's URL (`redis://` or `rediss://`, as the redis crate
    /// reads it).
    Single {
        /// The URL, with any credentials it carries.
        url: String,
    },
    /// A Redis Cluster, reached through any of its seed nodes (`host:port`).
    Cluster {
        /// Seed nodes, `host:port` each.
        nodes: Vec<String>,
    },
    /// The primary of a service monitored by Redis Sentinel.
    Sentinel {
        /// The Sentinels, `host:port` each, asked in this order.
        sentinels: Vec<String>,
        /// The service (master) name the Sentinels know the primary by.
        service: String,
        /// The database number on the primary.
        db: i64,
    },
}

/// A Redis location: its topology, whether it speaks TLS, and the credentials written in
/// the URL itself (those from the environment come separately, see
/// [`super::redis_connect::RedisCredentials`]).
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    /// One server, a cluster or a Sentinel-managed primary.
    pub topology: RedisTopology,
    /// TLS to every server (`rediss…` schemes).
    pub tls: bool,
    /// The user name written in the URL, if any.
    pub username: Option<String>,
    /// The password written in the URL, if any.
    pub password: Option<String>,
}

impl RedisLocation {
    /// The scheme the location was written with, for messages.
    pub fn scheme(&self) -> &'static str {
        match (&self.topology, self.tls) {
            (RedisTopology::Single { .. }, false) => "redis",
            (RedisTopology::Single { .. }, true) => "rediss",
            (RedisTopology::Cluster { .. }, false) => "redis+cluster",
            (RedisTopology::Cluster { .. }, true) => "rediss+cluster",
            (RedisTopology::Sentinel { .. }, false) => "redis+sentinel",
            (RedisTopology::Sentinel { .. }, true) => "rediss+sentinel",
        }
    }
}

// Hand-written so that a password in the URL never reaches a log through `{:?}`.
impl std::fmt::Debug for RedisTopology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Single { url } => f.debug_struct("Single").field("url", &redact(url)).finish(),
            Self::Cluster { nodes } => f.debug_struct("Cluster").field("nodes", nodes).finish(),
            Self::Sentinel {
                sentinels,
                service,
                db,
            } => f
                .debug_struct("Sentinel")
                .field("sentinels", sentinels)
                .field("service", service)
                .field("db", db)
                .finish(),
        }
    }
}

impl std::fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLocation")
            .field("topology", &self.topology)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Redis(redis) => f.debug_tuple("Redis").field(redis).finish(),
        }
    }
}

/// Why a `--store` value is not a location; displayed as one line naming `--store`, with any
/// password in the value hidden.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--store {location}: {reason}")]
pub struct LocationError {
    location: String,
    reason: String,
}

impl LocationError {
    fn new(location: &str, reason: impl Into<String>) -> Self {
        Self {
            location: redact(location),
            reason: reason.into(),
        }
    }
}

/// The schemes of Redis locations, each with its topology's name in messages.
const REDIS_SCHEMES: [&str; 6] = [
    "redis",
    "rediss",
    "redis+cluster",
    "rediss+cluster",
    "redis+sentinel",
    "rediss+sentinel",
];

impl StoreLocation {
    /// Parses a `--store` value.
    pub fn parse(text: &str) -> Result<Self, LocationError> {
        if text.trim().is_empty() {
            return Err(LocationError::new(text, "must not be empty"));
        }
        let Some(scheme) = scheme_of(text) else {
            return Ok(Self::Sqlite(PathBuf::from(text)));
        };
        let known = REDIS_SCHEMES.join(", ");
        if !REDIS_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(LocationError::new(
                text,
                format!(
                    "unknown scheme `{scheme}:` (Redis locations start with one of {known}; \
                     a SQLite file is a plain path)"
                ),
            ));
        }
        let scheme = scheme.to_ascii_lowercase();
        let rest = &text[scheme.len() + 1..];
        let Some(rest) = rest.strip_prefix("//") else {
            return Err(LocationError::new(
                text,
                format!("`{scheme}:` must be followed by `//`, as in {scheme}://host:port"),
            ));
        };
        let tls = scheme.starts_with("rediss");
        let location = match scheme.split_once('+').map(|(_, kind)| kind) {
            None => single(text, tls)?,
            Some("cluster") => cluster(text, rest, tls)?,
            Some(_) => sentinel(text, rest, tls)?,
        };
        Ok(Self::Redis(location))
    }

    /// Whether the location carries a password (which must not come from the command line).
    pub fn has_password(&self) -> bool {
        matches!(self, Self::Redis(redis) if redis.password.is_some())
    }
}

/// The scheme of a location that looks like a URL: two or more characters of a URL scheme
/// followed by `:`. One letter and a colon is left alone (it is a drive-like file name, and
/// no store is named so).
fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once(':')?;
    let mut characters = scheme.chars();
    let starts_with_letter = characters.next().is_some_and(|c| c.is_ascii_alphabetic());
    let url_scheme = characters.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    (starts_with_letter && url_scheme && scheme.len() >= 2).then_some(scheme)
}

fn single(text: &str, tls: bool) -> Result<RedisLocation, LocationError> {
    let Some(url) = redis::parse_redis_url(text) else {
        return Err(LocationError::new(text, "not a valid Redis URL"));
    };
    if url.host_str().is_none_or(str::is_empty) {
        return Err(LocationError::new(text, "names no host"));
    }
    let path = url.path().trim_start_matches('/');
    if !path.is_empty() && path.parse::<i64>().is_err() {
        return Err(LocationError::new(
            text,
            "the path must be a database number, as in redis://host:6379/0",
        ));
    }
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8_lossy()
            .into_owned()
    };
    Ok(RedisLocation {
        topology: RedisTopology::Single {
            url: text.to_owned(),
        },
        tls,
        username: Some(url.username())
            .filter(|name| !name.is_empty())
            .map(decode),
        password: url.password().map(decode),
    })
}

/// Splits `user:password@` off a multi-host location.
fn userinfo(rest: &str) -> (Option<String>, Option<String>, &str) {
    let Some((info, hosts)) = rest.rsplit_once('@') else {
        return (None, None, rest);
    };
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8_lossy()
            .into_owned()
    };
    let (user, password) = match info.split_once(':') {
        Some((user, password)) => (user, Some(decode(password))),
        None => (info, None),
    };
    (
        Some(user).filter(|u| !u.is_empty()).map(decode),
        password,
        hosts,
    )
}

/// `host:port,host:port`, each checked to have a host and a numeric port.
fn host_list(text: &str, hosts: &str) -> Result<Vec<String>, LocationError> {
    let nodes: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|node| !node.is_empty())
        .map(str::to_owned)
        .collect();
    if nodes.is_empty() {
        return Err(LocationError::new(text, "names no host"));
    }
    for node in &nodes {
        let port_ok = node
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !port_ok {
            return Err(LocationError::new(
                text,
                format!("`{node}` is not host:port"),
            ));
        }
    }
    Ok(nodes)
}

fn cluster(text: &str, rest: &str, tls: bool) -> Result<RedisLocation, LocationError> {
    let (username, password, hosts) = userinfo(rest);
    let hosts = hosts.trim_end_matches('/');
    if hosts.contains('/') || hosts.contains('?') {
        return Err(LocationError::new(
            text,
            "a cluster location is host:port,host:port… (a cluster has only database 0)",
        ));
    }
    Ok(RedisLocation {
        topology: RedisTopology::Cluster {
            nodes: host_list(text, hosts)?,
        },
        tls,
        username,
        password,
    })
}

fn sentinel(text: &str, rest: &str, tls: bool) -> Result<RedisLocation, LocationError> {
    let (username, password, rest) = userinfo(rest);
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let Some((hosts, service)) = rest.split_once('/') else {
        return Err(LocationError::new(
            text,
            "a Sentinel location names its service: redis+sentinel://host:port,host:port/SERVICE",
        ));
    };
    let service = service.trim_end_matches('/');
    if service.is_empty() || service.contains('/') {
        return Err(LocationError::new(
            text,
            "a Sentinel location names its service: redis+sentinel://host:port,host:port/SERVICE",
        ));
    }
    let mut db = 0;
    for pair in query.into_iter().flat_map(|query| query.split('&')) {
        match pair.split_once('=') {
            Some(("db", number)) => {
                db = number
                    .parse::<i64>()
                    .ok()
                    .filter(|db| *db >= 0)
                    .ok_or_else(|| {
                        LocationError::new(text, "db must be a database number, as in ?db=0")
                    })?;
            }
            _ => {
                return Err(LocationError::new(
                    text,
                    format!("unknown parameter `{pair}` (only db=N is known)"),
                ));
            }
        }
    }
    Ok(RedisLocation {
        topology: RedisTopology::Sentinel {
            sentinels: host_list(text, hosts)?,
            service: service.to_owned(),
            db,
        },
        tls,
        username,
        password,
    })
}

/// The location without a password, for logs and errors.
pub fn redact(location: &str) -> String {
    match (location.find("://"), location.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let info = &location[scheme_end + 3..at];
            match info.split_once(':') {
                Some((user, _)) => format!(
                    "{}://{user}:***{}",
                    &location[..scheme_end],
                    &location[at..]
                ),
                None => location.to_owned(),
            }
        }
        _ => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(text: &str) -> RedisLocation {
        match StoreLocation::parse(text).unwrap() {
            StoreLocation::Redis(redis) => redis,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn plain_paths_are_sqlite_files() {
        for path in [
            "linkd.db",
            "/var/lib/linkd/linkd.db",
            "./a:b.db",
            "data/x",
            "c:x.db",
        ] {
            assert_eq!(
                StoreLocation::parse(path).unwrap(),
                StoreLocation::Sqlite(PathBuf::from(path)),
                "{path}"
            );
        }
    }

    #[test]
    fn url_like_locations_of_unknown_schemes_are_refused() {
        for text in [
            "postgres://db/linkd",
            "redis:/host",
            "redis:host:6379",
            "file:linkd.db",
            "http://x",
            "localhost:6379",
            "redis+cluster:/a:1",
        ] {
            let error = StoreLocation::parse(text).unwrap_err().to_string();
            assert!(error.starts_with("--store "), "{text}: {error}");
            assert!(!error.contains('\n'), "{text}: {error}");
        }
    }

    #[test]
    fn redis_forms_parse() {
        let single = redis("rediss://user:pa%40ss@db.internal:6380/2");
        assert!(single.tls);
        assert_eq!(single.username.as_deref(), Some("user"));
        assert_eq!(single.password.as_deref(), Some("pa@ss"));
        assert!(!redis("redis://db:6379").tls);
        assert!(redis("redis://db").password.is_none());

        let cluster = redis("rediss+cluster://a:7000,b:7001");
        assert!(cluster.tls);
        assert_eq!(
            cluster.topology,
            RedisTopology::Cluster {
                nodes: vec!["a:7000".into(), "b:7001".into()]
            }
        );

        let sentinel = redis("redis+sentinel://s1:26379,s2:26380/mymaster?db=3");
        assert_eq!(
            sentinel.topology,
            RedisTopology::Sentinel {
                sentinels: vec!["s1:26379".into(), "s2:26380".into()],
                service: "mymaster".into(),
                db: 3
            }
        );
        for bad in [
            "redis+sentinel://s1:26379",
            "redis+sentinel://s1:26379/",
            "redis+sentinel://s1:26379/m?db=x",
            "redis+sentinel://s1:26379/m?x=1",
            "redis+cluster://a",
            "redis+cluster://a:1/0",
            "redis://db:6379/zero",
            "redis://",
        ] {
            assert!(StoreLocation::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_are_never_shown() {
        let error = StoreLocation::parse("redis://u:hunter2@db:6379/x")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        let location = StoreLocation::parse("redis://u:hunter2@db:6379").unwrap();
        assert!(location.has_password());
        assert!(!format!("{location:?}").contains("hunter2"));
        assert_eq!(
            redact("redis://:hunter2@db:6379/0"),
            "redis://:***@db:6379/0"
        );
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
    }
}
