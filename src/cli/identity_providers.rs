//! `linkd identity-providers add|update|list|show|remove`: the upstream identity providers that sign
//! integrations' users in (an OpenID Connect provider, or a login hand-off to the
//! integrator's own web app).
//!
//! Every argument is validated before the store is opened (for `update`, whether a flag fits
//! the provider's kind is known only from the store, and checked before anything is read from
//! stdin): bad input is one line naming the flag, exit code 2, nothing changed. Two `update`s
//! of one provider at the same moment: the last one written wins. The OpenID client secret arrives on stdin only and no
//! command prints it; removal needs `--yes`.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use super::terminal::{
    OutputArgs, OutputFormat, open_existing_store, open_store, print_json, print_listing,
    printable, read_stdin_line, rfc3339,
};
use crate::cli::{bad_input, failure};
use crate::clock::{Clock as _, SystemClock};
use crate::identity::providers::{self, MAX_PUBLIC_KEY_BYTES, ProviderError};
use crate::store::{IdentityProviderKind, IdentityProviderRecord};

/// Identity-provider commands.
#[derive(Debug, clap::Subcommand)]
pub enum IdentityProvidersCommand {
    /// Add a provider and print the callback URL to register at it.
    Add(Box<AddProviderArgs>),
    /// Change a provider's settings: a rotated client secret or key, a new login URL or name.
    /// Its kind and issuer stay (they name its people); the people it signed in stay mapped.
    Update(Box<UpdateProviderArgs>),
    /// List providers: id, kind, name, where they are (never secrets).
    List(OutputArgs),
    /// Show one provider's settings (never its client secret).
    Show {
        /// The provider id.
        #[arg(value_name = "ID")]
        id: String,
        /// Output format.
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Remove a provider. Refused while an integration signs in through it; the users it
    /// created stay.
    Remove {
        /// The provider id.
        #[arg(value_name = "ID")]
        id: String,
        /// Confirm the removal.
        #[arg(long)]
        yes: bool,
    },
}

/// The kind of a provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKindArg {
    /// An OpenID Connect provider (authorization code + PKCE).
    #[default]
    Oidc,
    /// A login hand-off to the integrator's web app, which returns a signed assertion.
    Handoff,
}

/// Arguments of `linkd identity-providers add`.
#[derive(Debug, clap::Args)]
pub struct AddProviderArgs {
    /// The provider id: 1–40 characters of a-z, 0-9 and "-"; it names the callback URL
    /// {issuer}/signin/{id}/callback.
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// How linkd talks to the provider.
    #[arg(long, value_enum, default_value_t = ProviderKindArg::Oidc)]
    pub kind: ProviderKindArg,
    /// Name on the sign-in page's "Continue with {name}" button [default: the id].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// oidc: the provider's issuer URL (https); discovery at
    /// {issuer}/.well-known/openid-configuration.
    #[arg(long, value_name = "URL")]
    pub issuer: Option<String>,
    /// oidc: linkd's client id at the provider.
    #[arg(long, value_name = "CID")]
    pub client_id: Option<String>,
    /// oidc: read linkd's client secret at the provider from the first line of stdin.
    #[arg(long)]
    pub client_secret_stdin: bool,
    /// oidc: space-separated scopes to ask for; "openid" is always asked.
    #[arg(long, value_name = "SCOPES", default_value = "openid email profile")]
    pub scopes: String,
    /// handoff: the integrator's login page; linkd appends ?login_challenge=… (https, or
    /// http to a loopback address).
    #[arg(long, value_name = "URL")]
    pub login_url: Option<String>,
    /// handoff: PEM file of the public key that signs the assertions (EC P-256, RSA or
    /// Ed25519).
    #[arg(long, value_name = "PEM", conflicts_with = "jwks_url")]
    pub public_key_file: Option<PathBuf>,
    /// handoff: URL of the integrator's JWKS, instead of --public-key-file.
    #[arg(long, value_name = "URL")]
    pub jwks_url: Option<String>,
    /// This linkd's issuer URL, to print the callback URL with.
    #[arg(
        long,
        env = "LINKD_ISSUER",
        value_name = "URL",
        default_value = "https://127.0.0.1:8443"
    )]
    pub linkd_issuer: String,
}

/// Arguments of `linkd identity-providers update`.
#[derive(Debug, clap::Args)]
pub struct UpdateProviderArgs {
    /// The provider id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Name on the sign-in page's "Continue with {name}" button.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// oidc: linkd's client id at the provider.
    #[arg(long, value_name = "CID")]
    pub client_id: Option<String>,
    /// oidc: read linkd's new client secret at the provider from the first line of stdin.
    #[arg(long)]
    pub client_secret_stdin: bool,
    /// oidc: space-separated scopes to ask for; "openid" is always asked.
    #[arg(long, value_name = "SCOPES")]
    pub scopes: Option<String>,
    /// handoff: the integrator's login page (https, or http to a loopback address).
    #[arg(long, value_name = "URL")]
    pub login_url: Option<String>,
    /// handoff: PEM file of the public key that signs the assertions from now on; replaces
    /// the key or JWKS URL.
    #[arg(long, value_name = "PEM", conflicts_with = "jwks_url")]
    pub public_key_file: Option<PathBuf>,
    /// handoff: URL of the integrator's JWKS; replaces the key or JWKS URL.
    #[arg(long, value_name = "URL")]
    pub jwks_url: Option<String>,
}

/// What `update` was asked to change, validated.
struct ProviderChanges {
    name: Option<String>,
    client_id: Option<String>,
    client_secret: bool,
    scopes: Option<Vec<String>>,
    login_url: Option<String>,
    /// The new (public key, JWKS URL) pair: exactly one is set.
    handoff_key: Option<(Option<String>, Option<String>)>,
}

impl ProviderChanges {
    /// The oidc-only and handoff-only flags given, by kind.
    fn flags_given(&self) -> [(&'static str, &'static str, bool); 5] {
        [
            ("--client-id", "oidc", self.client_id.is_some()),
            ("--client-secret-stdin", "oidc", self.client_secret),
            ("--scopes", "oidc", self.scopes.is_some()),
            ("--login-url", "handoff", self.login_url.is_some()),
            (
                "--public-key-file or --jwks-url",
                "handoff",
                self.handoff_key.is_some(),
            ),
        ]
    }
}

/// Validates everything `update` was given but the secret.
fn parse_update(args: &UpdateProviderArgs) -> Result<ProviderChanges, ProviderError> {
    let changes = ProviderChanges {
        name: args
            .name
            .as_deref()
            .map(providers::parse_name)
            .transpose()?,
        client_id: args
            .client_id
            .as_deref()
            .map(|id| providers::parse_credential("--client-id", id))
            .transpose()?,
        client_secret: args.client_secret_stdin,
        scopes: args
            .scopes
            .as_deref()
            .map(providers::parse_scopes)
            .transpose()?,
        login_url: args
            .login_url
            .as_deref()
            .map(providers::parse_login_url)
            .transpose()?,
        handoff_key: match (&args.public_key_file, &args.jwks_url) {
            (Some(path), _) => Some((Some(read_public_key(path)?), None)),
            (None, Some(url)) => Some((None, Some(providers::parse_jwks_url(url)?))),
            (None, None) => None,
        },
    };
    if changes.name.is_none() && !changes.flags_given().iter().any(|(_, _, given)| *given) {
        return Err(ProviderError::Invalid {
            flag: "update",
            reason: "nothing to change: give --name, or the settings of the provider's kind"
                .to_owned(),
        });
    }
    Ok(changes)
}

/// Refuses a flag of the other kind than `record`'s.
fn check_kind(
    record: &IdentityProviderRecord,
    changes: &ProviderChanges,
) -> Result<(), ProviderError> {
    let kind = match record.kind {
        IdentityProviderKind::Oidc { .. } => "oidc",
        IdentityProviderKind::Handoff { .. } => "handoff",
    };
    match changes
        .flags_given()
        .into_iter()
        .find(|(_, flag_kind, given)| *given && *flag_kind != kind)
    {
        Some((flag, _, _)) => Err(ProviderError::Invalid {
            flag,
            reason: format!(
                "does not apply to provider {:?}, which is of kind {kind}",
                printable(&record.id)
            ),
        }),
        None => Ok(()),
    }
}

/// `record` with `changes` (checked by [`check_kind`]) applied; the client secret, when one
/// is to be set, is `secret`.
fn apply_changes(
    mut record: IdentityProviderRecord,
    changes: ProviderChanges,
    secret: Option<String>,
) -> IdentityProviderRecord {
    if let Some(name) = changes.name {
        record.name = name;
    }
    match &mut record.kind {
        IdentityProviderKind::Oidc {
            client_id,
            client_secret,
            scopes,
            ..
        } => {
            if let Some(changed) = changes.client_id {
                *client_id = changed;
            }
            if let Some(changed) = secret {
                *client_secret = changed;
            }
            if let Some(changed) = changes.scopes {
                *scopes = changed;
            }
        }
        IdentityProviderKind::Handoff {
            login_url,
            public_key_pem,
            jwks_url,
        } => {
            if let Some(changed) = changes.login_url {
                *login_url = changed;
            }
            if let Some((key, url)) = changes.handoff_key {
                (*public_key_pem, *jwks_url) = (key, url);
            }
        }
    }
    record
}

fn report(error: &ProviderError) -> ExitCode {
    if error.is_bad_input() {
        bad_input(error)
    } else {
        failure(error)
    }
}

fn missing(flag: &'static str, kind: &str) -> ProviderError {
    ProviderError::Invalid {
        flag,
        reason: format!("required with --kind {kind}"),
    }
}

fn not_for(flag: &'static str, kind: &str) -> ProviderError {
    ProviderError::Invalid {
        flag,
        reason: format!("does not apply to --kind {kind}"),
    }
}

/// Reads the public-key file, bounded in size.
fn read_public_key(path: &std::path::Path) -> Result<String, ProviderError> {
    let unreadable = |reason: String| ProviderError::Invalid {
        flag: "--public-key-file",
        reason: format!("{}: {reason}", path.display()),
    };
    let file = std::fs::File::open(path).map_err(|error| unreadable(error.to_string()))?;
    let mut text = String::new();
    file.take(MAX_PUBLIC_KEY_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|error| unreadable(error.to_string()))?;
    if text.len() as u64 > MAX_PUBLIC_KEY_BYTES {
        return Err(unreadable(format!(
            "larger than {MAX_PUBLIC_KEY_BYTES} bytes"
        )));
    }
    providers::parse_public_key(&text)
}

/// Validates everything `add` was given but the secret.
fn parse_add(
    args: &AddProviderArgs,
) -> Result<(String, String, IdentityProviderKind), ProviderError> {
    let id = providers::parse_id("--id", &args.id)?;
    let name = providers::parse_name(args.name.as_deref().unwrap_or(&id))?;
    let kind = match args.kind {
        ProviderKindArg::Oidc => {
            for (flag, given) in [
                ("--login-url", args.login_url.is_some()),
                ("--public-key-file", args.public_key_file.is_some()),
                ("--jwks-url", args.jwks_url.is_some()),
            ] {
                if given {
                    return Err(not_for(flag, "oidc"));
                }
            }
            let issuer = providers::parse_issuer(
                args.issuer
                    .as_deref()
                    .ok_or_else(|| missing("--issuer", "oidc"))?,
            )?;
            let client_id = providers::parse_credential(
                "--client-id",
                args.client_id
                    .as_deref()
                    .ok_or_else(|| missing("--client-id", "oidc"))?,
            )?;
            if !args.client_secret_stdin {
                return Err(missing("--client-secret-stdin", "oidc"));
            }
            // The secret is filled in from stdin after every other check, so that bad input
            // never consumes it.
            IdentityProviderKind::Oidc {
                issuer,
                client_id,
                client_secret: String::new(),
                scopes: providers::parse_scopes(&args.scopes)?,
            }
        }
        ProviderKindArg::Handoff => {
            for (flag, given) in [
                ("--issuer", args.issuer.is_some()),
                ("--client-id", args.client_id.is_some()),
                ("--client-secret-stdin", args.client_secret_stdin),
            ] {
                if given {
                    return Err(not_for(flag, "handoff"));
                }
            }
            let login_url = providers::parse_login_url(
                args.login_url
                    .as_deref()
                    .ok_or_else(|| missing("--login-url", "handoff"))?,
            )?;
            let (public_key_pem, jwks_url) = match (&args.public_key_file, &args.jwks_url) {
                (Some(path), None) => (Some(read_public_key(path)?), None),
                (None, Some(url)) => (None, Some(providers::parse_jwks_url(url)?)),
                _ => {
                    return Err(ProviderError::Invalid {
                        flag: "--public-key-file",
                        reason: "give --public-key-file or --jwks-url with --kind handoff"
                            .to_owned(),
                    });
                }
            };
            IdentityProviderKind::Handoff {
                login_url,
                public_key_pem,
                jwks_url,
            }
        }
    };
    Ok((id, name, kind))
}

/// Runs an `identity-providers` command against the store at `store`.
pub async fn run(store: &str, command: IdentityProvidersCommand) -> ExitCode {
    match command {
        IdentityProvidersCommand::Add(args) => add(store, &args).await,
        IdentityProvidersCommand::Update(args) => update(store, &args).await,
        IdentityProvidersCommand::List(output) => list(store, output.output).await,
        IdentityProvidersCommand::Show { id, output } => show(store, &id, output.output).await,
        IdentityProvidersCommand::Remove { id, yes } => remove(store, &id, yes).await,
    }
}

async fn add(store: &str, args: &AddProviderArgs) -> ExitCode {
    let (id, name, mut kind) = match parse_add(args) {
        Ok(parsed) => parsed,
        Err(error) => return report(&error),
    };
    if let IdentityProviderKind::Oidc { client_secret, .. } = &mut kind {
        let line = match read_stdin_line("--client-secret-stdin", "client secret") {
            Ok(line) => line,
            Err(code) => return code,
        };
        match providers::parse_credential("--client-secret-stdin", &line) {
            Ok(secret) => *client_secret = secret,
            Err(error) => return report(&error),
        }
    }
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let record = IdentityProviderRecord {
        id,
        name,
        kind,
        created_at: SystemClock.now(),
    };
    match providers::add(&*store, &record).await {
        Ok(()) => {
            println!("identity provider: {}", record.id);
            println!(
                "redirect_uri: {}",
                providers::callback_url(&args.linkd_issuer, &record.id)
            );
            ExitCode::SUCCESS
        }
        Err(error) => report(&error),
    }
}

async fn update(store: &str, args: &UpdateProviderArgs) -> ExitCode {
    let changes = match parse_update(args) {
        Ok(changes) => changes,
        Err(error) => return report(&error),
    };
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let unknown = || {
        bad_input(format_args!(
            "no identity provider with id {:?} (see `linkd identity-providers list`)",
            printable(&args.id)
        ))
    };
    let record = match providers::find(&*store, &args.id).await {
        Ok(record) => record,
        Err(ProviderError::UnknownProvider(_)) => return unknown(),
        Err(error) => return report(&error),
    };
    // Every flag is checked against the provider's kind before the secret is read, so that
    // bad input never consumes it.
    if let Err(error) = check_kind(&record, &changes) {
        return report(&error);
    }
    let secret = if changes.client_secret {
        let line = match read_stdin_line("--client-secret-stdin", "client secret") {
            Ok(line) => line,
            Err(code) => return code,
        };
        match providers::parse_credential("--client-secret-stdin", &line) {
            Ok(secret) => Some(secret),
            Err(error) => return report(&error),
        }
    } else {
        None
    };
    let updated = apply_changes(record, changes, secret);
    match store.update_identity_provider(&updated).await {
        Ok(true) => {
            println!("updated identity provider {}", printable(&updated.id));
            ExitCode::SUCCESS
        }
        Ok(false) => unknown(),
        Err(error) => failure(error),
    }
}

fn summary_row(provider: &IdentityProviderRecord) -> [String; 5] {
    let (kind, location) = match &provider.kind {
        IdentityProviderKind::Oidc { issuer, .. } => ("oidc", issuer.clone()),
        IdentityProviderKind::Handoff { login_url, .. } => ("handoff", login_url.clone()),
    };
    [
        provider.id.clone(),
        kind.to_owned(),
        provider.name.clone(),
        location,
        rfc3339(provider.created_at),
    ]
}

fn details(provider: &IdentityProviderRecord) -> serde_json::Value {
    let mut value = providers::describe(provider);
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "created_at".to_owned(),
            serde_json::Value::String(rfc3339(provider.created_at)),
        );
    }
    value
}

async fn list(store: &str, output: OutputFormat) -> ExitCode {
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match store.list_identity_providers().await {
        Ok(records) => {
            let rows: Vec<_> = records.iter().map(summary_row).collect();
            let objects = records.iter().map(details).collect();
            print_listing(
                output,
                ["ID", "KIND", "NAME", "ISSUER OR LOGIN URL", "CREATED"],
                &rows,
                objects,
            );
            ExitCode::SUCCESS
        }
        Err(error) => failure(error),
    }
}

async fn show(store: &str, id: &str, output: OutputFormat) -> ExitCode {
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let record = match providers::find(&*store, id).await {
        Ok(record) => record,
        Err(ProviderError::UnknownProvider(_)) => {
            return bad_input(format_args!(
                "no identity provider with id {:?} (see `linkd identity-providers list`)",
                printable(id)
            ));
        }
        Err(error) => return report(&error),
    };
    let details = details(&record);
    match output {
        OutputFormat::Json => print_json(&details),
        OutputFormat::Text => {
            for (field, value) in details.as_object().into_iter().flatten() {
                let text = match value {
                    serde_json::Value::Null => "-".to_owned(),
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                println!("{field}: {}", printable(&text));
            }
        }
    }
    ExitCode::SUCCESS
}

async fn remove(store: &str, id: &str, yes: bool) -> ExitCode {
    if !yes {
        return bad_input(format_args!(
            "refusing to remove identity provider {:?} without --yes (removal cannot be undone)",
            printable(id)
        ));
    }
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match providers::remove(&*store, id).await {
        Ok(()) => {
            println!("removed identity provider {}", printable(id));
            ExitCode::SUCCESS
        }
        Err(error) => report(&error),
    }
}
