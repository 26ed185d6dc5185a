//! The command-line layer: argument parsing (clap), printing, and exit codes.
//! The only module that writes to stdout/stderr.

mod fetch;
mod reporter;
mod store;
mod toolkits;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::error::{self, ExitCode};
use crate::layout::Layout;

/// cuenv: declarative, reversible cuDNN environments per CUDA toolkit.
#[derive(Debug, Parser)]
#[command(name = "cuenv", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The cuenv home (store, generations, profiles). Default: %LOCALAPPDATA%\cuenv on
    /// Windows, $XDG_DATA_HOME/cuenv or ~/.local/share/cuenv elsewhere.
    #[arg(long, global = true, env = "CUENV_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Print no progress bars or notes on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage the content-addressed store of cuDNN releases.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// List CUDA toolkit roots: their version, runtime, and any cuDNN copied in by hand.
    ///
    /// Searched: %ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*, CUDA_PATH and
    /// CUDA_PATH_V<maj>_<min> (Windows); /usr/local/cuda-*, /usr/local/cuda, /opt/cuda,
    /// CUDA_HOME, CUDA_PATH (Linux); plus CUENV_TOOLKIT_PATHS everywhere.
    Toolkits {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// What every command gets: the layout and output settings.
pub struct Ctx {
    pub layout: Layout,
    pub quiet: bool,
}

impl Ctx {
    /// A note on stderr, unless `--quiet`.
    pub fn note(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }
}

/// Parses the arguments, runs the command, renders any error; returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code as i32,
        Err(err) => {
            eprint!("{}", error::render(&err));
            error::exit_code(&err) as i32
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let home = match cli.home {
        Some(h) => h,
        None => Layout::default_home().context("cannot find a home folder for cuenv: pass --home or set CUENV_HOME")?,
    };
    let ctx = Ctx { layout: Layout::new(home), quiet: cli.quiet };
    match cli.command {
        Command::Store(cmd) => store::run(&ctx, cmd),
        Command::Toolkits { json } => toolkits::run(&ctx, json),
    }
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(value).expect("serializable"));
}
