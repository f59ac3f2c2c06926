//! The `gpassk` binary: parse arguments, dispatch, map errors to exit codes.

use clap::Parser;
use gpassk::cli::{exit_code, one_line_clap_error, Cli, Command, EXIT_BAD_INPUT};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            eprintln!("error: {}", one_line_clap_error(&e));
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Calc(args) => gpassk::calc::run(args),
        Command::Run(args) => gpassk::run::run(args),
        Command::Label(args) => gpassk::label::run(args),
        Command::Grade(args) => gpassk::grade::cli::run(args).map(|c| u8::try_from(c).unwrap_or(1)),
        Command::Datasets(args) => {
            gpassk::dataset::cli::run(args).map(|c| u8::try_from(c).unwrap_or(1))
        }
        Command::Score(args) => gpassk::score::run_score(args),
        Command::Report(args) => gpassk::report::run(args),
        Command::Compare(args) => gpassk::compare::run(args),
        Command::Audit(args) => gpassk::audit::run(args),
        Command::Merge(args) => gpassk::merge::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}
