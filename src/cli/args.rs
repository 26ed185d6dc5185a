//! The command line: every command, argument and option (clap derive). Parsing only: what
//! each command does is in its own file beside this one.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// cuenv: declarative, reversible cuDNN environments per CUDA toolkit.
#[derive(Debug, Parser)]
#[command(name = "cuenv", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The cuenv home (default: $CUENV_HOME, else ~/.local/share/cuenv; Windows: %LOCALAPPDATA%\cuenv).
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Print no progress bars or notes on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Show everything: plan's view links, each check's reasons and notes, whole generations lines.
    #[arg(long, short, global = true)]
    pub verbose: bool,

    /// Color help and error prefixes: auto (a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", hide_default_value = true)]
    pub color: super::color::When,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Manage the content-addressed store of cuDNN releases.
    #[command(subcommand)]
    Store(super::store::StoreCommand),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to stdout, e.g.
    /// `cuenv completions bash > ~/.local/share/bash-completion/completions/cuenv`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print cuenv's man page (roff) to stdout, e.g. `cuenv man > ~/.local/share/man/man1/cuenv.1`.
    Man,
    /// List CUDA toolkit roots: their version, runtime, and any cuDNN copied in by hand.
    ///
    /// Searched: %ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*, CUDA_PATH and
    /// CUDA_PATH_V{major}_{minor} (Windows); /usr/local/cuda-*, /usr/local/cuda, /opt/cuda,
    /// CUDA_HOME, CUDA_PATH (Linux); plus CUENV_TOOLKIT_PATHS everywhere.
    Toolkits {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Propose a profile for the frameworks of a Python env and write it into the profile file.
    ///
    /// Reads what each framework of the env requires of cuDNN and CUDA from its files (wheels'
    /// METADATA pins, torch/version.py, TensorFlow's build_info.py, the libraries onnxruntime
    /// and CTranslate2 ship, conda-meta records; docs/requirements.md), chooses a store entry
    /// that serves all of them (else PyPI's wheel), and adds `[profiles.<name>]` to FILE,
    /// keeping its comments. Frameworks that need two majors get one profile each.
    #[command(
        after_long_help = "Examples:\n  cuenv init                    # the shell's VIRTUAL_ENV or CONDA_PREFIX, into lab.toml\n  cuenv init --env .venv --name torch\n  cuenv init --dry-run"
    )]
    Init {
        /// The profile file to add the profile to (created when missing).
        #[arg(default_value = "lab.toml")]
        file: PathBuf,
        /// The env to look at: a venv, a uv or pixi project, a conda prefix (default: the
        /// shell's VIRTUAL_ENV, else CONDA_PREFIX).
        #[arg(long)]
        env: Option<PathBuf>,
        /// The profile's name (default: the env's folder name; for a project's `.venv` or
        /// `.pixi/envs/default`, the project folder's).
        #[arg(long)]
        name: Option<String>,
        /// Print the file as it would be written; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Show what `apply` would change, as +/-/~ lines; touches nothing.
    Plan {
        /// The profile file (e.g. lab.toml).
        file: PathBuf,
        /// Fail if lab.lock would change.
        #[arg(long)]
        locked: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build a new generation from a profile file and make it current.
    #[command(
        after_long_help = "Examples:\n  cuenv apply lab.toml\n  cuenv apply --dry-run lab.toml\n  cuenv apply --locked lab.toml   # CI: fail instead of changing lab.lock"
    )]
    Apply {
        /// The profile file (e.g. lab.toml).
        file: PathBuf,
        /// Only show what would change (same as `cuenv plan`).
        #[arg(long)]
        dry_run: bool,
        /// Fail instead of changing lab.lock.
        #[arg(long)]
        locked: bool,
        /// Skip the check of each profile after building the generation.
        #[arg(long)]
        no_check: bool,
        /// Treat a profile that finds no GPU as failed (default: a warning).
        #[arg(long)]
        require_gpu: bool,
        /// Seconds each profile's check may take.
        #[arg(long, default_value_t = 120, value_name = "SECS")]
        timeout: u64,
        /// Never use the network: fail if a `from` source is not in the store yet.
        #[arg(long, env = crate::home::settings::OFFLINE_VAR, value_parser = clap::builder::FalseyValueParser::new())]
        offline: bool,
        /// Let this profile file replace the one that built the current generation, removing
        /// the profiles (and conda shims) only that one declared.
        #[arg(long)]
        replace: bool,
        /// Apply even a profile this machine's driver or GPU is known not to run
        /// (CUENV_OVERRIDE_DRIVER_CUDA / CUENV_OVERRIDE_COMPUTE_CAPABILITY stand for another machine's).
        #[arg(long)]
        force: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Resolve a profile file and write lab.lock without building a generation; with
    /// --platform, for other platforms too (their `from` sources are fetched and verified).
    #[command(
        after_long_help = "Examples:\n  cuenv lock lab.toml\n  cuenv lock lab.toml --platform linux-x86_64 --platform windows-x86_64\n  cuenv lock --locked lab.toml --platform windows-x86_64   # CI: the pinned bytes are still served\n  cuenv lock lab.toml --platform windows-x86_64 --allow-unreachable   # a source this network cannot reach: unpinned"
    )]
    Lock {
        /// The profile file (e.g. lab.toml).
        file: PathBuf,
        /// A platform to lock for (repeatable; default: this host's): windows-x86_64,
        /// linux-x86_64, linux-sbsa, linux-aarch64, linux-ppc64le. Only profiles whose CUDA
        /// runtime comes from PyPI can be locked for another platform.
        #[arg(long, value_name = "PLATFORM")]
        platform: Vec<crate::cudnn::platform::Platform>,
        /// Fail instead of changing lab.lock. What the store lacks is still fetched, and must
        /// be exactly the pinned bytes; what it already holds was verified when imported.
        #[arg(long)]
        locked: bool,
        /// A profile whose sources cannot be reached (no answer, offline) does not fail the
        /// lock: its section keeps the profile's pin, or names it unpinned; the first
        /// `apply` on that platform pins it, and `apply --locked` refuses it until then.
        #[arg(long)]
        allow_unreachable: bool,
        /// Never use the network: fail if a `from` source is not in the store yet.
        #[arg(long, env = crate::home::settings::OFFLINE_VAR, value_parser = clap::builder::FalseyValueParser::new())]
        offline: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prove each profile in a fresh process: which cuDNN the loader picks, its versions,
    /// and (with a GPU) a real convolution. Exit 4 when a profile fails.
    Check {
        /// Profiles to check (default: all of the current generation).
        profiles: Vec<String>,
        /// Seconds each profile's check may take.
        #[arg(long, default_value_t = 120, value_name = "SECS")]
        timeout: u64,
        /// Treat a profile that finds no GPU as failed.
        #[arg(long)]
        require_gpu: bool,
        /// Print the full report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Explain which cuDNN this shell's environment actually loads, and why: the loader's
    /// pick for each major (from a fresh child process, like a framework), the folders on
    /// LD_LIBRARY_PATH / PATH that hold cuDNN (the first wins), cuDNN copied by hand into
    /// toolkit roots, and the active profile's check. Exit 4 when something is wrong.
    Doctor {
        /// cuDNN majors to probe (repeatable; default: 9 and 8; the active profile's is
        /// always probed).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=99))]
        major: Vec<u64>,
        /// Seconds each probe may take.
        #[arg(long, default_value_t = 60, value_name = "SECS")]
        timeout: u64,
        /// Instead: which cuDNN / CUDA libraries the running process PID has loaded, and
        /// whether that is still what its profile gives.
        #[arg(long, value_name = "PID")]
        pid: Option<u32>,
        /// With --pid: the profile the process runs under (default: its CUENV_PROFILE; on
        /// Windows another process's environment is not read).
        #[arg(long, value_name = "NAME", requires = "pid")]
        profile: Option<String>,
        /// Also look at this interpreter's environment: its site-packages (system, user,
        /// container or venv), asked with `-S -I` so that no start-up hook or framework runs.
        #[arg(long, value_name = "PATH", conflicts_with_all = ["pid", "for_file"])]
        python: Option<std::path::PathBuf>,
        /// Instead: what the executable or library FILE would load, import by import (ELF
        /// DT_NEEDED with DT_RPATH / DT_RUNPATH, or the PE import table), in this environment;
        /// names the first import that does not resolve.
        #[arg(long = "for", value_name = "FILE", conflicts_with = "pid")]
        for_file: Option<std::path::PathBuf>,
        /// With --for: list system libraries (libc, kernel32, ...) one by one and walk their
        /// imports too.
        #[arg(long, requires = "for_file")]
        all: bool,
        /// Instead of this shell's environment: the one Jupyter starts kernel NAME with (the
        /// server's environment merged with the kernelspec's `env`; see `cuenv kernel list`).
        #[arg(long, value_name = "NAME", conflicts_with_all = ["pid", "for_file", "python"])]
        kernel: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a profile the active one (`<home>/active`).
    Use {
        /// The profile name (default: the one in the nearest `.cuenv-profile`, from the current
        /// folder upward; `--none` clears the active profile instead).
        profile: Option<String>,
        /// Clear the active profile.
        #[arg(long, conflicts_with = "profile")]
        none: bool,
    },
    /// Make the previous (or given) generation current again.
    Rollback {
        /// The generation to go back to.
        #[arg(long, value_name = "N")]
        to: Option<u64>,
    },
    /// List generations (* marks the current one).
    Generations {
        /// Print JSON (with the switch history).
        #[arg(long)]
        json: bool,
    },
    /// The current generation, the active profile, and the health of every link and shim.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete old generations and store entries nothing kept refers to.
    Gc {
        /// How many newest generations to keep (the current and previous are always kept).
        #[arg(long, default_value_t = 3)]
        keep: usize,
        /// Only say what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run a command in a profile's environment, without a shell (exit code, signals and
    /// stdio are the command's own).
    Run {
        /// The profile (default: the nearest `.cuenv-profile`, else the active profile).
        #[arg(short, long)]
        profile: Option<String>,
        /// Refuse to run when the profile failed its last check (default: warn).
        #[arg(long)]
        strict: bool,
        /// The command and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
        command: Vec<std::ffi::OsString>,
    },
    /// Jupyter kernels bound to a profile (kernelspecs whose `env` goes through the profile's
    /// stable view).
    #[command(subcommand)]
    Kernel(KernelCommand),
    /// Export a profile's environment for tools that do not run cuenv: dotenv, direnv, Lmod
    /// and Environment Modules modulefiles, JSON, conda env_vars.
    Export {
        /// The profile (default: the active one).
        #[arg(required_unless_present = "all")]
        profile: Option<String>,
        /// The format.
        #[arg(long, value_parser = ["dotenv", "envrc", "lmod", "tcl", "json", "conda-env-vars"])]
        format: String,
        /// Export every profile of the current generation (needs --out).
        #[arg(long, requires = "out", conflicts_with = "profile")]
        all: bool,
        /// Write files into this folder (modulefiles as `cuenv/<profile>`) instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print a profile's activation for a shell (for CI, Docker, eval), or the one-time setup.
    Env {
        /// The profile (default: the active one).
        profile: Option<String>,
        /// The shell to print for.
        #[arg(long, value_parser = ["cmd", "powershell", "bash", "zsh", "sh", "fish", "csh", "tcsh"], default_value = if cfg!(windows) { "cmd" } else { "bash" })]
        shell: String,
        /// Print the activation through `<home>/active`, to add to a shell's startup file once.
        #[arg(long, conflicts_with = "profile")]
        setup: bool,
        /// Print what a build needs instead: CUDNN_INCLUDE_DIR, CUDNN_LIBRARY and the profile's
        /// folders in front of LIBRARY_PATH and CPATH (Windows: LIB, INCLUDE), so that
        /// `gcc -lcudnn` and CMake's FindCUDNN find its cuDNN (linker scripts stand in for
        /// the `libcudnn.so` a wheel lacks).
        #[arg(long, conflicts_with = "setup")]
        build: bool,
        /// Print a directory hook for `~/.bashrc`, `~/.zshrc`, `config.fish` or `$PROFILE`:
        /// entering a folder with a `.cuenv-profile` gives this shell that profile.
        #[arg(long, value_name = "SHELL", value_parser = ["bash", "zsh", "fish", "powershell"], conflicts_with_all = ["profile", "setup"])]
        hook: Option<String>,
        /// Internal: what the hook evaluates on a change of folder.
        #[arg(long, hide = true, conflicts_with_all = ["profile", "setup"])]
        hook_apply: bool,
    },
    /// Internal: the child process of `cuenv check` (loads cuDNN, prints a JSON report).
    #[command(hide = true, name = "__probe")]
    Probe(super::probe::ProbeArgs),
}

/// `cuenv kernel ...`.
#[derive(clap::Subcommand, Debug)]
pub enum KernelCommand {
    /// Write a kernelspec for PROFILE (`kernel.json` with ipykernel's argv and the profile's
    /// variables).
    Install {
        /// The profile.
        profile: String,
        /// The Python to start (default: the interpreter of the profile's `conda-env` or
        /// `python-env`, else `python3` on PATH).
        #[arg(long, value_name = "EXE")]
        python: Option<PathBuf>,
        /// The kernel's name (default: `cuenv-<profile>`).
        #[arg(long)]
        name: Option<String>,
        /// Install for this user (the default).
        #[arg(long, conflicts_with = "prefix")]
        user: bool,
        /// Install into `DIR/share/jupyter/kernels` (e.g. a conda env or venv).
        #[arg(long, value_name = "DIR")]
        prefix: Option<PathBuf>,
    },
    /// List every kernelspec Jupyter finds (jupyter_client's folders and order), bound to a
    /// cuenv profile or not, with the cuDNN and CUDA folders and variables each kernel's
    /// process gets (the server's environment merged with the kernel's `env` block).
    List {
        /// The Jupyter server's Python (default: $VIRTUAL_ENV's, else $CONDA_PREFIX's, else
        /// python3 on PATH): its `<prefix>/share/jupyter/kernels` is searched, and a kernel whose
        /// `argv[0]` is `python`/`python3` runs it.
        #[arg(long, value_name = "EXE")]
        python: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}
