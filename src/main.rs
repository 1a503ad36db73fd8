//! The `linkd` binary: parses the command line and hands it to the library.

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    linkd::cli::run(linkd::cli::Cli::parse())
}
