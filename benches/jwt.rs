//! JWT signing and verification through the keyring: the cost the token endpoint and
//! every access-token check pay per call. See `docs/perf.md` for results.
#![allow(clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use linkd::grants::AccessClaims;
use linkd::tokens::keyring::{self, Algorithm, KeyringHandle};
use linkd::tokens::{Expectations, TokenKind};

const NOW: i64 = 1_900_000_000;

fn access_claims() -> AccessClaims {
    AccessClaims {
        iss: "https://linkd.example.com".to_owned(),
        sub: "8d6e2c1a-6f0c-4c55-9a3e-2b7f1f0d9c11".to_owned(),
        aud: "https://linkd.example.com".to_owned(),
        client_id: "google-home".to_owned(),
        exp: NOW + 3600,
        iat: NOW,
        jti: "2a3b4c5d-6e7f-4a1b-8c9d-0e1f2a3b4c5d".to_owned(),
        scope: "email profile devices".to_owned(),
        gid: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9".to_owned(),
    }
}

fn sign_and_verify(c: &mut Criterion) {
    for alg in [Algorithm::Es256, Algorithm::EdDsa] {
        let dir = tempfile::tempdir().expect("temporary directory");
        keyring::ensure_current(dir.path(), alg, NOW).expect("key");
        let handle = KeyringHandle::open(dir.path()).expect("keyring");
        let claims = access_claims();
        let token = handle
            .load()
            .sign(TokenKind::AccessToken, &claims)
            .expect("sign");
        let expectations = Expectations {
            now: NOW + 10,
            leeway: 60,
            issuer: Some("https://linkd.example.com"),
            audience: None,
        };
        let verify = |token: &str| {
            handle
                .load()
                .verify::<AccessClaims>(black_box(token), TokenKind::AccessToken, &expectations)
                .expect("verify")
        };
        let mut group = c.benchmark_group(format!("jwt/{}", alg.jose_name()));
        group.measurement_time(Duration::from_secs(4));
        group.warm_up_time(Duration::from_secs(1));
        group.bench_function("sign", |b| {
            b.iter(|| {
                handle
                    .load()
                    .sign(TokenKind::AccessToken, black_box(&claims))
                    .expect("sign")
            })
        });
        // A token seen for the first time: the signature is checked (and the token
        // remembered). Each iteration gets a token of its own, signed outside the timing.
        group.bench_function("verify", |b| {
            b.iter_batched(
                || {
                    let mut claims = access_claims();
                    claims.jti = linkd::secrets::new_uuid();
                    handle
                        .load()
                        .sign(TokenKind::AccessToken, &claims)
                        .expect("sign")
                },
                |token| verify(&token),
                BatchSize::SmallInput,
            )
        });
        // The same token again, as backends present it until it expires.
        group.bench_function("verify remembered", |b| b.iter(|| verify(&token)));
        group.finish();
    }
}

criterion_group!(benches, sign_and_verify);
criterion_main!(benches);
