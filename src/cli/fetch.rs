//! `cuenv store fetch cudnn@<version> --cuda <major> [--from nvidia|pypi]`.

use clap::Args;
use serde::Serialize;

use super::diagnostics::Report;
use super::{Ctx, reporter};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::error::ExitCode;
use crate::fetch::{self, Client, Endpoints, FetchRequest, Source};
use crate::sys::fsutil::human_size;

#[derive(Debug, Args)]
#[command(
    after_long_help = "Examples:\n  cuenv store fetch cudnn@9.5.0.50 --cuda 12\n  cuenv store fetch cudnn@9.5.0.50 --cuda 12 --from nvidia --platform windows-x86_64\n  cuenv store fetch cudnn@8.9.4.25 --cuda 11 --from nvidia --json\n\nThe file is checked against the size and SHA-256 that NVIDIA's redistrib_<version>.json\nor the PyPI index publishes, then imported as `cuenv store add --sha256` would. If the\nstore already holds an entry imported from the same bytes, nothing is downloaded.\nProxies: HTTPS_PROXY, HTTP_PROXY, NO_PROXY. Tuning: CUENV_HTTP_RETRIES (default 3),\nCUENV_HTTP_TIMEOUT (seconds, default 30)."
)]
pub struct FetchArgs {
    /// What to fetch: `cudnn@VERSION`, 4 parts (`cudnn@9.5.0.50`); 3 parts pick the
    /// release's build (`cudnn@9.5.0`).
    #[arg(value_name = "cudnn@VERSION", value_parser = parse_what)]
    pub what: Version,
    /// The CUDA major the build is for (11, 12, 13).
    #[arg(long, value_name = "MAJOR")]
    pub cuda: u64,
    /// Where to download from: `pypi` (nvidia-cudnn-cu<N> wheels) or `nvidia` (official
    /// archives from NVIDIA's redist server).
    #[arg(long, value_name = "SOURCE", default_value = "pypi")]
    pub from: Source,
    /// The platform of the build (windows-x86_64, linux-x86_64, linux-sbsa, ...). Default:
    /// this machine's.
    #[arg(long, value_name = "PLATFORM")]
    pub platform: Option<Platform>,
    /// PyPI index base URL (its JSON API is under <URL>/pypi/).
    #[arg(long, env = crate::home::settings::PYPI_INDEX_VAR, value_name = "URL", default_value = fetch::DEFAULT_PYPI_INDEX)]
    pub pypi_index: String,
    /// NVIDIA redist folder holding redistrib_<version>.json (a lab mirror).
    #[arg(long, env = crate::home::settings::NVIDIA_MIRROR_VAR, value_name = "URL", default_value = fetch::DEFAULT_NVIDIA_MIRROR)]
    pub nvidia_mirror: String,
    /// A folder of wheels to look in before the PyPI index (pip's --find-links).
    #[arg(long, env = crate::home::settings::FIND_LINKS_VAR, value_name = "DIR")]
    pub find_links: Option<std::path::PathBuf>,
    /// Never use the network: fail with an error naming what is missing and the URL it needs.
    #[arg(long, env = crate::home::settings::OFFLINE_VAR, value_parser = clap::builder::FalseyValueParser::new())]
    pub offline: bool,
    /// Print the entry and its source as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    name: &'a str,
    version: String,
    cuda_major: u64,
    platform: String,
    path: String,
    existed: bool,
    #[serde(flatten)]
    from: &'a fetch::FetchedFrom,
    source: Source,
}

/// Parses `cudnn@9.5.0.50` (clap reports an error with exit code 2).
fn parse_what(what: &str) -> Result<Version, String> {
    let Some((name, version)) = what.split_once('@') else {
        return Err(format!("expected `cudnn@VERSION` (e.g. cudnn@9.5.0.50), got `{what}`"));
    };
    if !name.eq_ignore_ascii_case("cudnn") {
        return Err(format!("only cuDNN can be fetched for now (`cudnn@VERSION`), not `{name}`"));
    }
    version.parse::<Version>().map_err(|e| e.to_string())
}

pub fn run(ctx: &Ctx, args: FetchArgs) -> Result<ExitCode, Report> {
    fetch::url_rule::check("--pypi-index", &args.pypi_index)?;
    fetch::url_rule::check("--nvidia-mirror", &args.nvidia_mirror)?;
    let version = args.what;
    let Some(platform) = args.platform.or_else(Platform::host) else {
        return Err(crate::error::Hinted::new(
            "cannot tell this machine's cuDNN platform",
            "pass --platform (windows-x86_64, linux-x86_64, linux-sbsa, linux-aarch64 or linux-ppc64le)",
            crate::error::ExitCode::Invalid,
        )
        .into());
    };
    let req = FetchRequest {
        version,
        cuda_major: args.cuda,
        from: args.from,
        platform,
        endpoints: Endpoints { pypi_index: Some(args.pypi_index), nvidia_mirror: Some(args.nvidia_mirror), offline: args.offline, find_links: args.find_links },
    };
    let writer = super::writer_lock(ctx)?;
    crate::store::Store::new(&ctx.layout).clean_leftovers(&writer)?;
    let client = Client::new(req.endpoints.offline);
    let artifact = fetch::resolve_cudnn(&client, &req)?;
    if artifact.version != req.version.to_string() {
        let (source, why) = match req.from {
            Source::Pypi => ("PyPI", format!("the newest {}.x release of {}", req.version, fetch::pypi::cudnn_project(req.cuda_major))),
            Source::Nvidia => ("NVIDIA", format!("the release redistrib_{}.json names", req.version)),
        };
        ctx.note(&format!(
            "picked cuDNN {} for cudnn@{}: {why} on {source} for CUDA {} ({platform}); name all 4 parts (cudnn@{}) to fetch exactly that",
            artifact.version, req.version, req.cuda_major, artifact.version
        ));
    }
    if fetch::find_by_source_sha256(&ctx.layout, &artifact.sha256).is_none() {
        let size = artifact.size.map(|s| format!(" ({})", human_size(s))).unwrap_or_default();
        ctx.note(&format!("downloading {}{size}", artifact.url));
    }
    let progress = reporter::for_stderr(ctx.quiet);
    let (added, from) = fetch::import_artifact_by_hand(&ctx.layout, &writer, &client, &artifact, Some(req.cuda_major), progress.as_ref())?;
    let m = &added.meta;
    if args.json {
        ctx.print_json(&Row {
            id: &m.id,
            name: &m.name,
            version: m.version.to_string(),
            cuda_major: m.cuda_major,
            platform: m.platform.to_string(),
            path: added.dir.display().to_string(),
            existed: added.existed,
            from: &from,
            source: req.from,
        });
    } else if !from.downloaded {
        writeln!(ctx.out(), "already in store: {} (imported from the same bytes, sha256 {}); nothing downloaded", m.name, from.sha256);
    } else if added.existed {
        writeln!(ctx.out(), "already in store: {} (same content as {})", m.name, from.url);
    } else {
        writeln!(
            ctx.out(),
            "added {} (cuDNN {} for CUDA {}, {}, {} libraries, {})\n  from {} (sha256 {})",
            m.name,
            m.version,
            m.cuda_major,
            m.platform,
            m.library_count(),
            human_size(m.content_size()),
            from.url,
            from.sha256
        );
    }
    Ok(ExitCode::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what() {
        assert_eq!(parse_what("cudnn@9.5.0.50").unwrap().to_string(), "9.5.0.50");
        assert!(parse_what("cudnn").unwrap_err().to_string().contains("expected `cudnn@VERSION`"));
        assert!(parse_what("cuda@12.6").unwrap_err().to_string().contains("not `cuda`"));
        assert!(parse_what("cudnn@nine").is_err());
    }
}
