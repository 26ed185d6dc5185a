//! `cuenv toolkits`: the CUDA toolkit roots on this machine, and the table it prints.

use std::fmt::Write as _;

use super::Ctx;
use super::diagnostics::Report;
use crate::error::ExitCode;
// Named `PATHS_VAR` here, as the lines below say it.
use crate::home::settings::TOOLKIT_PATHS_VAR as PATHS_VAR;
use crate::toolkit::{self, Discovery, ProcessEnv, Toolkit};

/// Lists the toolkit roots found (and, on stderr, those named but skipped).
pub fn run(ctx: &Ctx, json: bool) -> Result<ExitCode, Report> {
    let mut found = toolkit::discover_all(&ProcessEnv);
    // CUDA runtimes assembled from PyPI wheels (`from = "pypi"`) are toolkit roots too.
    for (root, _) in crate::toolkit::wheel::list(&ctx.layout) {
        if let Ok(mut t) = toolkit::inspect_root(&root) {
            t.found_by = vec!["<home>/toolkits (from PyPI)".into()];
            found.toolkits.push(t);
        }
    }
    if json {
        ctx.print_json(&found);
    } else {
        write!(ctx.out(), "{}", render_discovery(&found));
    }
    Ok(ExitCode::Success)
}

/// The human output of `cuenv toolkits`: a table with the columns VERSION, ROOT, RUNTIME
/// (yes/no), CUDNN (the hand-copied cuDNN's version, `?` when unknown, `-` when none) and
/// FOUND BY, then one `warning:` line per problem, then one `note:` line per toolkit whose
/// version came from elsewhere than a version file (`note: <root>: it has no version.json;
/// its CUDA version 13.0.96 comes from the runtime file name`). When `toolkits` is empty: a line saying
/// none were found and a `hint:` line naming [`PATHS_VAR`].
pub fn render_table(toolkits: &[Toolkit]) -> String {
    let mut out = String::new();
    if toolkits.is_empty() {
        let (sep, looked) = if cfg!(windows) {
            (";", r"%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*, CUDA_PATH, CUDA_PATH_V*")
        } else {
            (":", "/usr/local/cuda-*, /usr/local/cuda, /opt/cuda, CUDA_HOME, CUDA_PATH")
        };
        let _ = writeln!(out, "No CUDA toolkit found (looked in {looked} and {PATHS_VAR}).");
        let _ = writeln!(
            out,
            "hint: install the CUDA toolkit, or list toolkit folders in {PATHS_VAR} (separated by '{sep}'); \
             a toolkit folder holds version.json and bin/ or lib64/; or need none: a profile with \
             `cuda = {{ version = \"12.6\", from = \"pypi\" }}` gets the CUDA runtime from PyPI"
        );
        return out;
    }
    let header = ["VERSION", "ROOT", "RUNTIME", "CUDNN (BY HAND)", "FOUND BY"];
    let rows: Vec<[String; 5]> = toolkits
        .iter()
        .map(|t| {
            [
                t.version.as_ref().map_or("?".to_string(), |v| v.to_string()),
                t.root.display().to_string(),
                if t.runtime.is_some() { "yes" } else { "no" }.to_string(),
                match &t.hand_copied_cudnn {
                    None => "-".to_string(),
                    Some(c) => c.version.as_ref().map_or("?".to_string(), |v| v.to_string()),
                },
                t.found_by.join(", "),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                let _ = write!(s, "{cell}{}  ", " ".repeat(w - cell.chars().count()));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
    for t in toolkits {
        for p in &t.problems {
            let _ = writeln!(out, "warning: {}: {p}", t.root.display());
        }
    }
    for t in toolkits {
        if let (Some(v), Some(source)) = (&t.version, &t.version_source)
            && !matches!(source.as_str(), "version.json" | "version.txt")
        {
            let _ = writeln!(out, "note: {}: it has no version.json; its CUDA version {v} comes from the {source}", t.root.display());
        }
    }
    out
}

/// [`render_table`] for a [`Discovery`], followed by one `note:` line per skipped named root
/// (`note: CUDA_PATH names C:\x, skipped: ...`).
pub fn render_discovery(d: &Discovery) -> String {
    let mut out = render_table(&d.toolkits);
    for s in &d.skipped {
        let _ = writeln!(out, "note: {} names {}, skipped: {}", s.found_by.join(", "), s.path.display(), s.reason);
    }
    out
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::toolkit::fixtures::*;

    #[test]
    fn table() {
        let tmp = TempDir::new().unwrap();
        let t = toolkit_with_hand_copied_cudnn8(tmp.path());
        let mut bare = t.clone();
        bare.version = None;
        bare.runtime = None;
        bare.hand_copied_cudnn = None;
        bare.problems.clear();
        let text = render_table(&[t.clone(), bare.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("VERSION  ROOT"), "{text}");
        assert!(lines[0].contains("RUNTIME") && lines[0].contains("CUDNN (BY HAND)") && lines[0].ends_with("FOUND BY"));
        assert!(lines[1].starts_with("12.6.2 ") && lines[1].contains(" yes ") && lines[1].contains(" 8.9.4 "), "{text}");
        assert!(lines[1].ends_with(PATHS_VAR));
        assert!(lines[2].starts_with("? ") && lines[2].contains(" no ") && lines[2].contains(" - "), "{text}");
        // Columns line up: ROOT starts at the same column on every row.
        let col = lines[0].find("ROOT").unwrap();
        assert_eq!(&lines[1][col..col + t.root.to_string_lossy().len()], t.root.to_string_lossy());
        assert!(lines[3..].iter().all(|l| l.starts_with("warning: ")), "{text}");

        // A version read from elsewhere than a version file is said so, after the warnings.
        let mut cuda13 = bare.clone();
        cuda13.version = Some("13.0.96".parse().unwrap());
        cuda13.version_source = Some("runtime file name".into());
        let text = render_table(&[t.clone(), cuda13]);
        let last = text.lines().last().unwrap();
        assert_eq!(last, format!("note: {}: it has no version.json; its CUDA version 13.0.96 comes from the runtime file name", t.root.display()), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("note: ")).count(), 1, "{text}");

        let empty = render_table(&[]);
        assert!(empty.starts_with("No CUDA toolkit found"), "{empty}");
        assert!(empty.contains("hint: ") && empty.contains(PATHS_VAR));
        assert!(empty.contains(r#"from = "pypi""#), "the hint names the toolkit-free way: {empty}");
    }

    #[test]
    fn discovery_notes_skipped_named_roots() {
        let (a, b) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        let d = two_roots_by_paths_var(a.path(), b.path());
        let text = render_discovery(&d);
        assert!(text.contains("note: CUENV_TOOLKIT_PATHS names"), "{text}");
    }
}
