//! `linkd service-accounts create|add-key|list|remove`: credentials an integration's
//! backend uses to call the device-graph API.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::clock::{Clock as _, SystemClock};
use crate::service_accounts::{self, ServiceAccountError};

/// Service-account commands.
#[derive(Debug, clap::Subcommand)]
pub enum ServiceAccountsCommand {
    /// Create a service account for an integration and write its key file (mode 0600).
    Create {
        /// The integration (client id) the account belongs to.
        #[arg(long, value_name = "ID")]
        client: String,
        /// Where to write the key file; an existing file is never replaced.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Account name: 1-30 lower-case letters, digits and '-'.
        #[arg(long, default_value = "device-graph")]
        name: String,
        /// This issuer's public URL, written into the key file as the token endpoint.
        #[arg(long, env = "LINKD_ISSUER", default_value = "https://127.0.0.1:8443")]
        issuer: String,
        /// Base of the device-graph scope the account may ask for, as `serve
        /// --device-graph-scope-base` [default: the issuer].
        #[arg(long, env = "LINKD_DEVICE_GRAPH_SCOPE_BASE", value_name = "URL")]
        scope_base: Option<String>,
    },
    /// Add a key to an account, for rotation, and write its key file.
    AddKey {
        /// The account's email.
        #[arg(value_name = "EMAIL")]
        email: String,
        /// Where to write the key file.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// This issuer's public URL.
        #[arg(long, env = "LINKD_ISSUER", default_value = "https://127.0.0.1:8443")]
        issuer: String,
    },
    /// List service accounts (never keys).
    List(super::terminal::OutputArgs),
    /// Remove a service account; its keys stop working at once.
    Remove {
        /// The account's email.
        #[arg(value_name = "EMAIL")]
        email: String,
        /// Confirm the removal.
        #[arg(long)]
        yes: bool,
    },
}

fn report(error: &ServiceAccountError) -> ExitCode {
    if error.is_bad_input() {
        super::bad_input(error)
    } else {
        super::failure(error)
    }
}

/// Runs a `service-accounts` command against the store at `store`.
pub async fn run(store: &str, command: ServiceAccountsCommand) -> ExitCode {
    if let ServiceAccountsCommand::Remove { yes: false, .. } = command {
        return super::bad_input("service-accounts remove: pass --yes to confirm");
    }
    if let ServiceAccountsCommand::Create { out, .. } | ServiceAccountsCommand::AddKey { out, .. } =
        &command
        && out.exists()
    {
        return super::bad_input(format_args!(
            "--out {}: file exists; choose a new path",
            out.display()
        ));
    }
    let store = if let ServiceAccountsCommand::List(_) = command {
        match super::terminal::open_existing_store(store).await {
            Ok(store) => store,
            Err(code) => return code,
        }
    } else {
        match super::terminal::open_store(store).await {
            Ok(store) => store,
            Err(exit) => return exit,
        }
    };
    let issuer_of = |issuer: &str| issuer.trim_end_matches('/').to_owned();
    let written = match command {
        ServiceAccountsCommand::Create {
            client,
            out,
            name,
            issuer,
            scope_base,
        } => match service_accounts::create(
            &*store,
            &client,
            &name,
            &issuer_of(&issuer),
            &issuer_of(scope_base.as_deref().unwrap_or(&issuer)),
            SystemClock.now(),
        )
        .await
        {
            Ok((account, file)) => {
                println!("{}", account.email);
                (out, file)
            }
            Err(error) => return report(&error),
        },
        ServiceAccountsCommand::AddKey { email, out, issuer } => {
            match service_accounts::add_key(&*store, &email, &issuer_of(&issuer)).await {
                Ok(file) => (out, file),
                Err(error) => return report(&error),
            }
        }
        ServiceAccountsCommand::List(output) => {
            return match store.list_service_accounts().await {
                Ok(accounts) => {
                    let rows = accounts
                        .iter()
                        .map(|account| {
                            [
                                account.email.clone(),
                                account.client_id.clone(),
                                account.project_id.clone(),
                                account.keys.len().to_string(),
                            ]
                        })
                        .collect::<Vec<_>>();
                    let objects = accounts
                        .iter()
                        .map(|account| {
                            serde_json::json!({
                                "email": account.email,
                                "client_id": account.client_id,
                                "project_id": account.project_id,
                                "keys": account.keys.len(),
                            })
                        })
                        .collect();
                    super::terminal::print_listing(
                        output.output,
                        ["EMAIL", "CLIENT", "PROJECT", "KEYS"],
                        &rows,
                        objects,
                    );
                    ExitCode::SUCCESS
                }
                Err(error) => super::failure(error),
            };
        }
        ServiceAccountsCommand::Remove { email, .. } => {
            return match store.remove_service_account(&email).await {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => report(&ServiceAccountError::UnknownAccount(email)),
                Err(error) => super::failure(error),
            };
        }
    };
    let (out, file) = written;
    match service_accounts::write_key_file(&out, &file) {
        Ok(()) => {
            eprintln!(
                "wrote the key file {} (mode 0600); linkd keeps only the public key",
                out.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => super::failure(format_args!("--out {}: {error}", out.display())),
    }
}
