//! `linkd clients …`: registering integrations (OAuth clients) from the command line.
//!
//! A client secret arrives only on stdin (first line), never on argv, where other users of
//! the host could read it. Every argument is validated before the store is opened, so bad
//! input is reported in one line with exit code 2 and changes nothing; removal needs `--yes`.

use std::process::ExitCode;

use super::terminal::{
    OutputArgs, OutputFormat, open_existing_store, open_store, print_json, print_listing,
    printable, read_stdin_line, rfc3339,
};
use crate::cli::{bad_input, failure};
use crate::clients::{
    self, ClientError, ClientId, ClientSecret, DisplayName, NewClient, ProjectId,
};
use crate::clock::{Clock as _, SystemClock};
use crate::store::ClientSettings;

/// Integration management commands.
#[derive(Debug, clap::Subcommand)]
pub enum ClientsCommand {
    /// Register an integration (OAuth client). Without --secret-stdin a secret is generated
    /// and printed once; linkd keeps only its digest.
    Add(AddClientArgs),
    /// Change an integration's name, branding or options.
    Update(UpdateClientArgs),
    /// List integrations: id, project, name, scopes and registration time (never secrets).
    List(OutputArgs),
    /// Show every setting of one integration (never its secret or the secret's digest).
    Show(ShowClientArgs),
    /// Remove an integration. It can no longer authenticate; this cannot be undone.
    Remove(RemoveClientArgs),
}

/// Arguments of `linkd clients show`.
#[derive(Debug, clap::Args)]
pub struct ShowClientArgs {
    /// The client_id.
    pub id: String,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `linkd clients add`.
#[derive(Debug, clap::Args)]
pub struct AddClientArgs {
    /// The client_id the platform presents: 1–128 characters of letters, digits, ".", "_",
    /// "~" and "-".
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// The platform's project id; the redirect URI path is /r/<PROJECT>. 1–128 characters of
    /// letters, digits, ".", "_" and "-".
    #[arg(long, value_name = "PROJECT")]
    pub project_id: String,
    /// Name shown on the consent page (1–100 characters) [default: the id].
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Read the client secret from the first line of stdin instead of generating one
    /// (at least 16 characters, no control characters).
    #[arg(long)]
    pub secret_stdin: bool,
    /// Branding and options.
    #[command(flatten)]
    pub options: ClientOptionArgs,
}

/// Branding and protocol options of an integration.
#[derive(Debug, Default, clap::Args)]
pub struct ClientOptionArgs {
    /// Company name shown on the sign-in and consent pages [default: the name].
    #[arg(long, value_name = "NAME")]
    pub company_name: Option<String>,
    /// https URL of the company logo shown on the pages.
    #[arg(long, value_name = "URL")]
    pub logo_url: Option<String>,
    /// https URL of the integrator's privacy policy, linked from the consent page.
    #[arg(long, value_name = "URL")]
    pub privacy_policy_url: Option<String>,
    /// https URL where a person without an account can sign up.
    #[arg(long, value_name = "URL")]
    pub signup_url: Option<String>,
    /// https URL where a person who forgot their password can reset it, linked from the
    /// sign-in page ("Forgot password?").
    #[arg(long, value_name = "URL")]
    pub forgot_password_url: Option<String>,
    /// An extra allowed redirect URI besides the platform's /r/<PROJECT> ones; repeatable.
    #[arg(long = "redirect-uri", value_name = "URI")]
    pub redirect_uris: Vec<String>,
    /// Answer token-endpoint failures with RFC 6749 §5.2 codes instead of the platform's
    /// uniform invalid_grant (true or false).
    #[arg(long, value_name = "BOOL")]
    pub rfc6749_errors: Option<bool>,
    /// Require a PKCE (S256) challenge on authorization requests (true or false).
    #[arg(long, value_name = "BOOL")]
    pub pkce_required: Option<bool>,
    /// The integration's smart-home fulfilment URL, sent the SYNC intent after a link and on
    /// requestSync: https, or http to a loopback address.
    #[arg(long, value_name = "URL")]
    pub fulfillment_url: Option<String>,
    /// Space-separated scopes the integration may ask for; a request without a scope gets
    /// all of them. Each is printable ASCII without space, `"` or `\` (RFC 6749 §3.3).
    /// Replaces the list [default: "openid email profile devices"].
    #[arg(long, value_name = "SCOPES")]
    pub scopes: Option<String>,
}

impl ClientOptionArgs {
    /// Validates every option, then returns a function applying them to settings.
    fn parse(self) -> Result<impl FnOnce(&mut ClientSettings), ClientError> {
        let company_name = self
            .company_name
            .as_deref()
            .map(|name| DisplayName::parse(name).map(|name| name.as_str().to_owned()))
            .transpose()?;
        let logo_url = self
            .logo_url
            .as_deref()
            .map(|url| clients::parse_page_url("--logo-url", url))
            .transpose()?;
        let privacy_policy_url = self
            .privacy_policy_url
            .as_deref()
            .map(|url| clients::parse_page_url("--privacy-policy-url", url))
            .transpose()?;
        let signup_url = self
            .signup_url
            .as_deref()
            .map(|url| clients::parse_page_url("--signup-url", url))
            .transpose()?;
        let forgot_password_url = self
            .forgot_password_url
            .as_deref()
            .map(|url| clients::parse_page_url("--forgot-password-url", url))
            .transpose()?;
        let redirect_uris = self
            .redirect_uris
            .iter()
            .map(|uri| clients::parse_redirect_uri(uri))
            .collect::<Result<Vec<_>, _>>()?;
        let fulfillment_url = self
            .fulfillment_url
            .map(|url| {
                crate::outbound::check_url(&url)
                    .map(|_| url.clone())
                    .map_err(|reason| ClientError::InvalidOption {
                        flag: "--fulfillment-url",
                        value: url.clone(),
                        reason,
                    })
            })
            .transpose()?;
        let scopes = self
            .scopes
            .as_deref()
            .map(clients::parse_scopes)
            .transpose()?;
        let (rfc6749_errors, pkce_required) = (self.rfc6749_errors, self.pkce_required);
        Ok(move |settings: &mut ClientSettings| {
            if let Some(scopes) = scopes {
                settings.scopes = scopes;
            }
            if fulfillment_url.is_some() {
                settings.fulfillment_url = fulfillment_url;
            }
            if company_name.is_some() {
                settings.company_name = company_name;
            }
            if logo_url.is_some() {
                settings.logo_url = logo_url;
            }
            if privacy_policy_url.is_some() {
                settings.privacy_policy_url = privacy_policy_url;
            }
            if signup_url.is_some() {
                settings.signup_url = signup_url;
            }
            if forgot_password_url.is_some() {
                settings.forgot_password_url = forgot_password_url;
            }
            if !redirect_uris.is_empty() {
                settings.extra_redirect_uris = redirect_uris;
            }
            if let Some(value) = rfc6749_errors {
                settings.rfc6749_errors = value;
            }
            if let Some(value) = pkce_required {
                settings.pkce_required = value;
            }
        })
    }
}

/// Arguments of `linkd clients update`.
#[derive(Debug, clap::Args)]
pub struct UpdateClientArgs {
    /// The client_id to change.
    #[arg(value_name = "ID")]
    pub id: String,
    /// New name shown on the consent page.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Options to change; the others keep their values. --redirect-uri replaces the list.
    #[command(flatten)]
    pub options: ClientOptionArgs,
    /// Sign this integration's users in through this identity provider (see `linkd
    /// identity-providers list`); `none` goes back to linkd's password form.
    #[arg(long, value_name = "ID")]
    pub identity_provider: Option<String>,
    /// With --identity-provider: keep the password form beside the provider's button
    /// (without it, the sign-in page shows the button only).
    #[arg(long, requires = "identity_provider")]
    pub keep_password_sign_in: bool,
}

/// Arguments of `linkd clients remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveClientArgs {
    /// The client_id to remove.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Confirm the removal.
    #[arg(long)]
    pub yes: bool,
}

/// Runs a `clients` command against the store at `store`.
pub async fn run_clients(store: &str, command: ClientsCommand) -> ExitCode {
    match command {
        ClientsCommand::Add(args) => add_client(store, args).await,
        ClientsCommand::Update(args) => update_client(store, args).await,
        ClientsCommand::List(output) => list_clients(store, output.output).await,
        ClientsCommand::Show(args) => show_client(store, args).await,
        ClientsCommand::Remove(args) => remove_client(store, args).await,
    }
}

async fn update_client(store: &str, args: UpdateClientArgs) -> ExitCode {
    let parsed = (|| {
        let name = args.name.as_deref().map(DisplayName::parse).transpose()?;
        let apply = args.options.parse()?;
        Ok::<_, ClientError>((name, apply))
    })();
    let (name, apply) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => return client_error(error),
    };
    let provider = match args.identity_provider.as_deref() {
        None => None,
        Some("none") => Some(None),
        Some(id) => match crate::identity::providers::parse_id("--identity-provider", id) {
            Ok(id) => Some(Some(id)),
            Err(error) => return bad_input(error),
        },
    };
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    if let Some(Some(id)) = &provider {
        match store.get_identity_provider(id).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                return bad_input(format_args!(
                    "--identity-provider {id:?}: no such identity provider (see `linkd identity-providers list`)"
                ));
            }
            Err(error) => return failure(error),
        }
    }
    let keep_password = args.keep_password_sign_in;
    let apply = move |settings: &mut ClientSettings| {
        apply(settings);
        if let Some(provider) = provider {
            settings.password_sign_in = provider.is_none() || keep_password;
            settings.identity_provider = provider;
        }
    };
    match clients::update(&*store, &args.id, name, apply).await {
        Ok(record) => {
            println!("updated client {}", record.id);
            ExitCode::SUCCESS
        }
        Err(error) => client_error(error),
    }
}

async fn add_client(store: &str, args: AddClientArgs) -> ExitCode {
    let parsed = (|| {
        let id = ClientId::parse(&args.id)?;
        let project_id = ProjectId::parse(&args.project_id)?;
        let name = args.name.as_deref().map(DisplayName::parse).transpose()?;
        let apply = args.options.parse()?;
        Ok::<_, ClientError>((id, project_id, name, apply))
    })();
    let (id, project_id, name, apply) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => return client_error(error),
    };
    let secret = if args.secret_stdin {
        let line = match read_stdin_line("--secret-stdin", "client secret") {
            Ok(line) => line,
            Err(code) => return code,
        };
        ClientSecret::supplied(&line)
    } else {
        ClientSecret::generate()
    };
    let secret = match secret {
        Ok(secret) => secret,
        Err(error) => return client_error(error),
    };
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let mut settings = ClientSettings::default();
    apply(&mut settings);
    let client = NewClient {
        id,
        project_id,
        name,
        secret: secret.clone(),
        settings,
    };
    match clients::register(&*store, client, SystemClock.now()).await {
        Ok(record) => {
            println!("client_id: {}", record.id);
            if !args.secret_stdin {
                println!("client_secret: {}", secret.expose());
                println!(
                    "This secret is shown only once: linkd keeps only its digest. Store it now."
                );
            }
            ExitCode::SUCCESS
        }
        Err(error) => client_error(error),
    }
}

async fn list_clients(store: &str, output: OutputFormat) -> ExitCode {
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match clients::list(&*store).await {
        Ok(records) => {
            let rows = records
                .iter()
                .map(|client| {
                    [
                        client.id.clone(),
                        client.project_id.clone(),
                        client.name.clone(),
                        client.settings.scopes.joined(),
                        rfc3339(client.created_at),
                    ]
                })
                .collect::<Vec<_>>();
            let objects = records.iter().map(client_summary).collect();
            print_listing(
                output,
                ["ID", "PROJECT", "NAME", "SCOPES", "CREATED"],
                &rows,
                objects,
            );
            ExitCode::SUCCESS
        }
        Err(error) => client_error(error),
    }
}

/// One client in `clients list --output json`.
fn client_summary(client: &crate::store::ClientRecord) -> serde_json::Value {
    serde_json::json!({
        "id": client.id,
        "project_id": client.project_id,
        "name": client.name,
        "scopes": client.settings.scopes.joined(),
        "created_at": rfc3339(client.created_at),
    })
}

/// Every setting of a client, as `clients show` prints it: never the secret's digest.
fn client_details(client: &crate::store::ClientRecord) -> serde_json::Value {
    let settings = &client.settings;
    serde_json::json!({
        "id": client.id,
        "project_id": client.project_id,
        "name": client.name,
        "created_at": rfc3339(client.created_at),
        "company_name": settings.company_name,
        "logo_url": settings.logo_url,
        "privacy_policy_url": settings.privacy_policy_url,
        "signup_url": settings.signup_url,
        "forgot_password_url": settings.forgot_password_url,
        "extra_redirect_uris": settings.extra_redirect_uris,
        "rfc6749_errors": settings.rfc6749_errors,
        "pkce_required": settings.pkce_required,
        "fulfillment_url": settings.fulfillment_url,
        "scopes": settings.scopes.joined(),
        "identity_provider": settings.identity_provider,
        "password_sign_in": settings.identity_provider.is_none() || settings.password_sign_in,
    })
}

async fn show_client(store: &str, args: ShowClientArgs) -> ExitCode {
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let record = match store.get_client(&args.id).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            return bad_input(format_args!(
                "no such client {:?} (see `linkd clients list`)",
                printable(&args.id)
            ));
        }
        Err(error) => return failure(error),
    };
    let details = client_details(&record);
    match args.output.output {
        OutputFormat::Json => print_json(&details),
        OutputFormat::Text => {
            for (field, value) in details.as_object().into_iter().flatten() {
                let text = match value {
                    serde_json::Value::Null => "-".to_owned(),
                    serde_json::Value::String(text) => text.clone(),
                    serde_json::Value::Array(items) => items
                        .iter()
                        .filter_map(serde_json::Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                    other => other.to_string(),
                };
                println!("{field}: {}", printable(&text));
            }
        }
    }
    ExitCode::SUCCESS
}

async fn remove_client(store: &str, args: RemoveClientArgs) -> ExitCode {
    if !args.yes {
        return bad_input(format_args!(
            "refusing to remove client {:?} without --yes (removal cannot be undone)",
            args.id
        ));
    }
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match clients::remove(&*store, &args.id).await {
        Ok(()) => {
            println!("removed client {}", printable(&args.id));
            ExitCode::SUCCESS
        }
        Err(error) => client_error(error),
    }
}

fn client_error(error: ClientError) -> ExitCode {
    if error.is_bad_input() {
        bad_input(error)
    } else {
        failure(error)
    }
}
