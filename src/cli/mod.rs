//! The operator CLI (DESIGN.md "Operator contract"): a clap-derive subcommand tree whose doc
//! comments are its help text. Secrets are read from stdin or the environment, never argv.
//!
//! Exit codes: 0 success; 2 bad input (one line on stderr, nothing changed); 1 a failure of
//! the environment (store unreachable, unreadable keys directory).

pub mod backup;
pub mod clients;
pub mod devices;
pub mod identity_providers;
pub mod keys;
pub mod service_accounts;
pub mod terminal;
pub mod users;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit code for bad input: the command changed nothing.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code for a failure of the environment (store, filesystem).
pub const EXIT_FAILURE: u8 = 1;

/// linkd: account-linking OAuth 2.0 server and device-graph API for smart-home integrations.
#[derive(Debug, Parser)]
#[command(name = "linkd", version, propagate_version = true)]
pub struct Cli {
    /// Where linkd keeps its data: `redis://…`, `rediss://…`, `redis+cluster://…`,
    /// `rediss+cluster://…`, `redis+sentinel://host:port,…/SERVICE` or `rediss+sentinel://…`
    /// for Redis, otherwise the path of the embedded SQLite file [default: linkd.db]. Redis
    /// credentials come from LINKD_STORE_USERNAME and LINKD_STORE_PASSWORD (or
    /// LINKD_STORE_PASSWORD_FILE), never from this flag.
    #[arg(long, global = true, env = "LINKD_STORE", value_name = "LOCATION")]
    pub store: Option<String>,
    /// Directory holding the signing keys and, in development, the self-signed certificate
    /// [default: keys].
    #[arg(long, global = true, env = "LINKD_KEYS_DIR", value_name = "DIR")]
    pub keys_dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `linkd serve`'s command line: the settings, and whether only to check them.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Check every setting and the files they name (keys, certificate, store directory),
    /// print "configuration OK" and exit 0, or print the problems and exit 2; binds no port
    /// and writes nothing.
    #[arg(long)]
    pub check_config: bool,
    /// The settings.
    #[command(flatten)]
    pub settings: crate::config::RawSettings,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the OAuth endpoints and the device-graph API.
    Serve(Box<ServeArgs>),
    /// Manage the signing keys (generate, rotate, list, retire).
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Manage integrations (OAuth clients).
    #[command(subcommand)]
    Clients(clients::ClientsCommand),
    /// Manage user accounts.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Manage the upstream identity providers that sign integrations' users in (OpenID
    /// Connect, or a login hand-off to the integrator's web app).
    #[command(subcommand)]
    IdentityProviders(identity_providers::IdentityProvidersCommand),
    /// Manage the service accounts integrations use for the device-graph API.
    #[command(subcommand)]
    ServiceAccounts(service_accounts::ServiceAccountsCommand),
    /// Copy the SQLite store to a file while servers keep running (a Redis store is backed
    /// up by Redis).
    Backup(backup::BackupArgs),
    /// Load and read the device graph (`devices import`, `devices list`).
    #[command(subcommand)]
    Devices(devices::DevicesCommand),
}

/// Prints one line for the operator and returns the exit code for bad input.
pub fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkd: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// Prints one line for the operator and returns the exit code for an environment failure.
pub fn failure(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("linkd: {message}");
    ExitCode::from(EXIT_FAILURE)
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return failure(format_args!("cannot start the async runtime: {error}")),
    };
    runtime.block_on(async move {
        let store_or_default = cli.store.as_deref().unwrap_or(crate::config::DEFAULT_STORE);
        let keys_dir_or_default = cli
            .keys_dir
            .as_deref()
            .unwrap_or(std::path::Path::new(crate::config::DEFAULT_KEYS_DIR));
        if let Some(location) = &cli.store
            && store_given_on_command_line()
            && crate::store::location::StoreLocation::parse(location)
                .is_ok_and(|location| location.has_password())
        {
            return bad_input(format_args!(
                "--store: a password on the command line can be read by other users of this machine; \
                 put it in {} (or a file named by {}) instead",
                crate::store::redis_connect::PASSWORD_VARIABLE,
                crate::store::redis_connect::PASSWORD_FILE_VARIABLE
            ));
        }
        match cli.command {
            Command::Serve(arguments) => {
                let ServeArgs {
                    check_config,
                    settings,
                } = *arguments;
                let flags = crate::config::RawSettings {
                    store: cli.store.clone(),
                    keys_dir: cli.keys_dir.clone(),
                    ..settings
                };
                if check_config {
                    self::check_config(flags)
                } else {
                    serve(flags).await
                }
            }
            Command::Keys(command) => keys::run(keys_dir_or_default, command).await,
            Command::Clients(command) => clients::run_clients(store_or_default, command).await,
            Command::Users(command) => users::run_users(store_or_default, command).await,
            Command::ServiceAccounts(command) => {
                service_accounts::run(store_or_default, command).await
            }
            Command::Devices(command) => devices::run(store_or_default, command).await,
            Command::IdentityProviders(command) => {
                identity_providers::run(store_or_default, command).await
            }
            Command::Backup(args) => backup::run(store_or_default, &args),
        }
    })
}

/// Whether `--store` was given as an argument rather than through `LINKD_STORE`: clap does
/// not keep where a derived value came from, so the arguments are looked at again, as clap
/// reads them (`--store VALUE` or `--store=VALUE`, before a `--`).
fn store_given_on_command_line() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|argument| argument != "--")
        .any(|argument| {
            argument == "--store"
                || argument
                    .to_str()
                    .is_some_and(|argument| argument.starts_with("--store="))
        })
}

/// `linkd serve --check-config`: every problem of the settings `flags` resolve to, and of
/// the files they name, on stderr with exit code 2; "configuration OK" and 0 when none.
pub fn check_config(flags: crate::config::RawSettings) -> ExitCode {
    let problems = match crate::config::resolve(flags).and_then(crate::config::load::load) {
        Ok(settings) => crate::config::check::check(&settings),
        Err(problems) => problems,
    };
    if problems.is_empty() {
        println!("configuration OK");
        return ExitCode::SUCCESS;
    }
    for problem in &problems {
        eprintln!("linkd: {problem}");
    }
    ExitCode::from(EXIT_BAD_INPUT)
}

/// `linkd serve`: resolves the settings (`flags` are those of the command line and the
/// environment, the global ones included) and runs the server until SIGTERM or SIGINT.
pub async fn serve(flags: crate::config::RawSettings) -> ExitCode {
    let settings = match crate::config::resolve(flags).and_then(crate::config::load::load) {
        Ok(settings) => settings,
        Err(problems) => {
            for problem in &problems {
                eprintln!("linkd: {problem}");
            }
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    crate::logging::init(settings.log_format, &settings.log_filter);
    let listener = match tokio::net::TcpListener::bind(settings.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!(listen = %settings.listen, %error, "cannot listen");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let admin = match settings.admin_listen {
        None => None,
        Some(address) => match tokio::net::TcpListener::bind(address).await {
            Ok(admin) => Some(admin),
            Err(error) => {
                tracing::error!(admin_listen = %address, %error, "cannot listen");
                return ExitCode::from(EXIT_FAILURE);
            }
        },
    };
    match crate::server::Server::prepare(settings).await {
        Ok(server) => {
            server.run_until_signalled(listener, admin).await;
            ExitCode::SUCCESS
        }
        Err(error) => {
            tracing::error!(%error, "cannot start");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
