//! `linkd users …`: managing user accounts from the command line.
//!
//! A password arrives only on stdin (first line), never on argv, where other users of the
//! host could read it. Every argument is validated before the store is opened, so bad input
//! is reported in one line with exit code 2 and changes nothing; removal needs `--yes`.

use std::io::{IsTerminal as _, Read as _};
use std::process::ExitCode;

use super::terminal::{
    OutputArgs, OutputFormat, open_existing_store, open_store, print_json, print_listing,
    printable, read_stdin_line, rfc3339,
};
use crate::cli::{bad_input, failure};
use crate::clock::{Clock as _, SystemClock};
use crate::users::{
    self, AccountError, Email, NewUser, Password, Profile, ProfileField, import, password,
};

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
    /// Show one user, by email address or id: profile, creation time and the scheme of the
    /// password hash (never the hash).
    Show(ShowUserArgs),
    /// Import users from another system, keeping their passwords.
    ///
    /// The file holds one JSON object a line: "email" (required), "name", "given_name",
    /// "family_name", "picture", and "password" or "password_hash" (a PHC string of argon2id,
    /// argon2i, scrypt, pbkdf2-sha256 or pbkdf2-sha512, or a $2a$/$2b$/$2y$ bcrypt hash,
    /// replaced by argon2id at the user's next sign-in). Any bad line: exit 2 and nothing
    /// imported, unless --skip-bad.
    Import(ImportUsersArgs),
}

/// Arguments of `linkd users show`.
#[derive(Debug, clap::Args)]
pub struct ShowUserArgs {
    /// Email address or id of the user.
    #[arg(value_name = "EMAIL_OR_ID")]
    pub user: String,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `linkd users import`.
#[derive(Debug, clap::Args)]
pub struct ImportUsersArgs {
    /// The file to read, one JSON object a line ("-" reads stdin). Blank lines are skipped.
    #[arg(long, value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// Import the good lines and report the bad ones on stderr (exit 0), instead of
    /// importing nothing when a line is bad.
    #[arg(long)]
    pub skip_bad: bool,
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
        UsersCommand::Show(args) => show_user(store, args).await,
        UsersCommand::Import(args) => import_users(store, args).await,
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

async fn show_user(store: &str, args: ShowUserArgs) -> ExitCode {
    let store = match open_existing_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let user = match users::find(&*store, &args.user).await {
        Ok(user) => user,
        Err(error) => return account_error(error),
    };
    let details = serde_json::json!({
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "given_name": user.given_name,
        "family_name": user.family_name,
        "picture": user.picture,
        "created_at": rfc3339(user.created_at),
        "password_scheme": password::password_scheme(&user.password_hash),
    });
    match args.output.output {
        OutputFormat::Json => print_json(&details),
        OutputFormat::Text => {
            let fields = [
                "id",
                "email",
                "name",
                "given_name",
                "family_name",
                "picture",
                "created_at",
                "password_scheme",
            ];
            for field in fields {
                let text = details[field].as_str().unwrap_or("-");
                println!("{field}: {}", printable(text));
            }
        }
    }
    ExitCode::SUCCESS
}

async fn import_users(store: &str, args: ImportUsersArgs) -> ExitCode {
    let source = if args.file.as_os_str() == "-" {
        "stdin".to_owned()
    } else {
        args.file.display().to_string()
    };
    let text = match read_import_file(&args.file, &source) {
        Ok(text) => text,
        Err(code) => return code,
    };
    let (good, mut bad) = import::parse_lines(
        text.split('\n')
            .map(|line| line.strip_suffix('\r').unwrap_or(line)),
    );
    // Every bad line is reported at once, those naming an existing user included, unless
    // there is no store yet: a refused import never creates one.
    let no_store_yet = matches!(
        crate::store::location::StoreLocation::parse(store),
        Ok(crate::store::location::StoreLocation::Sqlite(path)) if !path.is_file()
    );
    if !bad.is_empty() && !args.skip_bad && no_store_yet {
        return refuse_import(&source, &bad);
    }
    let store = match open_store(store).await {
        Ok(store) => store,
        Err(code) => return code,
    };
    let (good, taken) = match import::existing_emails(&*store, good).await {
        Ok(split) => split,
        Err(error) => return account_error(error),
    };
    bad.extend(taken);
    bad.sort_by_key(|line| line.line);
    if !bad.is_empty() && !args.skip_bad {
        return refuse_import(&source, &bad);
    }
    let now = SystemClock.now();
    let total = good.len();
    let mut imported = 0usize;
    for (done, user) in good.into_iter().enumerate() {
        match import::store_user(&*store, user, now).await {
            Ok(Ok(_)) => imported += 1,
            Ok(Err(line)) => bad.push(line),
            Err(error) => {
                eprintln!("linkd: imported {imported} before the failure");
                return account_error(error);
            }
        }
        if std::io::stderr().is_terminal() && (done + 1) % 100 == 0 {
            eprintln!("linkd: {}/{total} users stored", done + 1);
        }
    }
    bad.sort_by_key(|line| line.line);
    for line in &bad {
        eprintln!(
            "linkd: {source} line {}: {} (skipped)",
            line.line,
            printable(&line.reason)
        );
    }
    if !bad.is_empty() && !args.skip_bad {
        // Only a user added with the same email while this import ran gets here.
        println!("imported {imported}, skipped {}", bad.len());
        return ExitCode::from(crate::cli::EXIT_BAD_INPUT);
    }
    println!("imported {imported}, skipped {}", bad.len());
    ExitCode::SUCCESS
}

/// Reads the whole import file (or stdin for "-") as UTF-8.
fn read_import_file(path: &std::path::Path, source: &str) -> Result<String, ExitCode> {
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes).map(drop)
    } else {
        std::fs::File::open(path).and_then(|mut file| file.read_to_end(&mut bytes).map(drop))
    };
    if let Err(error) = read {
        return Err(bad_input(format_args!(
            "--file {source}: cannot read: {error}"
        )));
    }
    String::from_utf8(bytes).map_err(|error| {
        let line = error
            .as_bytes()
            .get(..error.utf8_error().valid_up_to())
            .map_or(0, |valid| {
                valid.iter().filter(|byte| **byte == b'\n').count()
            })
            + 1;
        bad_input(format_args!(
            "--file {source} line {line}: not UTF-8; nothing imported"
        ))
    })
}

/// Reports every bad line and refuses the whole import (exit 2).
fn refuse_import(source: &str, bad: &[import::BadLine]) -> ExitCode {
    for line in bad {
        eprintln!(
            "linkd: {source} line {}: {}",
            line.line,
            printable(&line.reason)
        );
    }
    let first = bad.first().map_or(0, |line| line.line);
    bad_input(format_args!(
        "{source}: {} bad line(s), the first is line {first}; nothing imported \
         (--skip-bad imports the other lines)",
        bad.len()
    ))
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
