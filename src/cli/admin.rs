//! `linkd clients …` and `linkd users …`: registering integrations and managing user
//! accounts from the command line.
//!
//! Client secrets and passwords arrive only on stdin (first line), never on argv, where other
//! users of the host could read them. Every argument is validated before the store is opened,
//! so bad input is reported in one line with exit code 2 and changes nothing; removal needs
//! `--yes`.

use std::io::{BufRead as _, IsTerminal as _, Read as _};
use std::process::ExitCode;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::{bad_input, failure};
use crate::clients::{
    self, ClientError, ClientId, ClientSecret, DisplayName, NewClient, ProjectId,
};
use crate::clock::{Clock as _, SystemClock};
use crate::store::{ClientSettings, SharedStore, StoreTimeouts};
use crate::users::{self, AccountError, Email, NewUser, Password, Profile, ProfileField};

/// Longest first line read from stdin, in bytes: room for the longest accepted secret or
/// password in four-byte characters, while a runaway pipe cannot exhaust memory.
const MAX_STDIN_LINE_BYTES: u64 = 8192;

/// Integration management commands.
#[derive(Debug, clap::Subcommand)]
pub enum ClientsCommand {
    /// Register an integration (OAuth client). Without --secret-stdin a secret is generated
    /// and printed once; linkd keeps only its digest.
    Add(AddClientArgs),
    /// Change an integration's name, branding or options.
    Update(UpdateClientArgs),
    /// List integrations: id, project, name, scopes and registration time (never secrets).
    List,
    /// Remove an integration. It can no longer authenticate; this cannot be undone.
    Remove(RemoveClientArgs),
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

/// User management commands.
#[derive(Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Add a user; the password is read from the first line of stdin. Prints the new user id.
    Add(AddUserArgs),
    /// List users: id, email, name and creation time.
    List,
    /// Remove a user, by email address or id. Every link of the user ends (tokens stop
    /// working, the device graph forgets the user), and so do the user's sessions. This
    /// cannot be undone.
    Remove(RemoveUserArgs),
    /// Replace a user's password, read from the first line of stdin. The user's sessions
    /// end; links survive unless --revoke-links.
    SetPassword(SetPasswordArgs),
}

/// Arguments of `linkd users add`.
#[derive(Debug, clap::Args)]
pub struct AddUserArgs {
    /// Email address; stored lower-case and unique across users.
    #[arg(long, value_name = "EMAIL")]
    pub email: String,
    /// Full name (at most 200 characters).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// First name (at most 200 characters).
    #[arg(long, value_name = "NAME")]
    pub given_name: Option<String>,
    /// Last name (at most 200 characters).
    #[arg(long, value_name = "NAME")]
    pub family_name: Option<String>,
    /// Profile picture, an https:// URL.
    #[arg(long, value_name = "URL")]
    pub picture: Option<String>,
    /// Read the password from the first line of stdin (8–1024 characters). Required: a
    /// password is never accepted on the command line.
    #[arg(long, required = true)]
    pub password_stdin: bool,
}

/// Arguments of `linkd users remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveUserArgs {
    /// Email address or id of the user.
    #[arg(value_name = "EMAIL_OR_ID")]
    pub user: String,
    /// Confirm the removal.
    #[arg(long)]
    pub yes: bool,
}

/// Arguments of `linkd users set-password`.
#[derive(Debug, clap::Args)]
pub struct SetPasswordArgs {
    /// Email address or id of the user.
    #[arg(value_name = "EMAIL_OR_ID")]
    pub user: String,
    /// Read the new password from the first line of stdin (8–1024 characters). Required: a
    /// password is never accepted on the command line.
    #[arg(long, required = true)]
    pub password_stdin: bool,
    /// Also end every link of the user, as Unlink does, for an account that may be
    /// compromised: the platform's tokens stop working and the user links again.
    #[arg(long)]
    pub revoke_links: bool,
}

/// Runs a `clients` command against the store at `store`.
pub async fn run_clients(store: &str, command: ClientsCommand) -> ExitCode {
    match command {
        ClientsCommand::Add(args) => add_client(store, args).await,
        ClientsCommand::Update(args) => update_client(store, args).await,
        ClientsCommand::List => list_clients(store).await,
        ClientsCommand::Remove(args) => remove_client(store, args).await,
    }
}

/// Runs a `users` command against the store at `store`.
pub async fn run_users(store: &str, command: UsersCommand) -> ExitCode {
    match command {
        UsersCommand::Add(args) => add_user(store, args).await,
        UsersCommand::List => list_users(store).await,
        UsersCommand::Remove(args) => remove_user(store, args).await,
        UsersCommand::SetPassword(args) => set_password(store, args).await,
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
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
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

async fn list_clients(store: &str) -> ExitCode {
    let store = match open_store(store).await {
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
            print_table(["ID", "PROJECT", "NAME", "SCOPES", "CREATED"], &rows);
            ExitCode::SUCCESS
        }
        Err(error) => client_error(error),
    }
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

async fn add_user(store: &str, args: AddUserArgs) -> ExitCode {
    let optional_text = |field, value: Option<&str>| {
        value
            .map(|text| users::parse_profile_text(field, text))
            .transpose()
    };
    let parsed = (|| {
        let email = Email::parse(&args.email)?;
        let profile = Profile {
            name: optional_text(ProfileField::Name, args.name.as_deref())?,
            given_name: optional_text(ProfileField::GivenName, args.given_name.as_deref())?,
            family_name: optional_text(ProfileField::FamilyName, args.family_name.as_deref())?,
            picture: args
                .picture
                .as_deref()
                .map(users::parse_picture_url)
                .transpose()?,
        };
        Ok::<_, AccountError>((email, profile))
    })();
    let (email, profile) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => return account_error(error),
    };
    let password = match read_password() {
        Ok(password) => password,
        Err(code) => return code,
    };
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let user = NewUser {
        email,
        profile,
        password,
    };
    match users::add(&*store, user, SystemClock.now()).await {
        Ok(record) => {
            println!("{}", record.id);
            ExitCode::SUCCESS
        }
        Err(error) => account_error(error),
    }
}

async fn list_users(store: &str) -> ExitCode {
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match users::list(&*store).await {
        Ok(records) => {
            let rows = records
                .iter()
                .map(|user| {
                    [
                        user.id.clone(),
                        user.email.clone(),
                        user.name.clone().unwrap_or_else(|| "-".to_owned()),
                        rfc3339(user.created_at),
                    ]
                })
                .collect::<Vec<_>>();
            print_table(["ID", "EMAIL", "NAME", "CREATED"], &rows);
            ExitCode::SUCCESS
        }
        Err(error) => account_error(error),
    }
}

async fn remove_user(store: &str, args: RemoveUserArgs) -> ExitCode {
    if !args.yes {
        return bad_input(format_args!(
            "refusing to remove user {:?} without --yes (removal cannot be undone)",
            args.user
        ));
    }
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    match users::remove(&*store, &args.user, SystemClock.now()).await {
        Ok((user, unlinked)) => {
            println!(
                "removed user {} ({}); {unlinked} link(s) ended",
                printable(&user.email),
                user.id
            );
            ExitCode::SUCCESS
        }
        Err(error) => account_error(error),
    }
}

async fn set_password(store: &str, args: SetPasswordArgs) -> ExitCode {
    let password = match read_password() {
        Ok(password) => password,
        Err(code) => return code,
    };
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let user = match users::set_password(&*store, &args.user, &password).await {
        Ok(user) => user,
        Err(error) => return account_error(error),
    };
    println!(
        "password changed for {} ({}); sessions ended",
        printable(&user.email),
        user.id
    );
    if args.revoke_links {
        // After the password: a failure here leaves the new password in place, and running
        // the command again (same password) ends the links.
        match crate::grants::unlink_all(&*store, &user.id, SystemClock.now()).await {
            Ok(unlinked) => println!("{unlinked} link(s) ended"),
            Err(error) => return account_error(AccountError::Store(error)),
        }
    }
    ExitCode::SUCCESS
}

/// Opens the store, or reports why it cannot be reached (exit code 1).
async fn open_store(location: &str) -> Result<SharedStore, ExitCode> {
    crate::store::open(location, StoreTimeouts::default())
        .await
        .map_err(failure)
}

/// Reads and checks a password from stdin.
fn read_password() -> Result<Password, ExitCode> {
    let line = read_stdin_line("--password-stdin", "password")?;
    Password::parse(&line).map_err(account_error)
}

/// Reads the first line of stdin without its line ending. Problems with the input itself are
/// bad input (exit 2); an unreadable stdin is a failure (exit 1). The content is never echoed.
fn read_stdin_line(flag: &str, what: &str) -> Result<String, ExitCode> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        // The typed text is echoed by the terminal; the prompt goes to stderr so that stdout
        // stays machine-readable.
        eprintln!("linkd: type the {what} and press Enter");
    }
    let mut line = Vec::new();
    let read = stdin
        .lock()
        .take(MAX_STDIN_LINE_BYTES)
        .read_until(b'\n', &mut line);
    if let Err(error) = read {
        return Err(failure(format_args!("{flag}: cannot read stdin: {error}")));
    }
    let complete = line.last() == Some(&b'\n');
    if !complete && line.len() as u64 >= MAX_STDIN_LINE_BYTES {
        return Err(bad_input(format_args!(
            "{flag}: the first line of stdin is longer than {MAX_STDIN_LINE_BYTES} bytes"
        )));
    }
    if complete {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    String::from_utf8(line).map_err(|_| {
        bad_input(format_args!(
            "{flag}: the {what} on stdin is not valid UTF-8"
        ))
    })
}

fn client_error(error: ClientError) -> ExitCode {
    if error.is_bad_input() {
        bad_input(error)
    } else {
        failure(error)
    }
}

fn account_error(error: AccountError) -> ExitCode {
    if error.is_bad_input() {
        bad_input(error)
    } else {
        failure(error)
    }
}

/// Unix seconds as an RFC 3339 UTC timestamp; the raw number if out of range.
fn rfc3339(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|time| time.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix_seconds.to_string())
}

/// Replaces control characters so that stored text cannot drive the operator's terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Prints rows under a header, columns padded to their widest cell.
fn print_table<const COLUMNS: usize>(header: [&str; COLUMNS], rows: &[[String; COLUMNS]]) {
    let header = header.map(str::to_owned);
    let lines = std::iter::once(&header)
        .chain(rows)
        .map(|row| row.each_ref().map(|cell| printable(cell)))
        .collect::<Vec<_>>();
    let mut widths = [0usize; COLUMNS];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for line in &lines {
        let mut text = String::new();
        for (column, (cell, width)) in line.iter().zip(widths).enumerate() {
            if column + 1 == COLUMNS {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        println!("{}", text.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(i64::MAX), i64::MAX.to_string());
    }

    #[test]
    fn control_characters_are_not_printed() {
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\u{fffd}[2Jb\u{fffd}");
        assert_eq!(printable("Acme ✨"), "Acme ✨");
    }
}
