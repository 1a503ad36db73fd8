//! `linkd devices import|list`: put an agent user's devices into the device graph without a
//! fulfilment (from a SYNC response on file), and read them back.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::devicegraph::devices;

/// Largest file `devices import` reads.
const MAX_IMPORT_BYTES: u64 = 16 * 1024 * 1024;

/// Device-graph commands.
#[derive(Debug, clap::Subcommand)]
pub enum DevicesCommand {
    /// Replace an agent user's devices with those of a file: a SYNC response, its payload
    /// (`{"devices": [...]}`) or a bare array of devices. Every device is validated first; a
    /// bad file changes nothing and names the wrong field.
    Import {
        /// The integration (client id) whose project the devices belong to.
        #[arg(long, value_name = "ID")]
        client: String,
        /// The agent user (the integrator's user id).
        #[arg(long, value_name = "USER")]
        agent_user_id: String,
        /// The JSON file; `-` reads standard input.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
    /// Print an agent user's devices as a SYNC payload.
    List {
        /// The integration (client id).
        #[arg(long, value_name = "ID")]
        client: String,
        /// The agent user.
        #[arg(long, value_name = "USER")]
        agent_user_id: String,
        /// Output format: the SYNC payload, indented (text) or on one line (json).
        #[command(flatten)]
        output: super::terminal::OutputArgs,
    },
}

fn read_document(file: &PathBuf) -> Result<serde_json::Value, String> {
    use std::io::Read as _;
    let mut text = String::new();
    let read = if file.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_IMPORT_BYTES)
            .read_to_string(&mut text)
    } else {
        std::fs::File::open(file)
            .and_then(|handle| handle.take(MAX_IMPORT_BYTES).read_to_string(&mut text))
    };
    read.map_err(|error| format!("--file {}: {error}", file.display()))?;
    serde_json::from_str(&text)
        .map_err(|error| format!("--file {}: not JSON: {error}", file.display()))
}

/// Runs a `devices` command against the store at `store`.
pub async fn run(store: &str, command: DevicesCommand) -> ExitCode {
    let (client_id, agent_user_id) = match &command {
        DevicesCommand::Import {
            client,
            agent_user_id,
            ..
        }
        | DevicesCommand::List {
            client,
            agent_user_id,
            ..
        } => (client.clone(), agent_user_id.clone()),
    };
    if agent_user_id.is_empty() {
        return super::bad_input("--agent-user-id: must not be empty");
    }
    // Validate the file before touching the store, so that bad input changes nothing.
    let imported = match &command {
        DevicesCommand::Import { file, .. } => {
            match read_document(file).and_then(|document| devices::devices_from(&document)) {
                Ok(devices) => Some(devices),
                Err(message) => return super::bad_input(message),
            }
        }
        DevicesCommand::List { .. } => None,
    };
    let output = match &command {
        DevicesCommand::List { output, .. } => Some(output.output),
        DevicesCommand::Import { .. } => None,
    };
    let store = if output.is_some() {
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
    let client = match store.get_client(&client_id).await {
        Ok(Some(client)) => client,
        Ok(None) => {
            return super::bad_input(format_args!(
                "--client {client_id:?}: no such client (see `linkd clients list`)"
            ));
        }
        Err(error) => return super::failure(error),
    };
    match imported {
        Some(devices) => {
            match store
                .put_devices(&client.project_id, &agent_user_id, &devices)
                .await
            {
                Ok(()) => {
                    println!(
                        "imported {} device(s) for agent user {agent_user_id:?} of project {:?}",
                        devices.len(),
                        client.project_id
                    );
                    ExitCode::SUCCESS
                }
                Err(error) => super::failure(error),
            }
        }
        None => match store.get_devices(&client.project_id, &agent_user_id).await {
            Ok(Some(devices)) => {
                let payload = serde_json::json!({
                    "agentUserId": agent_user_id,
                    "devices": devices,
                });
                if output == Some(super::terminal::OutputFormat::Json) {
                    super::terminal::print_json(&payload);
                } else {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&payload).unwrap_or_default()
                    );
                }
                ExitCode::SUCCESS
            }
            Ok(None) => super::bad_input(format_args!(
                "--agent-user-id {agent_user_id:?}: no devices in project {:?}",
                client.project_id
            )),
            Err(error) => super::failure(error),
        },
    }
}
