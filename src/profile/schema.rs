//! The JSON Schema of the profile file, shipped as `docs/lab.schema.json` so that editors
//! with a TOML language server (Even Better TOML / taplo) complete and check `lab.toml`
//! keys; `profiles/lab.toml` names it on its first line (`#:schema ../docs/lab.schema.json`).
//!
//! The types below mirror the file as [`super::parse`] reads it (the parser itself works on
//! `toml_edit` spans, not on serde), and exist only to derive the schema with `schemars`.
//! The test [`tests::the_shipped_schema_is_current`] fails when `docs/lab.schema.json` is
//! stale; `CUENV_UPDATE_SCHEMA=1 cargo test --lib schema` rewrites it. Another test checks
//! that the schema names exactly the keys the parser accepts.

use std::collections::BTreeMap;

use schemars::JsonSchema;

/// A cuenv profile file (`lab.toml`): which CUDA runtime and which cuDNN each profile uses.
#[derive(JsonSchema)]
#[schemars(title = "cuenv profile file", deny_unknown_fields)]
#[allow(dead_code)]
struct LabFile {
    /// Settings for the whole file.
    settings: Option<Settings>,
    /// The only toolkit roots the file's profiles choose among (default: what `cuenv
    /// toolkits` finds, and CUDA runtimes fetched from PyPI). Label -> toolkit root, e.g.
    /// `"12.6" = '/usr/local/cuda-12.6'`; the version is read from the root itself.
    toolkits: Option<BTreeMap<String, String>>,
    /// The profiles, by name (at most 64 bytes of `A-Z a-z 0-9 _ . -`).
    profiles: Option<BTreeMap<String, Profile>>,
}

/// `[settings]`.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[allow(dead_code)]
struct Settings {
    /// How views link to toolkit roots and store entries.
    link_mode: Option<LinkMode>,
    /// A PyPI mirror for `from = "pypi"` (`CUENV_PYPI_INDEX` wins).
    pypi_index: Option<String>,
    /// A mirror of NVIDIA's cudnn/redist folder for `from = "nvidia"` (`CUENV_NVIDIA_MIRROR` wins).
    nvidia_mirror: Option<String>,
    /// A folder of wheels asked before the PyPI index, relative to this file
    /// (`CUENV_FIND_LINKS` wins): for labs without network access.
    find_links: Option<String>,
    /// The shells whose conda shims `apply` writes (default: the platform's own).
    shells: Option<Vec<ShellName>>,
}

/// `link-mode`.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum LinkMode {
    /// Junctions on Windows, symbolic links elsewhere; the link-free mode where the home's
    /// file system refuses links.
    Auto,
    /// Directory junctions (Windows only).
    Junction,
    /// Symbolic links (Windows: administrator or Developer Mode).
    Symlink,
    /// No link anywhere: shims name the store entries and toolkit roots themselves, and the
    /// commit point is a pointer file (FAT32/exFAT, network shares, cloud folders, Wine).
    None,
    /// The former name of `none` (copies nothing).
    Copy,
}

/// A shell name, as `cuenv env --shell` takes it.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum ShellName {
    Cmd,
    Powershell,
    Posix,
    Bash,
    Zsh,
    Sh,
    Dash,
    Fish,
    Csh,
    Tcsh,
}

/// `[profiles.NAME]`.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[allow(dead_code)]
struct Profile {
    /// The CUDA toolkit or runtime: a version requirement on an installed toolkit (a prefix
    /// like "12.6", or >=, <, ^, ~, =, *), or a table taking the runtime from PyPI.
    cuda: CudaReq,
    /// The cuDNN: a version requirement on a store entry built for the toolkit's CUDA
    /// major, or a table naming where a missing release comes from.
    cudnn: CudnnReq,
    /// A conda env name (looked up like conda does) or a path: its activation shims are written.
    conda_env: Option<String>,
    /// Instead of conda-env: the folder of a venv, a uv venv, a pixi env or a project folder
    /// holding one (.venv, .pixi/envs/default), relative to this file. No activation shims
    /// are written into it; `cuenv run`, `check` and kernels start in it.
    python_env: Option<String>,
    /// What `apply` checks after building the view.
    check: Option<Check>,
}

/// A version requirement: `"9.5"`, `">=9, <10"`, `"=9.5.0.50"`, `"*"`.
#[derive(JsonSchema)]
#[schemars(transparent)]
#[allow(dead_code)]
struct VersionReq(#[schemars(length(min = 1))] String);

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CudaReq {
    Version(VersionReq),
    Table(CudaTable),
}

/// The CUDA runtime from PyPI wheels (cudart, cuBLAS, NVRTC).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct CudaTable {
    /// The one version to fetch: "12.6" (the newest 12.6.x) or "12.6.77".
    version: VersionReq,
    /// "pypi", or a folder of the runtime's wheels (for labs without network access).
    from: Option<CudaFrom>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CudaFrom {
    One(Pypi),
    /// A folder holding the runtime's wheels (nvidia-cuda-runtime, nvidia-cublas,
    /// nvidia-cuda-nvrtc), relative to this file: `./wheels`.
    Folder(String),
    List(Vec<Pypi>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum Pypi {
    Pypi,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CudnnReq {
    Version(VersionReq),
    Table(CudnnTable),
}

/// A cuDNN release and where it comes from when the store lacks it.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct CudnnTable {
    /// The version: one version ("9.5.0.50", or a prefix like "9.5") when `from` is given.
    version: VersionReq,
    /// "pypi", "nvidia", an http(s) URL (with `sha256`), or the path of an archive, wheel or
    /// folder (relative to this file); or a list of "pypi" / "nvidia" tried in order.
    from: Option<CudnnFrom>,
    /// The SHA-256 of the file (64 hex digits); required for a URL.
    #[schemars(regex(pattern = r"^[0-9A-Fa-f]{64}$"))]
    sha256: Option<String>,
}

#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum CudnnFrom {
    /// "pypi", "nvidia", a URL or a path.
    One(String),
    /// Sources tried in order: the next only when one has no such file.
    List(#[schemars(length(min = 1))] Vec<SourceName>),
}

#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum SourceName {
    Pypi,
    Nvidia,
}

/// `check`.
#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum Check {
    /// Load cuDNN and run a small convolution (the default).
    Conv,
    /// Only load cuDNN and read its version.
    Load,
    /// No check.
    None,
}

/// The schema as it is shipped: pretty JSON with a trailing newline. TOML has no null, so
/// the `null` that schemars allows for an optional key is taken out (an absent key is how
/// TOML leaves one out).
pub fn render() -> String {
    let mut schema = serde_json::to_value(schemars::schema_for!(LabFile)).expect("a schema is JSON");
    drop_null(&mut schema);
    format!("{}\n", serde_json::to_string_pretty(&schema).expect("a schema is JSON"))
}

/// Removes `"null"` from every `type` list and `{"type": "null"}` from every `anyOf`
/// (an `anyOf` left with one schema becomes that schema).
fn drop_null(v: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(o) = v else {
        if let Value::Array(a) = v {
            a.iter_mut().for_each(drop_null);
        }
        return;
    };
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let t = types.remove(0);
            o.insert("type".into(), t);
        }
    }
    if let Some(Value::Array(any)) = o.get_mut("anyOf") {
        any.retain(|s| s.get("type").is_none_or(|t| t != "null"));
        if any.len() == 1 {
            let Value::Object(only) = any.remove(0) else { unreachable!("a subschema is an object") };
            o.remove("anyOf");
            o.extend(only);
        }
    }
    o.values_mut().for_each(drop_null);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const SHIPPED: &str = "docs/lab.schema.json";

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    /// docs/lab.schema.json is what the types above generate (rewrite it with
    /// `CUENV_UPDATE_SCHEMA=1 cargo test --lib schema`).
    #[test]
    fn the_shipped_schema_is_current() {
        let want = render();
        let path = root().join(SHIPPED);
        if std::env::var_os("CUENV_UPDATE_SCHEMA").is_some_and(|v| v == "1") {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default().replace("\r\n", "\n");
        assert!(got == want, "{SHIPPED} is stale: run `CUENV_UPDATE_SCHEMA=1 cargo test --lib schema` and commit it");
    }

    /// The schema names exactly the keys the parser accepts.
    #[test]
    fn the_schema_names_the_keys_the_parser_accepts() {
        let v: serde_json::Value = serde_json::from_str(&render()).unwrap();
        let keys = |ptr: &str| -> Vec<String> {
            let mut k: Vec<String> = v.pointer(ptr).and_then(|o| o.as_object()).unwrap_or_else(|| panic!("{ptr}")).keys().cloned().collect();
            k.sort();
            k
        };
        let sorted = |a: &[&str]| -> Vec<String> {
            let mut k: Vec<String> = a.iter().map(|s| s.to_string()).collect();
            k.sort();
            k
        };
        assert_eq!(keys("/properties"), sorted(&super::super::parser::TOP_KEYS));
        assert_eq!(keys("/$defs/Settings/properties"), sorted(&super::super::parser::SETTINGS_KEYS));
        assert_eq!(keys("/$defs/Profile/properties"), sorted(&super::super::parser::PROFILE_KEYS));
        assert_eq!(keys("/$defs/CudnnTable/properties"), sorted(&super::super::parser::CUDNN_TABLE_KEYS));
        assert_eq!(keys("/$defs/CudaTable/properties"), sorted(&super::super::parser::CUDA_TABLE_KEYS));
    }

    /// The shipped lab file names the schema on its first line (taplo's `#:schema`), and
    /// still parses.
    #[test]
    fn the_shipped_lab_file_names_the_schema() {
        let lab = root().join("profiles/lab.toml");
        let text = std::fs::read_to_string(&lab).unwrap();
        assert_eq!(text.lines().next(), Some("#:schema ../docs/lab.schema.json"));
        assert!(lab.parent().unwrap().join("../docs/lab.schema.json").exists());
        crate::profile::load(&lab).unwrap();
    }
}
