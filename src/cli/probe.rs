//! `cuenv __probe` (hidden): the child process of `cuenv check`. Loads cuDNN by name in this
//! process and prints a [`crate::probe::Report`]; see [`crate::probe`].

use std::io::Write as _;

use clap::Args;

use super::diagnostics::Report;
use crate::error::ExitCode;
use crate::probe::{self, ProbeRequest};

/// Arguments of the hidden probe command.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// cuDNN major to load (`libcudnn.so.<N>` / `cudnn64_<N>.dll`).
    #[arg(long, value_name = "N")]
    pub major: u64,
    /// CUDA major of the runtime to load; default: the one cuDNN reports it was built with.
    #[arg(long, value_name = "MAJOR")]
    pub cuda: Option<u64>,
    /// Also run the convolution check when a GPU is present.
    #[arg(long)]
    pub conv: bool,
    /// Probe only the driver and NVML (cuDNN is not loaded; `--major` is ignored).
    #[arg(long)]
    pub driver_only: bool,
    /// Print the report as one line of JSON (what `cuenv check` reads).
    #[arg(long)]
    pub json: bool,
}

/// Runs the probe and prints its report: one JSON line with `--json`, pretty JSON otherwise.
pub fn run(args: &ProbeArgs) -> Result<ExitCode, Report> {
    let report = probe::run(&ProbeRequest { major: args.major, cuda_major: args.cuda, conv: args.conv, driver_only: args.driver_only });
    let text = if args.json { serde_json::to_string(&report) } else { serde_json::to_string_pretty(&report) };
    let mut out = std::io::stdout().lock();
    text.map_err(crate::error::unserializable)
        .and_then(|text| writeln!(out, "{text}"))
        .and_then(|()| out.flush())
        .map_err(|e| crate::error::IoError::new("write the probe report to", "stdout", e))?;
    Ok(ExitCode::Success)
}
