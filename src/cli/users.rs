//! `linkd users …`: managing user accounts from the command line.
//!
//! A password arrives only on stdin (first line), never on argv, where other users of the
//! host could read it. Every argument is validated before the store is opened, so bad input
//! is reported in one line with exit code 2 and changes nothing; removal needs `--yes`.

use std::process::ExitCode;

use super::terminal::{
    OutputArgs, OutputFormat, open_existing_store, open_store, print_listing, printable,
    read_stdin_line, rfc3339,
};
use crate::cli::{bad_input, failure};
use crate::clock::{Clock as _, SystemClock};
use crate::users::{self, AccountError, Email, NewUser, Password, Profile, ProfileField};

/// User management commands.
#[derive(Debug, clap::Subcommand)]
pub enum UsersCommand {
    /// Add a user; the password is read from the first line of stdin. Prints the new user id.
    Add(AddUserArgs),
    /// List users: id, email, name and creation time.
    List(OutputArgs),
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

/// Runs a `users` command against the store at `store`.
pub async fn run_users(store: &str, command: UsersCommand) -> ExitCode {
    match command {
        UsersCommand::Add(args) => add_user(store, args).await,
        UsersCommand::List(output) => list_users(store, output.output).await,
        UsersCommand::Remove(args) => remove_user(store, args).await,
        UsersCommand::SetPassword(args) => set_password(store, args).await,
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

async fn list_users(store: &str, output: OutputFormat) -> ExitCode {
    let store = match open_existing_store(store).await {
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
            let objects = records
                .iter()
                .map(|user| {
                    serde_json::json!({
                        "id": user.id,
                        "email": user.email,
                        "name": user.name,
                        "created_at": rfc3339(user.created_at),
                    })
                })
                .collect();
            print_listing(output, ["ID", "EMAIL", "NAME", "CREATED"], &rows, objects);
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

/// Reads and checks a password from stdin.
fn read_password() -> Result<Password, ExitCode> {
    let line = read_stdin_line("--password-stdin", "password")?;
    Password::parse(&line).map_err(account_error)
}

fn account_error(error: AccountError) -> ExitCode {
    if error.is_bad_input() {
        bad_input(error)
    } else {
        failure(error)
    }
}
