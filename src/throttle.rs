//! Throttling of guesses at client secrets and passwords that never lets a stranger deny
//! service to the real client or user.
//!
//! Failures are counted in the store (shared by every instance, in fixed windows) under
//! keys that name the *source* of the guesses:
//!
//! | counter | refuses | why it cannot lock out the real owner |
//! |---|---|---|
//! | client secret failures per (client, source) | that source's wrong secrets for that client (429) | a right secret is always accepted |
//! | client secret failures per source, for unknown client ids | that source's wrong secrets (429) | idem; unknown client ids only ever touch this one key per source |
//! | password failures per (account, source) | that source, for that account | the owner signs in from their own address |
//! | password failures per source | that source | idem |
//! | password failures per account | nobody: each attempt on the account waits a little longer, up to a bound | the owner gets through after the delay |
//!
//! A source is an IPv4 address or an IPv6 /64 (one subscriber's usual allocation), so a
//! single host cannot pick fresh counters by rotating addresses inside its own prefix.
//!
//! A right client secret is never refused: the platform calls every integration from
//! shared addresses, and anyone can make it call linkd (a project of their own pointed at
//! linkd's token endpoint), so refusing a source could refuse the real client. Client
//! secrets are high-entropy (generated ones carry 256 bits), so guessing them is hopeless
//! anyway; a blocked source's wrong secrets are answered 429 from memory ([`LocalBlocks`]),
//! without a store write, and the block is logged. Passwords are guessable, so there a
//! blocked source is refused outright, and only the (account, source) pair it guessed.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Mutex;

use crate::secrets;

/// Most remembered blocks; past it expired ones are dropped first, then arbitrary ones (the
/// store's counters still refuse the next failure of a forgotten source).
const MAX_LOCAL_BLOCKS: usize = 100_000;

/// The source of a request for throttling: the IPv4 address, or the IPv6 /64.
pub fn source_of(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let segments = v6.segments();
                format!(
                    "{:x}:{:x}:{:x}:{:x}::/64",
                    segments[0], segments[1], segments[2], segments[3]
                )
            }
        },
    }
}

/// A short digest of an identifier a stranger chooses, so that counter keys have a bounded
/// length and never carry the raw value.
fn label(value: &str) -> String {
    secrets::sha256_hex(value.as_bytes())[..32].to_owned()
}

/// Counter of failed client authentications of `client_id` from `source`.
pub fn client_source_key(client_id: &str, source: &str) -> String {
    format!("client-auth:{}:{source}", label(client_id))
}

/// Counter of failed client authentications from `source`, whatever the client.
pub fn client_auth_source_key(source: &str) -> String {
    format!("client-auth-source:{source}")
}

/// Counter of failed sign-ins to the account `email` (normalised) from `source`.
pub fn account_source_key(email: &str, source: &str) -> String {
    format!("signin-account-source:{}:{source}", label(email))
}

/// Counter of failed sign-ins to the account `email` (normalised) from anywhere.
pub fn account_key(email: &str) -> String {
    format!("signin-account:{}", label(email))
}

/// Counter of failed sign-ins from `source`, whatever the account.
pub fn signin_source_key(source: &str) -> String {
    format!("signin-address:{source}")
}

/// How long a sign-in to an account with `failures` recent failures waits before its
/// password is checked: nothing below `free` failures, then one second, and one more per
/// further failure, at most `max_secs`.
pub fn account_delay_secs(failures: u64, free: u64, max_secs: u64) -> u64 {
    if failures < free {
        return 0;
    }
    (failures - free + 1).min(max_secs)
}

/// Blocks this instance has seen a counter pass, remembered until their window ends, and
/// the sources whose password is being checked right now.
#[derive(Debug, Default)]
pub struct LocalBlocks {
    until: Mutex<HashMap<String, i64>>,
    checking: Mutex<HashSet<String>>,
}

/// A source's turn to have one password checked; the next attempt from that source may
/// start when it is dropped.
#[derive(Debug)]
pub struct CheckTurn<'a> {
    blocks: &'a LocalBlocks,
    source: String,
}

impl Drop for CheckTurn<'_> {
    fn drop(&mut self) {
        self.blocks
            .checking
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.source);
    }
}

impl LocalBlocks {
    /// The latest end (Unix seconds) of a live block among `keys`, if any.
    pub fn blocked_until(&self, keys: &[&str], now: i64) -> Option<i64> {
        let until = self
            .until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.iter()
            .filter_map(|key| until.get(*key).copied())
            .filter(|end| *end > now)
            .max()
    }

    /// Waits, up to `patience`, until no other attempt from `source` is being checked on this
    /// instance, and takes the turn; `None` when the wait ran out. Counters are read before a
    /// check and counted after it, so attempts checked side by side would all see the count
    /// from before any of them: one at a time per source, each sees the failures before it.
    pub async fn check_turn(
        &self,
        source: &str,
        patience: std::time::Duration,
    ) -> Option<CheckTurn<'_>> {
        let give_up = tokio::time::Instant::now() + patience;
        loop {
            let taken = self
                .checking
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(source.to_owned());
            if taken {
                return Some(CheckTurn {
                    blocks: self,
                    source: source.to_owned(),
                });
            }
            if tokio::time::Instant::now() >= give_up {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Remembers that `key` is blocked until `end` (Unix seconds).
    pub fn block(&self, key: String, end: i64, now: i64) {
        let mut until = self
            .until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if until.len() >= MAX_LOCAL_BLOCKS {
            until.retain(|_, block_end| *block_end > now);
        }
        if until.len() >= MAX_LOCAL_BLOCKS {
            let evicted: Vec<String> = until.keys().take(MAX_LOCAL_BLOCKS / 10).cloned().collect();
            for key in evicted {
                until.remove(&key);
            }
        }
        let entry = until.entry(key).or_insert(end);
        *entry = (*entry).max(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_group_ipv6_by_prefix_and_unwrap_mapped_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_of(a), source_of(b));
        assert_ne!(source_of(a), source_of(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(source_of(mapped), "192.0.2.7");
    }

    #[test]
    fn keys_carry_no_raw_identifier() {
        let key = client_source_key("evil\r\nclient", "192.0.2.1");
        assert!(!key.contains("evil"));
        assert!(key.len() < 80);
        assert!(!account_key("ada@example.com").contains("ada"));
    }

    #[test]
    fn account_delay_grows_then_stops() {
        assert_eq!(account_delay_secs(9, 10, 5), 0);
        assert_eq!(account_delay_secs(10, 10, 5), 1);
        assert_eq!(account_delay_secs(11, 10, 5), 2);
        assert_eq!(account_delay_secs(500, 10, 5), 5);
    }

    #[test]
    fn local_blocks_lapse_and_keep_the_longest() {
        let blocks = LocalBlocks::default();
        blocks.block("k".to_owned(), 100, 0);
        blocks.block("k".to_owned(), 50, 0);
        assert_eq!(blocks.blocked_until(&["x", "k"], 10), Some(100));
        assert_eq!(blocks.blocked_until(&["k"], 100), None);
        assert_eq!(blocks.blocked_until(&["x"], 10), None);
    }
}
