//! The `gpassk` binary: parse arguments, dispatch to a command, turn its status into an exit code.

use clap::Parser;
use gpassk::cli::{one_line_clap_error, Cli, Command};
use gpassk::commands;
use gpassk::error::{render, ExitStatus};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            eprintln!("error: {}", one_line_clap_error(&e));
            return ExitStatus::BadInput.into();
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Calc(args) => commands::calc::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Label(args) => commands::label::run(args),
        Command::Grade(args) => commands::grade::run(args),
        Command::Datasets(args) => commands::datasets::run(args),
        Command::Score(args) => commands::score::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Merge(args) => commands::merge::run(args),
    };
    match result {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("error: {}", render(&e));
            ExitStatus::of_error(&e).into()
        }
    }
}
