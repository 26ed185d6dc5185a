//! `cuenv toolkits`: the CUDA toolkit roots on this machine.

use super::diagnostics::Report;
use super::{Ctx, print_json};
use crate::error::ExitCode;
use crate::toolkit::{self, ProcessEnv};

/// Lists the toolkit roots found (and, on stderr, those named but skipped).
pub fn run(ctx: &Ctx, json: bool) -> Result<ExitCode, Report> {
    let mut found = toolkit::discover_all(&ProcessEnv);
    // CUDA runtimes assembled from PyPI wheels (`from = "pypi"`) are toolkit roots too.
    for (root, _) in crate::runtime::list(&ctx.layout) {
        if let Ok(mut t) = toolkit::inspect_root(&root) {
            t.found_by = vec!["<home>/toolkits (from PyPI)".into()];
            found.toolkits.push(t);
        }
    }
    if json {
        print_json(&found);
    } else {
        print!("{}", toolkit::render_discovery(&found));
    }
    Ok(ExitCode::Success)
}
