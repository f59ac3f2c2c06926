//! The `gpassk` binary: parse arguments, dispatch to a command, turn its status into an exit code.
#![allow(clippy::print_stdout, clippy::print_stderr)] // the command layer prints

use clap::{CommandFactory, Parser};
use gpassk::cli::{Cli, Command};
use gpassk::commands;
use gpassk::error::{render, ExitStatus};
use std::process::ExitCode;

/// `gpassk … | head`: once the reader is gone, `println!` cannot print; that ends the command
/// quietly (its files are written) instead of as a panic. Every other panic keeps its report.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to stdout") && text.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// mimalloc: see its line in Cargo.toml.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap's own layout: the error, the usage line and a hint (or the help for a bare `gpassk`).
        Err(e) if e.use_stderr() => {
            let _ = e.print();
            return ExitStatus::BadInput.into();
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Calc(args) => commands::calc::run(args),
        Command::Run(args) => commands::run::run(args),
        Command::Label(args) => commands::label::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Grade(args) => commands::grade::run(args),
        Command::Datasets(args) => commands::datasets::run(args),
        Command::Score(args) => commands::score::run(args),
        Command::Import(args) => commands::import::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::History(args) => commands::history::run(args),
        Command::Plan(args) => commands::plan::run(args),
        Command::View(args) => commands::view::run(args),
        Command::Audit(args) => commands::audit::run(args),
        Command::Merge(args) => commands::merge::run(args),
        Command::Store(args) => commands::store::run(args),
        Command::Exec(args) => commands::exec::run(args),
        Command::Completions(args) => commands::completions::completions(args, Cli::command()),
        Command::Man(args) => commands::completions::man(args, Cli::command()),
    };
    match result {
        Ok(status) => status.into(),
        Err(e) => {
            eprintln!("error: {}", render(&e));
            ExitStatus::of_error(&e).into()
        }
    }
}
