//! Finding a wheel through a PyPI index's JSON API (warehouse's
//! `GET <index>/pypi/<project>/<version>/json`): its URL, `digests.sha256` and `size`.
//!
//! The cuDNN project is `nvidia-cudnn-cu<CUDA major>`; the CUDA runtime pieces cuDNN loads
//! are `nvidia-cuda-runtime-cu<N>`, `nvidia-cublas-cu<N>` and `nvidia-cuda-nvrtc-cu<N>` up to
//! CUDA 12, and the unsuffixed `nvidia-cuda-runtime`, `nvidia-cublas`, `nvidia-cuda-nvrtc`
//! 13.x for CUDA 13 (docs/facts.md §2). Platform tags: `win_amd64` (windows-x86_64), `manylinux*_x86_64`
//! (linux-x86_64), `manylinux*_aarch64` (linux-sbsa). When the per-version document is
//! missing (some mirrors and proxies serve only `GET <index>/pypi/<project>/json`), the
//! project document's `releases[<version>]` is used: it lists the same files. The parsing
//! here is pure; only [`resolve`] does I/O.
//!
//! Both documents are read into [`IndexDoc`] (`#[derive(Deserialize)]`), leniently: a field
//! of an unexpected JSON type reads as absent and a list entry that is not an object is
//! skipped, so what cuenv cannot use is named or passed over, never a parse failure of the
//! whole document (indexes and mirrors differ in what they add).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

use super::{Artifact, Client, Error, file_name_of};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::sys::sha256::Sha256;

/// A document of the PyPI JSON API: a release's (`info`, `urls`) or a project's
/// (`releases`: version -> files). Fields of an unexpected type read as absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IndexDoc {
    /// `info` (only `info.version` is read).
    #[serde(default, deserialize_with = "lenient")]
    pub info: Option<Info>,
    /// A release document's files; `None`: no `urls` list.
    #[serde(default, deserialize_with = "lenient_list")]
    pub urls: Option<Vec<IndexFile>>,
    /// A project document's releases, by version as written.
    #[serde(default, deserialize_with = "lenient")]
    pub releases: Option<BTreeMap<String, Files>>,
}

/// The `info` object of a document.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Info {
    /// The release's exact version.
    #[serde(default, deserialize_with = "lenient")]
    pub version: Option<String>,
}

/// One file of a release: its name, URL, digest and size (each absent when missing or of
/// another type).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IndexFile {
    /// `filename`.
    #[serde(default, deserialize_with = "lenient")]
    pub filename: Option<String>,
    /// `url`, absolute or relative to the document's URL.
    #[serde(default, deserialize_with = "lenient")]
    pub url: Option<String>,
    /// `digests` (only `sha256` is read).
    #[serde(default, deserialize_with = "lenient")]
    pub digests: Option<Digests>,
    /// `size` in bytes: a JSON number, or a string holding one (some mirrors).
    #[serde(default, deserialize_with = "lenient")]
    pub size: Option<Size>,
}

/// A file's `digests`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Digests {
    /// Hex SHA-256 of the file.
    #[serde(default, deserialize_with = "lenient")]
    pub sha256: Option<String>,
}

/// A `size` as an index or a redist manifest writes it (a number that is not a `u64`, such
/// as `-1` or `1.5`, reads as no size).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// A JSON number.
    Number(u64),
    /// A string of digits.
    Text(String),
}

impl Size {
    /// The size in bytes; `None` for a string that is not a number.
    fn bytes(&self) -> Option<u64> {
        match self {
            Size::Number(n) => Some(*n),
            Size::Text(t) => t.parse().ok(),
        }
    }
}

/// The files of one release in a project document (entries that are not objects skipped).
#[derive(Debug, Clone, Default)]
pub struct Files(pub Vec<IndexFile>);

impl<'de> Deserialize<'de> for Files {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Files, D::Error> {
        Ok(Files(lenient_list(d)?.unwrap_or_default()))
    }
}

/// A field that does not deserialize as `T` (another JSON type) reads as `None`.
pub(super) fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// A JSON list whose entries that do not deserialize as `T` are skipped; `None` when the
/// value is not a list.
fn lenient_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => Some(items.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect()),
        _ => None,
    })
}

/// `nvidia-cudnn-cu<major>`.
pub fn cudnn_project(cuda_major: u64) -> String {
    format!("nvidia-cudnn-cu{cuda_major}")
}

/// The CUDA runtime wheels cuDNN needs at run time, for one CUDA major: the runtime
/// (`cudart`), cuBLAS/cuBLASLt and NVRTC. Up to CUDA 12 the projects carry the major
/// (`nvidia-cuda-runtime-cu12`); from CUDA 13 on they do not (`nvidia-cuda-runtime` 13.x,
/// `nvidia-cublas` 13.x, `nvidia-cuda-nvrtc` 13.x), and the `-cu13` names hold only empty
/// placeholders (0.0.0a0) (docs/facts.md §2).
pub fn cuda_runtime_projects(cuda_major: u64) -> [String; 3] {
    let suffix = if cuda_major >= 13 { String::new() } else { format!("-cu{cuda_major}") };
    [format!("nvidia-cuda-runtime{suffix}"), format!("nvidia-cublas{suffix}"), format!("nvidia-cuda-nvrtc{suffix}")]
}

/// `<index>/pypi/<project>/<version>/json`.
pub fn version_url(index: &str, project: &str, version: &str) -> String {
    format!("{}/pypi/{project}/{version}/json", index.trim_end_matches('/'))
}

/// `<index>/pypi/<project>/json` (every release).
pub fn project_url(index: &str, project: &str) -> String {
    format!("{}/pypi/{project}/json", index.trim_end_matches('/'))
}

/// True when the wheel file name's platform tag (any of a compressed `a.b` set) runs on
/// `platform`.
pub fn wheel_fits(file_name: &str, platform: Platform) -> bool {
    let Some(stem) = file_name.strip_suffix(".whl") else { return false };
    let Some(tags) = stem.rsplit('-').next() else { return false };
    tags.split('.').any(|tag| match platform {
        Platform::WindowsX86_64 => tag == "win_amd64",
        Platform::LinuxX86_64 => tag.starts_with("manylinux") && tag.ends_with("_x86_64"),
        Platform::LinuxSbsa => tag.starts_with("manylinux") && tag.ends_with("_aarch64"),
        Platform::LinuxAarch64 | Platform::LinuxPpc64le => false,
    })
}

/// Picks the wheel for `platform` from a version JSON document (its `urls`).
///
/// Errors: [`Error::NoWheel`] listing the wheels offered; [`Error::BadJson`].
pub fn pick_wheel(doc: &IndexDoc, url: &str, project: &str, version: &str, platform: Platform) -> Result<Artifact, Error> {
    let bad = |detail: &str| Error::BadJson { url: url.into(), detail: detail.into() };
    let files = doc.urls.as_ref().ok_or_else(|| bad("no `urls` list"))?;
    let mut offered = Vec::new();
    let mut fitting: Vec<(&str, &IndexFile)> = Vec::new();
    for f in files {
        let Some(name) = f.filename.as_deref() else { continue };
        if !name.ends_with(".whl") {
            continue;
        }
        offered.push(name.to_string());
        if wheel_fits(name, platform) {
            fitting.push((name, f));
        }
    }
    fitting.sort_by_key(|(name, _)| name.to_string());
    let Some(&(name, f)) = fitting.first() else {
        offered.sort();
        return Err(Error::NoWheel { project: project.into(), version: version.into(), platform, offered });
    };
    let href = f.url.as_deref().ok_or_else(|| bad(&format!("`{name}` has no url")))?;
    let sha256 = f
        .digests
        .as_ref()
        .and_then(|d| d.sha256.as_deref())
        .and_then(|s| s.parse::<Sha256>().ok())
        .ok_or_else(|| bad(&format!("`{name}` has no digests.sha256")))?;
    let size = f.size.as_ref().and_then(Size::bytes);
    let full = join_url(url, href);
    let exact = doc.info.as_ref().and_then(|i| i.version.clone()).unwrap_or_else(|| version.to_string());
    let file_name = if file_name_of(&full) == "download" { name.to_string() } else { file_name_of(&full) };
    Ok(Artifact { url: full, file_name, sha256, size, version: exact })
}

/// Release versions of a project JSON document (`releases` keys with at least one file)
/// near `wanted`: the same major.minor if any, else the same major, else all; sorted, at
/// most the last 12.
pub fn nearby_versions(doc: &IndexDoc, wanted: &str) -> Vec<String> {
    let Some(releases) = &doc.releases else { return Vec::new() };
    let mut all: Vec<(Version, String)> =
        releases.iter().filter(|(_, files)| !files.0.is_empty()).filter_map(|(v, _)| v.parse::<Version>().ok().map(|p| (p, v.clone()))).collect();
    all.sort();
    let want = wanted.parse::<Version>().ok();
    let pick = |n: usize| -> Vec<String> {
        let Some(w) = &want else { return Vec::new() };
        all.iter().filter(|(v, _)| v.starts_with(&w.truncated(n))).map(|(_, s)| s.clone()).collect()
    };
    let mut near = pick(2);
    if near.is_empty() {
        near = pick(1);
    }
    if near.is_empty() {
        near = all.iter().map(|(_, s)| s.clone()).collect();
    }
    let skip = near.len().saturating_sub(12);
    near.split_off(skip)
}

/// The highest release of a project JSON document whose version starts with `prefix`
/// (e.g. `9.5.0` -> `9.5.0.50`).
pub fn newest_with_prefix(doc: &IndexDoc, prefix: &Version) -> Option<String> {
    let releases = doc.releases.as_ref()?;
    releases
        .iter()
        .filter(|(_, files)| !files.0.is_empty())
        .filter_map(|(v, _)| v.parse::<Version>().ok().map(|p| (p, v.clone())))
        .filter(|(v, _)| v.starts_with(prefix) && v.parts().len() > prefix.parts().len())
        .max()
        .map(|(_, s)| s)
}

/// Finds the wheel of `project` at `version` for `platform` on the index: the version
/// document, else the project document's `releases`. A version of fewer than 4 parts picks
/// the newest release starting with it. `what` names the request for the
/// offline error.
///
/// Errors: [`Error::Offline`], [`Error::NoSuchProject`], [`Error::NoSuchVersion`] (with nearby
/// versions), [`Error::NoWheel`], and HTTP errors.
pub fn resolve(client: &Client, index: &str, project: &str, version: &str, platform: Platform, what: &str) -> Result<Artifact, Error> {
    let url = version_url(index, project, version);
    if let Some(doc) = client.get_json::<IndexDoc>(&url, what)? {
        return pick_wheel(&doc, &url, project, version, platform);
    }
    let purl = project_url(index, project);
    let Some(pdoc) = client.get_json::<IndexDoc>(&purl, what)? else {
        return Err(Error::NoSuchProject { project: project.into(), index: index.into() });
    };
    // Some mirrors serve only the project document; its `releases` hold the same entries.
    if let Some(doc) = release_doc(&pdoc, version) {
        return pick_wheel(&doc, &purl, project, version, platform);
    }
    if let Some(full) = version.parse::<Version>().ok().filter(|v| v.parts().len() < 4).and_then(|v| newest_with_prefix(&pdoc, &v)) {
        let doc = release_doc(&pdoc, &full).expect("newest_with_prefix picks a listed release");
        return pick_wheel(&doc, &purl, project, &full, platform);
    }
    Err(Error::NoSuchVersion { project: project.into(), version: version.into(), index: index.into(), nearby: nearby_versions(&pdoc, version) })
}

/// A version document (`{info: {version}, urls}`) made from the project document's
/// `releases[version]`, when that lists files.
pub fn release_doc(project_doc: &IndexDoc, version: &str) -> Option<IndexDoc> {
    let files = project_doc.releases.as_ref()?.get(version)?;
    if files.0.is_empty() {
        return None;
    }
    Some(IndexDoc { info: Some(Info { version: Some(version.to_string()) }), urls: Some(files.0.clone()), releases: None })
}

/// `href` resolved against `base` (the URL of the document that holds it), as a browser
/// would (RFC 3986 §5.2, by the `url` crate): PyPI gives absolute URLs, mirrors often
/// relative ones such as `../../packages/ab/cd/x.whl`. A `base` that is not a URL leaves
/// `href` as it is (the download then fails, naming it).
pub fn join_url(base: &str, href: &str) -> String {
    match url::Url::parse(base).and_then(|b| b.join(href)) {
        Ok(u) => u.into(),
        Err(_) => href.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(v: Value) -> IndexDoc {
        serde_json::from_value(v).unwrap()
    }

    fn doc() -> IndexDoc {
        parse(json!({
            "info": {"name": "nvidia-cudnn-cu12", "version": "9.5.0.50"},
            "urls": [
                {"filename": "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl", "url": "https://files.example/a.whl", "digests": {"sha256": SHA}, "size": 1},
                {"filename": "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl", "url": "https://files.example/packages/nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl", "digests": {"sha256": SHA.to_uppercase()}, "size": 571000000},
                {"filename": "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl", "url": "/packages/w.whl", "digests": {"sha256": SHA}, "size": 557000000},
                {"filename": "nvidia-cudnn-cu12-9.5.0.50.tar.gz", "url": "https://files.example/s.tar.gz", "digests": {"sha256": SHA}, "size": 5}
            ]
        }))
    }

    #[test]
    fn tags() {
        assert!(wheel_fits("x-1-py3-none-win_amd64.whl", Platform::WindowsX86_64));
        assert!(!wheel_fits("x-1-py3-none-win32.whl", Platform::WindowsX86_64));
        assert!(wheel_fits("x-1-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", Platform::LinuxX86_64));
        assert!(wheel_fits("x-1-py3-none-manylinux1_x86_64.whl", Platform::LinuxX86_64));
        assert!(!wheel_fits("x-1-py3-none-manylinux2014_aarch64.whl", Platform::LinuxX86_64));
        assert!(wheel_fits("x-1-py3-none-manylinux2014_aarch64.whl", Platform::LinuxSbsa));
        assert!(!wheel_fits("x-1-py3-none-manylinux2014_aarch64.whl", Platform::LinuxAarch64));
        assert!(!wheel_fits("x-1.tar.gz", Platform::LinuxX86_64));
    }

    #[test]
    fn picks_per_platform() {
        let d = doc();
        let a = pick_wheel(&d, "https://pypi.example/pypi/nvidia-cudnn-cu12/9.5.0.50/json", "nvidia-cudnn-cu12", "9.5.0.50", Platform::LinuxX86_64).unwrap();
        assert_eq!(a.file_name, "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl");
        assert_eq!(a.sha256.to_string(), SHA);
        assert_eq!(a.size, Some(571000000));
        assert_eq!(a.version, "9.5.0.50");
        let w = pick_wheel(&d, "https://pypi.example/pypi/nvidia-cudnn-cu12/9.5.0.50/json", "nvidia-cudnn-cu12", "9.5.0.50", Platform::WindowsX86_64).unwrap();
        assert_eq!(w.url, "https://pypi.example/packages/w.whl");
        let s = pick_wheel(&d, "https://pypi.example/pypi/nvidia-cudnn-cu12/9.5.0.50/json", "nvidia-cudnn-cu12", "9.5.0.50", Platform::LinuxSbsa).unwrap();
        assert_eq!(s.url, "https://files.example/a.whl");
        // The URL's last segment is not the wheel's name: keep the index's file name.
        assert_eq!(s.file_name, "a.whl");
    }

    #[test]
    fn no_wheel_lists_offered() {
        let e = pick_wheel(&doc(), "u", "nvidia-cudnn-cu12", "9.5.0.50", Platform::LinuxPpc64le).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`nvidia-cudnn-cu12` 9.5.0.50 has no wheel for linux-ppc64le; its wheels: nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl, nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl, nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl"
        );
    }

    #[test]
    fn missing_digest_is_bad_json() {
        let d = parse(json!({"urls": [{"filename": "x-1-py3-none-win_amd64.whl", "url": "https://f/x.whl", "digests": {}}]}));
        let e = pick_wheel(&d, "https://i/pypi/x/1/json", "x", "1", Platform::WindowsX86_64).unwrap_err();
        assert_eq!(e.to_string(), "https://i/pypi/x/1/json: not the expected JSON: `x-1-py3-none-win_amd64.whl` has no digests.sha256");
    }

    #[test]
    fn fields_of_another_type_read_as_absent_and_non_objects_are_skipped() {
        let d = parse(json!({
            "info": "not an object",
            "urls": [
                "not an object",
                {"filename": 7, "url": "https://f/seven.whl"},
                {"filename": "x-1-py3-none-win_amd64.whl", "url": "https://f/x.whl", "digests": {"sha256": SHA}, "size": "12"},
                {"filename": "x-1-py3-none-manylinux1_x86_64.whl", "url": 5, "digests": {"sha256": SHA}, "size": -1}
            ]
        }));
        let w = pick_wheel(&d, "https://i/pypi/x/1/json", "x", "1", Platform::WindowsX86_64).unwrap();
        assert_eq!((w.size, w.version.as_str()), (Some(12), "1"));
        let e = pick_wheel(&d, "https://i/pypi/x/1/json", "x", "1", Platform::LinuxX86_64).unwrap_err();
        assert_eq!(e.to_string(), "https://i/pypi/x/1/json: not the expected JSON: `x-1-py3-none-manylinux1_x86_64.whl` has no url");
        let none = parse(json!({"urls": "nope"}));
        assert!(pick_wheel(&none, "u", "x", "1", Platform::WindowsX86_64).unwrap_err().to_string().ends_with("no `urls` list"));
    }

    #[test]
    fn nearby_and_prefix() {
        let f = json!([{"filename": "f"}]);
        let d = parse(json!({"releases": {"9.1.0.70": f, "9.5.0.50": f, "9.5.1.17": f, "8.9.4.25": f, "9.6.0.74": f, "0.0.1": [], "junk-version": f}}));
        assert_eq!(nearby_versions(&d, "9.5.0.5"), vec!["9.5.0.50", "9.5.1.17"]);
        assert_eq!(nearby_versions(&d, "9.4.0.1"), vec!["9.1.0.70", "9.5.0.50", "9.5.1.17", "9.6.0.74"]);
        assert_eq!(nearby_versions(&d, "7.0"), vec!["8.9.4.25", "9.1.0.70", "9.5.0.50", "9.5.1.17", "9.6.0.74"]);
        assert_eq!(newest_with_prefix(&d, &"9.5".parse().unwrap()).as_deref(), Some("9.5.1.17"));
        assert_eq!(newest_with_prefix(&d, &"9.5.0".parse().unwrap()).as_deref(), Some("9.5.0.50"));
        assert_eq!(newest_with_prefix(&d, &"9.7".parse().unwrap()), None);
        let r = release_doc(&d, "9.5.0.50").unwrap();
        assert_eq!(r.info.and_then(|i| i.version).as_deref(), Some("9.5.0.50"));
        assert_eq!(r.urls.unwrap().iter().map(|f| f.filename.clone()).collect::<Vec<_>>(), [Some("f".to_string())]);
        assert!(release_doc(&d, "0.0.1").is_none());
        assert!(release_doc(&d, "9.9").is_none());
    }

    #[test]
    fn urls_and_projects() {
        assert_eq!(version_url("https://pypi.org/", "nvidia-cudnn-cu12", "9.5.0.50"), "https://pypi.org/pypi/nvidia-cudnn-cu12/9.5.0.50/json");
        assert_eq!(project_url("https://pypi.org", "nvidia-cudnn-cu11"), "https://pypi.org/pypi/nvidia-cudnn-cu11/json");
        assert_eq!(cudnn_project(12), "nvidia-cudnn-cu12");
        assert_eq!(cuda_runtime_projects(12)[2], "nvidia-cuda-nvrtc-cu12");
        assert_eq!(cuda_runtime_projects(11), ["nvidia-cuda-runtime-cu11", "nvidia-cublas-cu11", "nvidia-cuda-nvrtc-cu11"]);
        // From CUDA 13 on the projects are unsuffixed (the -cu13 ones are empty placeholders).
        assert_eq!(cuda_runtime_projects(13), ["nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cuda-nvrtc"]);
        assert_eq!(cudnn_project(13), "nvidia-cudnn-cu13");
        let doc = "https://pypi.org/pypi/nvidia-cudnn-cu12/json";
        assert_eq!(join_url(doc, "../../packages/packages/36/24/x.whl"), "https://pypi.org/packages/packages/36/24/x.whl");
        assert_eq!(join_url(doc, "/packages/x.whl#sha256=00"), "https://pypi.org/packages/x.whl#sha256=00");
        assert_eq!(join_url(doc, "x.whl"), "https://pypi.org/pypi/nvidia-cudnn-cu12/x.whl");
        assert_eq!(join_url(doc, "../../../../x.whl"), "https://pypi.org/x.whl");
        assert_eq!(join_url(doc, "//files.example/x.whl"), "https://files.example/x.whl");
        assert_eq!(join_url("http://h:1", "x.whl"), "http://h:1/x.whl");
        assert_eq!(join_url(doc, "https://files.pythonhosted.org/p/x.whl"), "https://files.pythonhosted.org/p/x.whl");
    }
}
