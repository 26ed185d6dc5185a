//! Finding an official cuDNN archive through NVIDIA's redist manifests,
//! `<base>/redistrib_<version>.json` (docs/facts.md §3).
//!
//! A manifest holds products (`cudnn`, `cudnn_samples`, `cudnn_jit`, ...); only `cudnn` is
//! read. Its platform keys (`linux-x86_64`, `windows-x86_64`, ...) map either straight to an
//! artifact `{relative_path, sha256, md5, size}` (8.5-era, and the 8.9-era files that hold
//! one CUDA major each) or to `{"cuda11": artifact, "cuda12": artifact}` (9.x, and the
//! later 3-part 8.9 files). `size` is a JSON string. The artifact URL is the manifest's
//! folder + `relative_path`.
//!
//! Manifest names vary: 9.x uses 3 parts (`redistrib_9.5.0.json`); 8.x uses 4 parts
//! (`redistrib_8.9.4.25.json`, one CUDA major) and sometimes 3 (`redistrib_8.9.4.json`,
//! all majors). [`resolve`] tries the name as given, then its first 3 parts.
//!
//! A manifest is read into [`Manifest`] (`#[derive(Deserialize)]`), leniently like the
//! PyPI documents: fields of another JSON type read as absent, so a manifest with more in
//! it than cuenv reads still parses, and an artifact that lacks what cuenv needs is named.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use super::pypi::{Size, lenient};

use super::{Artifact, Client, Error, file_name_of};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::sys::sha256::Sha256;

/// One archive a manifest offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The platform key as written (`linux-x86_64`).
    pub platform: String,
    /// The CUDA major: the `cudaN` key, else the `_cudaN` in the file name, else the
    /// `cuda-N` in `release_product`; `None` when nothing says.
    pub cuda: Option<u64>,
    /// The archive.
    pub artifact: Artifact,
}

impl Offer {
    /// `linux-x86_64/cuda12` (or `linux-x86_64` when the CUDA major is unknown).
    pub fn label(&self) -> String {
        match self.cuda {
            Some(c) => format!("{}/cuda{c}", self.platform),
            None => self.platform.clone(),
        }
    }
}

/// A redist manifest: its `release_product` and its `cudnn` product (other products, such as
/// `cudnn_samples`, are not read).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Manifest {
    /// `release_product` (`cudnn-v8-9-cuda-12` in the 8.9-era files that hold one CUDA major).
    #[serde(default, deserialize_with = "lenient")]
    pub release_product: Option<String>,
    /// The `cudnn` product; `None`: the manifest has none.
    #[serde(default, deserialize_with = "lenient")]
    pub cudnn: Option<Product>,
}

/// The `cudnn` product of a manifest: its version and, by platform key, either an artifact
/// (an object with `relative_path`) or `{"cudaN": artifact}`; other keys (`name`, `license`)
/// are not objects and are passed over.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Product {
    /// The release's 4-part version.
    #[serde(default, deserialize_with = "lenient")]
    pub version: Option<String>,
    /// Every other key of the product, as written.
    #[serde(flatten)]
    pub platforms: BTreeMap<String, Value>,
}

/// One archive as a manifest describes it (each field absent when missing or of another type).
#[derive(Debug, Clone, Default, Deserialize)]
struct RawArtifact {
    #[serde(default, deserialize_with = "lenient")]
    relative_path: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    sha256: Option<String>,
    /// A string in NVIDIA's files; a number is taken too.
    #[serde(default, deserialize_with = "lenient")]
    size: Option<Size>,
}

/// Manifest file names to try for `version`, in order.
pub fn manifest_names(version: &Version) -> Vec<String> {
    let mut names = vec![format!("redistrib_{version}.json")];
    if version.parts().len() > 3 {
        names.push(format!("redistrib_{}.json", version.truncated(3)));
    }
    names
}

static CUDA_IN_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"_cuda(\d+)(?:\.\d+)*-archive").unwrap());
static CUDA_IN_PRODUCT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"cuda-(\d+)").unwrap());
static CUDA_KEY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^cuda(\d+)$").unwrap());

/// Reads the `cudnn` product of a manifest: its 4-part version and every archive it offers.
/// `base` is the manifest's folder (ending in `/`), `url` the manifest's own URL.
///
/// Errors: [`Error::BadJson`] when there is no `cudnn` product or an artifact lacks fields.
pub fn offers(doc: &Manifest, base: &str, url: &str) -> Result<(String, Vec<Offer>), Error> {
    let bad = |detail: String| Error::BadJson { url: url.into(), detail };
    let product = doc.cudnn.as_ref().ok_or_else(|| bad("no `cudnn` product".into()))?;
    let version = product.version.clone().ok_or_else(|| bad("`cudnn` has no `version`".into()))?;
    let product_cuda = doc.release_product.as_deref().and_then(|p| CUDA_IN_PRODUCT.captures(p)).and_then(|c| c[1].parse().ok());
    let artifact = |where_: &str, a: &Value| -> Result<Artifact, Error> {
        let a = RawArtifact::deserialize(a).unwrap_or_default();
        let missing = |k: &str| bad(format!("`cudnn.{where_}` has no `{k}`"));
        let rel = a.relative_path.as_deref().ok_or_else(|| missing("relative_path"))?;
        if rel.starts_with('/') || rel.contains("://") || rel.split('/').any(|s| s == "..") {
            return Err(bad(format!("`cudnn.{where_}.relative_path` `{rel}` leaves the redist folder")));
        }
        let sha256: Sha256 =
            a.sha256.as_deref().ok_or_else(|| missing("sha256"))?.parse().map_err(|_| bad(format!("`cudnn.{where_}.sha256` is not a SHA-256")))?;
        let size = match &a.size {
            Some(Size::Text(s)) => Some(s.trim().parse::<u64>().map_err(|_| bad(format!("`cudnn.{where_}.size` `{s}` is not a number")))?),
            Some(Size::Number(n)) => Some(*n),
            None => None,
        };
        let full = super::pypi::join_url(base, rel);
        Ok(Artifact { file_name: file_name_of(&full), url: full, sha256, size, version: version.clone() })
    };
    let mut out = Vec::new();
    for (key, value) in &product.platforms {
        let Some(obj) = value.as_object() else { continue };
        if obj.contains_key("relative_path") {
            let a = artifact(key, value)?;
            let cuda = CUDA_IN_NAME.captures(&a.file_name).and_then(|c| c[1].parse().ok()).or(product_cuda);
            out.push(Offer { platform: key.clone(), cuda, artifact: a });
        } else {
            for (variant, a) in obj {
                let Some(cuda) = CUDA_KEY.captures(variant).and_then(|c| c[1].parse().ok()) else { continue };
                if a.is_object() {
                    out.push(Offer { platform: key.clone(), cuda: Some(cuda), artifact: artifact(&format!("{key}.{variant}"), a)? });
                }
            }
        }
    }
    Ok((version, out))
}

/// Finds the archive of cuDNN `version` for `platform` and CUDA `cuda` under `base`
/// (a redist folder ending in `/`). `what` names the request for the offline error.
///
/// Errors: [`Error::Offline`]; [`Error::NoManifest`] when no manifest name exists;
/// [`Error::ManifestVersion`] when a manifest names another release; [`Error::NoArtifact`]
/// listing what the manifests offer; HTTP and JSON errors.
pub fn resolve(client: &Client, base: &str, version: &Version, cuda: u64, platform: Platform, what: &str) -> Result<Artifact, Error> {
    let mut tried = Vec::new();
    let mut offered = BTreeSet::new();
    let mut found_any = false;
    for name in manifest_names(version) {
        let url = super::pypi::join_url(base, &name);
        tried.push(name);
        let Some(doc) = client.get_json::<Manifest>(&url, what)? else { continue };
        found_any = true;
        let (found, list) = offers(&doc, base, &url)?;
        if !found.parse::<Version>().is_ok_and(|f| f.starts_with(version)) {
            return Err(Error::ManifestVersion { url, wanted: version.to_string(), found });
        }
        if let Some(o) = list.iter().find(|o| o.platform == platform.as_str() && o.cuda.is_none_or(|c| c == cuda)) {
            return Ok(o.artifact.clone());
        }
        offered.extend(list.iter().map(Offer::label));
    }
    if !found_any {
        return Err(Error::NoManifest { version: version.to_string(), base: base.into(), tried });
    }
    Err(Error::NoArtifact { version: version.to_string(), platform, cuda, base: base.into(), offered: offered.into_iter().collect() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `json!`, read as a [`Manifest`].
    macro_rules! json {
        ($($t:tt)*) => {
            serde_json::from_value::<Manifest>(serde_json::json!($($t)*)).unwrap()
        };
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const BASE: &str = "https://m.example/redist/";

    fn art(rel: &str, sha: &str, size: &str) -> Value {
        serde_json::json!({"relative_path": rel, "sha256": sha, "md5": "x", "size": size})
    }

    #[test]
    fn names() {
        assert_eq!(manifest_names(&"9.5.0.50".parse().unwrap()), vec!["redistrib_9.5.0.50.json", "redistrib_9.5.0.json"]);
        assert_eq!(manifest_names(&"9.5.0".parse().unwrap()), vec!["redistrib_9.5.0.json"]);
    }

    #[test]
    fn shape_85_flat() {
        let doc = json!({"release_date": "2022-08-04", "cudnn": {"name": "cuDNN", "license": "cudnn", "version": "8.5.0.96",
            "linux-x86_64": art("cudnn/linux-x86_64/cudnn-linux-x86_64-8.5.0.96_cuda11-archive.tar.xz", A, "1000"),
            "windows-x86_64": art("cudnn/windows-x86_64/cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip", B, "2000")}});
        let (v, list) = offers(&doc, BASE, "u").unwrap();
        assert_eq!(v, "8.5.0.96");
        let labels: Vec<String> = list.iter().map(Offer::label).collect();
        assert_eq!(labels, vec!["linux-x86_64/cuda11", "windows-x86_64/cuda11"]);
        assert_eq!(list[1].artifact.url, "https://m.example/redist/cudnn/windows-x86_64/cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip");
        assert_eq!(list[1].artifact.file_name, "cudnn-windows-x86_64-8.5.0.96_cuda11-archive.zip");
        assert_eq!(list[1].artifact.size, Some(2000));
        assert_eq!(list[1].artifact.sha256.to_string(), B);
    }

    #[test]
    fn shape_83_dotted_cuda() {
        let doc =
            json!({"cudnn": {"version": "8.3.2.44", "linux-x86_64": art("cudnn/linux-x86_64/cudnn-linux-x86_64-8.3.2.44_cuda11.5-archive.tar.xz", A, "1")}});
        let (_, list) = offers(&doc, BASE, "u").unwrap();
        assert_eq!(list[0].cuda, Some(11));
    }

    #[test]
    fn shape_89_one_major_per_file() {
        let doc = json!({"release_product": "cudnn-v8-9-cuda-12", "cudnn": {"version": "8.9.4.25",
            "linux-x86_64": art("cudnn/linux-x86_64/oddly-named.tar.xz", A, "5")}});
        let (_, list) = offers(&doc, BASE, "u").unwrap();
        assert_eq!(list[0].label(), "linux-x86_64/cuda12");
    }

    #[test]
    fn shape_9x_nested() {
        let doc = json!({"release_product": "cudnn", "cudnn": {"version": "9.8.0.87", "cuda_variant": ["11", "12"],
            "windows-x86_64": {"cuda11": art("cudnn/w/cudnn-windows-x86_64-9.8.0.87_cuda11-archive.zip", A, "1"),
                               "cuda12": art("cudnn/w/cudnn-windows-x86_64-9.8.0.87_cuda12-archive.zip", "D8A23705E3884B137B7E05449FB2B61BFA524E7CFC3FDA80743D633F423C6CE4", "675349654")}},
            "cudnn_samples": {"version": "9.8.0.87", "source": art("s.tar.xz", A, "1")}});
        let (_, list) = offers(&doc, BASE, "u").unwrap();
        assert_eq!(list.len(), 2);
        let o = list.iter().find(|o| o.cuda == Some(12)).unwrap();
        assert_eq!(o.artifact.sha256.to_string(), "d8a23705e3884b137b7e05449fb2b61bfa524e7cfc3fda80743d633f423c6ce4");
        assert_eq!(o.artifact.size, Some(675349654));
    }

    #[test]
    fn bad_artifacts() {
        let doc = json!({"cudnn": {"version": "9.1.0.1", "linux-x86_64": {"cuda12": {"relative_path": "../../x.tar.xz", "sha256": A, "size": "1"}}}});
        let e = offers(&doc, BASE, "https://m/redistrib_9.1.0.json").unwrap_err();
        assert_eq!(
            e.to_string(),
            "https://m/redistrib_9.1.0.json: not the expected JSON: `cudnn.linux-x86_64.cuda12.relative_path` `../../x.tar.xz` leaves the redist folder"
        );
        let doc = json!({"cudnn": {"version": "9.1.0.1", "linux-x86_64": art("x.tar.xz", A, "big")}});
        assert!(offers(&doc, BASE, "u").unwrap_err().to_string().contains("`cudnn.linux-x86_64.size` `big` is not a number"));
        assert!(offers(&json!({"cuda": {}}), BASE, "u").unwrap_err().to_string().contains("no `cudnn` product"));
    }
}
