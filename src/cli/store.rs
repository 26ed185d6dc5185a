//! `cuenv store add | list | verify | remove`.

use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use super::diagnostics::Report;
use super::{Ctx, reporter};
use crate::error::ExitCode;
use crate::store::{AddOptions, Store};
use crate::sys::fsutil::human_size;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Import cuDNN releases: official .zip / .tar.xz archives, legacy cuda/ archives,
    /// nvidia-cudnn-cu* wheels, or extracted folders.
    #[command(
        after_long_help = "Examples:\n  cuenv store add cudnn-windows-x86_64-9.5.0.50_cuda12-archive.zip\n  cuenv store add nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl --sha256 <hex>\n  cuenv store add \"C:\\Program Files\\NVIDIA\\CUDNN\\v9.5\" --cuda 12"
    )]
    Add {
        /// Archives, wheels or folders to import.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Expected SHA-256 of the input file (one input only).
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// CUDA major the build is for; picks the variant in an installer tree.
        #[arg(long, value_name = "MAJOR")]
        cuda: Option<u64>,
        /// Import a set that lacks some of its sub-libraries (recorded in the entry; check and
        /// doctor warn).
        #[arg(long)]
        allow_incomplete: bool,
        /// Print the entries as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List store entries.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-hash entries against their entry.toml; exit 3 on any damage.
    Verify {
        /// Entries to check (name, or id prefix); all when omitted.
        ids: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Download a cuDNN release from NVIDIA or PyPI, verify it, and import it.
    Fetch(super::fetch::FetchArgs),
    /// Remove an entry.
    Remove {
        /// The entry (name, or id prefix of at least 4 hex digits).
        id: String,
    },
}

#[derive(Serialize)]
struct EntryRow<'a> {
    id: &'a str,
    name: &'a str,
    version: String,
    cuda_major: u64,
    platform: String,
    size: u64,
    source: &'a str,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    existed: Option<bool>,
}

fn row<'a>(meta: &'a crate::store::entry::EntryMeta, dir: &std::path::Path, existed: Option<bool>) -> EntryRow<'a> {
    EntryRow {
        id: &meta.id,
        name: &meta.name,
        version: meta.version.to_string(),
        cuda_major: meta.cuda_major,
        platform: meta.platform.to_string(),
        size: meta.content_size(),
        source: &meta.source.name,
        path: dir.display().to_string(),
        existed,
    }
}

pub fn run(ctx: &Ctx, cmd: StoreCommand) -> Result<ExitCode, Report> {
    let store = Store::new(&ctx.layout);
    match cmd {
        StoreCommand::Add { paths, sha256, cuda, allow_incomplete, json } => add(ctx, &store, &paths, sha256, cuda, allow_incomplete, json),
        StoreCommand::List { json } => list(ctx, &store, json),
        StoreCommand::Verify { ids, json } => verify(ctx, &store, &ids, json),
        StoreCommand::Fetch(args) => super::fetch::run(ctx, args),
        StoreCommand::Remove { id } => remove(ctx, &store, &id),
    }
}

/// `store add --cuda C` of files already stored as an entry for another CUDA major: the
/// entry stays as it is; the warning says where its major came from (`why`) and how to
/// store the files for `given` instead.
#[derive(Debug, thiserror::Error)]
#[error("--cuda {given} contradicts the stored entry, which is for CUDA {stored} ({why}); the entry stays as it is")]
struct CudaContradicts {
    given: u64,
    stored: u64,
    why: String,
    entry: String,
}

impl crate::error::Diagnose for CudaContradicts {
    fn hint(&self) -> Option<String> {
        Some(format!("if these files are for CUDA {c}, run `cuenv store remove {}`, then add them again with --cuda {c}", self.entry, c = self.given))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Success
    }
}

/// `store add PATH...`: imports each input by hand (a gc root), one line each.
fn add(ctx: &Ctx, store: &Store, paths: &[PathBuf], sha256: Option<String>, cuda: Option<u64>, allow_incomplete: bool, json: bool) -> Result<ExitCode, Report> {
    if sha256.is_some() && paths.len() > 1 {
        return Err(crate::error::Hinted::new(
            format!("--sha256 applies to one input, but {} were given", paths.len()),
            "add them one at a time, each with its own --sha256",
            ExitCode::Invalid,
        )
        .into());
    }
    let writer = super::writer_lock(ctx)?;
    store.clean_leftovers(&writer)?;
    let sha256 = sha256.map(|s| s.parse().map_err(|_| crate::store::Error::BadSha256Arg(s))).transpose()?;
    let opts = AddOptions { sha256, cuda, allow_incomplete, ..Default::default() };
    let mut added = Vec::new();
    for path in paths {
        let progress = reporter::for_stderr(ctx.quiet);
        let a = store.add_by_hand(&writer, path, &opts, progress.as_ref())?;
        if !json {
            if a.existed {
                writeln!(ctx.out(), "already in store: {} (from {})", a.meta.name, path.display());
                if let Some(c) = cuda.filter(|c| *c != a.meta.cuda_major) {
                    let why = if a.meta.cuda_source == crate::store::detect::CUDA_FROM_USER {
                        "given with --cuda when it was first added".to_string()
                    } else {
                        format!("read from {}", a.meta.cuda_source)
                    };
                    ctx.report("warning", &CudaContradicts { given: c, stored: a.meta.cuda_major, why, entry: a.meta.name.clone() });
                }
            } else {
                writeln!(
                    ctx.out(),
                    "added {} (cuDNN {} for CUDA {}, {}, {} libraries, {})",
                    a.meta.name,
                    a.meta.version,
                    a.meta.cuda_major,
                    a.meta.platform,
                    a.meta.library_count(),
                    human_size(a.meta.content_size())
                );
                if !a.meta.incomplete.is_empty() {
                    let why = if allow_incomplete {
                        "added with --allow-incomplete".to_string()
                    } else {
                        // Only a set past the table's last checked release is kept without the flag.
                        format!(
                            "not verified: its dispatcher names none of its sub-libraries, and cuenv's table, checked through cuDNN {}, lists them",
                            crate::cudnn::set::checked_through(a.meta.version.major()).unwrap_or("no release")
                        )
                    };
                    writeln!(
                        ctx.err(),
                        "{}: {} lacks {} ({why}): the loader takes those from another folder, or cuDNN fails when it needs them; `check` and `doctor` warn",
                        crate::error::rule::labelled("warning", Some(crate::error::Rule::IncompleteSet)),
                        a.meta.name,
                        a.meta.incomplete.join(", ")
                    );
                }
                if a.meta.cuda_source == crate::store::detect::CUDA_FROM_USER {
                    ctx.note(&format!(
                        "note: CUDA {} was taken from --cuda: the libraries name no CUDA library by major, so it could not be checked",
                        a.meta.cuda_major
                    ));
                }
            }
        }
        added.push(a);
    }
    if json {
        let rows: Vec<_> = added.iter().map(|a| row(&a.meta, &a.dir, Some(a.existed))).collect();
        ctx.print_json(&rows);
    }
    Ok(ExitCode::Success)
}

/// A reading store command's cleanup: when no other cuenv holds the writer lock, the
/// leftovers are a dead command's and go now (said on stderr); while another holds it they
/// may be its live staging, and stay.
fn clean_if_idle(ctx: &Ctx, store: &Store) -> Result<(), Report> {
    if let Some(writer) = crate::home::writer_lock::WriterLock::try_acquire(&ctx.layout) {
        super::note_freed(ctx, store.clean_leftovers(&writer)?);
    }
    Ok(())
}

/// `store list`: a table of the entries (or JSON rows), notes on unreadable ones. Removes
/// the leftovers of interrupted commands first when no other cuenv is writing.
fn list(ctx: &Ctx, store: &Store, json: bool) -> Result<ExitCode, Report> {
    clean_if_idle(ctx, store)?;
    let all = store.list();
    if json {
        let rows: Vec<_> = all.iter().filter_map(|(d, m)| m.as_ref().ok().map(|m| row(m, d, None))).collect();
        ctx.print_json(&rows);
    } else if all.is_empty() {
        writeln!(ctx.out(), "the store at {} is empty; add a release with `cuenv store add <archive>`", ctx.layout.store_dir().display());
    } else {
        writeln!(ctx.out(), "{:<58} {:<10} {:>4} {:<15} {:>10}  SOURCE", "ENTRY", "CUDNN", "CUDA", "PLATFORM", "SIZE");
        for (dir, m) in &all {
            match m {
                Ok(m) => writeln!(
                    ctx.out(),
                    "{:<58} {:<10} {:>4} {:<15} {:>10}  {}",
                    m.name,
                    m.version.to_string(),
                    m.cuda_major,
                    m.platform.to_string(),
                    human_size(m.content_size()),
                    if m.incomplete.is_empty() { m.source.name.clone() } else { format!("{} (incomplete: lacks {})", m.source.name, m.incomplete.join(", ")) }
                ),
                Err(e) => writeln!(ctx.out(), "{:<58} unreadable: {e}", dir.file_name().unwrap_or_default().to_string_lossy()),
            }
        }
    }
    for (_, m) in &all {
        if let Err(e) = m {
            ctx.note(&format!("warning: {e}; run `cuenv store verify`"));
        }
    }
    Ok(ExitCode::Success)
}

/// `store verify [ID...]`: re-hashes each entry (all when none is named); exit 3 on damage.
/// Removes the leftovers of interrupted commands first when no other cuenv is writing.
fn verify(ctx: &Ctx, store: &Store, ids: &[String], json: bool) -> Result<ExitCode, Report> {
    clean_if_idle(ctx, store)?;
    // Names on disk may come from outside (a planted file): printed escaped.
    use crate::store::member::escape;
    // Links at the top of the store are no entries: named (all entries checked) as damage.
    let links = if ids.is_empty() { store.top_level_links() } else { Vec::new() };
    let targets: Vec<PathBuf> = if ids.is_empty() {
        store.list().into_iter().map(|(d, _)| d).collect()
    } else {
        ids.iter().map(|q| store.find(q).map(|(d, _)| d)).collect::<Result<_, _>>()?
    };
    #[derive(Serialize)]
    struct Report {
        entry: String,
        ok: bool,
        #[serde(flatten)]
        damage: crate::store::Damage,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    }
    let mut reports = Vec::new();
    for dir in targets {
        let entry = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        match store.verify(&dir) {
            Ok(damage) => reports.push(Report { entry, ok: damage.is_clean(), damage, error: None }),
            Err(e) => reports.push(Report { entry, ok: false, damage: Default::default(), error: Some(e.to_string()) }),
        }
    }
    for (link, target) in &links {
        let entry = link.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let to = target.as_ref().map(|t| format!(" (to {})", t.display())).unwrap_or_default();
        let error = format!("a link at the top of the store{to}, not an entry: cuenv never uses it");
        reports.push(Report { entry, ok: false, damage: Default::default(), error: Some(error) });
    }
    let bad = reports.iter().filter(|r| !r.ok).count();
    if json {
        ctx.print_json(&reports);
    } else {
        for r in &reports {
            if r.ok {
                writeln!(ctx.out(), "ok       {}", escape(&r.entry));
                continue;
            }
            writeln!(ctx.out(), "DAMAGED  {}", escape(&r.entry));
            if let Some(e) = &r.error {
                writeln!(ctx.out(), "  {}", escape(e));
            }
            for (what, list) in [("modified", &r.damage.modified), ("missing", &r.damage.missing), ("extra", &r.damage.extra)] {
                for p in list {
                    writeln!(ctx.out(), "  {what}: {}", escape(p));
                }
            }
            if let Some(why) = &r.damage.identity {
                writeln!(ctx.out(), "  {}", escape(why));
            }
        }
        if reports.is_empty() {
            writeln!(ctx.out(), "the store is empty; nothing to verify");
        } else {
            writeln!(ctx.out(), "{} entries checked, {} damaged", reports.len(), bad);
        }
    }
    if bad > 0 {
        if !json {
            if bad > links.len() {
                writeln!(ctx.err(), "hint: remove a damaged entry with `cuenv store remove <entry>` and add its archive again");
            }
            if !links.is_empty() {
                let paths: Vec<String> = links.iter().map(|(l, _)| escape(&l.display().to_string())).collect();
                writeln!(
                    ctx.err(),
                    "hint: delete {} (store entries are real folders, made by `cuenv store add`): {}",
                    if links.len() == 1 { "the link" } else { "the links" },
                    paths.join(", ")
                );
            }
        }
        return Ok(ExitCode::Damaged);
    }
    Ok(ExitCode::Success)
}

/// `store remove ID`: deletes one entry no kept generation uses.
fn remove(ctx: &Ctx, store: &Store, id: &str) -> Result<ExitCode, Report> {
    let writer = super::writer_lock(ctx)?;
    store.clean_leftovers(&writer)?;
    let meta = crate::generation::gc::remove_entry(&ctx.layout, &writer, id)?;
    writeln!(ctx.out(), "removed {}", meta.name);
    Ok(ExitCode::Success)
}
