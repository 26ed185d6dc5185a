//! `cuenv toolkits`: the CUDA toolkit roots on this machine.

use super::{Ctx, print_json};
use crate::error::ExitCode;
use crate::toolkit::{self, ProcessEnv};

/// Lists the toolkit roots found (and, on stderr, those named but skipped).
pub fn run(_ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
    let found = toolkit::discover_all(&ProcessEnv);
    if json {
        print_json(&found);
    } else {
        print!("{}", toolkit::render_discovery(&found));
    }
    Ok(ExitCode::Success)
}
