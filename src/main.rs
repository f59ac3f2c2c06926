use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "gpassk",
    version,
    about = "G-Pass@k evaluation of language models on math benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Grade answers: one --gold/--pred pair or a --cases JSONL file.
    Grade(gpassk::grade::cli::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Grade(args) => gpassk::grade::cli::run(args)?,
    };
    std::process::exit(code);
}
