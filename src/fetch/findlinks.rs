//! A local wheel folder as a source for `from = "pypi"` (pip's `--find-links DIR`): an
//! air-gapped lab copies the wheels in by hand (`pip download --no-deps --only-binary=:all:
//! nvidia-cudnn-cu12==9.5.0.50 ...` on a machine with network access) and names the folder
//! with `CUENV_FIND_LINKS` or `[settings] find-links`.
//!
//! A wheel is found by its file name (PEP 427: `<distribution>-<version>-<python>-<abi>-
//! <platform>.whl`, the distribution with `-` as `_`, compared case-insensitively) and
//! platform tag ([`super::pypi::wheel_fits`]); a version of fewer than 4 parts picks the
//! newest file starting with it. Its SHA-256 is computed from the file (the index's digest
//! is not there to compare with; a `lab.lock` pin still must match), and its URL is
//! `file://<absolute path>`: [`copy_local`] stands in for the download, hashing as it copies.
//!
//! Reads only the folder and the chosen file; never touches the network.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::{Artifact, Error, http};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::sys::sha256::Sha256;

/// What the folder holds of one project.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The wheel of the version asked for, for the platform.
    Wheel(Artifact),
    /// Wheels of the project, but none of that version for the platform (the versions it has).
    OtherVersions(Vec<String>),
    /// No wheel of the project at all.
    Nothing,
}

/// PEP 503 / 427 normalization for comparing distribution names: lowercase, runs of `-`,
/// `_` and `.` as one `_`.
fn normalize(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Looks for `project`'s wheel at `version` (or the newest starting with it, for fewer than
/// 4 parts) for `platform` in `dir`.
///
/// Errors: [`Error::Write`] naming `dir` when it cannot be read (it must exist: a wrong path
/// must not fall back to the network unnoticed), or the chosen file cannot be hashed.
pub fn find(dir: &Path, project: &str, version: &str, platform: Platform) -> Result<Found, Error> {
    let unreadable = |source| Error::Write { path: dir.to_path_buf(), source };
    let want = normalize(project);
    let mut versions = Vec::new();
    let mut fitting: Vec<(Version, String, PathBuf)> = Vec::new();
    for e in fs::read_dir(dir).map_err(unreadable)? {
        let e = e.map_err(unreadable)?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".whl") else { continue };
        let mut parts = stem.splitn(3, '-');
        let (Some(dist), Some(v)) = (parts.next(), parts.next()) else { continue };
        if normalize(dist) != want {
            continue;
        }
        versions.push(v.to_string());
        let exact = v == version;
        let prefix = version.parse::<Version>().ok().filter(|p| p.parts().len() < 4);
        let by_prefix = || prefix.as_ref().zip(v.parse::<Version>().ok()).is_some_and(|(p, got)| got.starts_with(p));
        if (exact || by_prefix()) && super::pypi::wheel_fits(&name, platform) {
            fitting.push((v.parse().unwrap_or_else(|_| Version::new(&[0])), v.to_string(), e.path()));
        }
    }
    let Some((_, exact, path)) = fitting.into_iter().max_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2))) else {
        versions.sort();
        versions.dedup();
        return Ok(if versions.is_empty() { Found::Nothing } else { Found::OtherVersions(versions) });
    };
    let (size, sha256) = crate::store::extract::hash_file(&path).map_err(|source| Error::Write { path: path.clone(), source })?;
    let abs = std::path::absolute(&path).unwrap_or(path.clone());
    let file_name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    Ok(Found::Wheel(Artifact { url: file_url(&abs), file_name, sha256, size: Some(size), version: exact }))
}

/// `file://` + the path, `/` separated (`file:///C:/wheels/x.whl` on Windows).
pub fn file_url(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    if s.starts_with('/') { format!("file://{s}") } else { format!("file:///{s}") }
}

/// The path of a `file://` URL made by [`file_url`]; `None` for any other URL.
pub fn local_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("file://")?;
    // `file:///C:/x` -> `C:/x`; `file:///home/x` -> `/home/x`.
    let windows_drive = rest.len() > 3 && rest.as_bytes()[0] == b'/' && rest.as_bytes()[2] == b':';
    Some(PathBuf::from(if windows_drive { &rest[1..] } else { rest }))
}

/// Copies the local file of `url` (a `file://` URL) to `dest`, hashing as it copies, and
/// checks `expect` (size, SHA-256) like a download; on a mismatch `dest` is removed.
///
/// Errors: [`Error::NotFound`] when the file is gone; [`Error::Write`]; [`Error::SizeMismatch`],
/// [`Error::Sha256Mismatch`].
pub fn copy_local(url: &str, dest: &Path, expect: &http::Expect) -> Result<http::Got, Error> {
    let src = local_path(url).ok_or_else(|| Error::NotFound { url: url.into() })?;
    let mut input = fs::File::open(&src).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { url: url.into() },
        _ => Error::Write { path: src.clone(), source: e },
    })?;
    let write_err = |source| Error::Write { path: dest.to_path_buf(), source };
    let mut out = fs::File::create(dest).map_err(write_err)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(|source| Error::Write { path: src.clone(), source })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(write_err)?;
        size += n as u64;
    }
    out.sync_all().map_err(write_err)?;
    drop(out);
    let sha256 = Sha256::finish(h);
    let fail = |e: Error| {
        let _ = fs::remove_file(dest);
        Err(e)
    };
    if let Some(want) = expect.size.filter(|w| *w != size) {
        return fail(Error::SizeMismatch { url: url.into(), expected: want, actual: size });
    }
    if let Some(want) = expect.sha256.filter(|w| *w != sha256) {
        return fail(Error::Sha256Mismatch { url: url.into(), expected: want, actual: sha256 });
    }
    Ok(http::Got { size, sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_normalized_name_version_prefix_and_platform() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl",
            "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl",
            "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl",
            "nvidia_cublas_cu11-11.11.3.6-py3-none-manylinux1_x86_64.whl",
            "README.txt",
        ] {
            fs::write(dir.path().join(name), name).unwrap();
        }
        let Found::Wheel(a) = find(dir.path(), "nvidia-cudnn-cu12", "9.5", Platform::LinuxX86_64).unwrap() else { panic!() };
        assert_eq!((a.version.as_str(), a.file_name.as_str()), ("9.5.0.50", "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl"));
        assert_eq!(a.sha256, Sha256::of(a.file_name.as_bytes()));
        assert_eq!(local_path(&a.url).unwrap(), std::path::absolute(dir.path().join(&a.file_name)).unwrap());
        assert!(matches!(find(dir.path(), "NVIDIA_cudnn-cu12", "9.5.0.50", Platform::WindowsX86_64).unwrap(), Found::Wheel(_)));
        assert_eq!(
            find(dir.path(), "nvidia-cudnn-cu12", "9.6", Platform::LinuxX86_64).unwrap(),
            Found::OtherVersions(vec!["9.1.0.70".into(), "9.5.0.50".into()])
        );
        assert_eq!(find(dir.path(), "nvidia-cublas-cu11", "11.8", Platform::LinuxX86_64).unwrap(), Found::OtherVersions(vec!["11.11.3.6".into()]));
        assert_eq!(find(dir.path(), "nvidia-cuda-nvrtc-cu11", "11.8", Platform::LinuxX86_64).unwrap(), Found::Nothing);
        assert!(find(&dir.path().join("nope"), "x", "1", Platform::LinuxX86_64).is_err());
    }

    #[test]
    fn copies_and_checks_like_a_download() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a b.whl");
        fs::write(&src, b"wheel bytes").unwrap();
        let url = file_url(&std::path::absolute(&src).unwrap());
        let dest = dir.path().join("copy.whl");
        let sha = Sha256::of(b"wheel bytes");
        let got = copy_local(&url, &dest, &http::Expect { size: Some(11), sha256: Some(sha) }).unwrap();
        assert_eq!((got.size, got.sha256), (11, sha));
        assert_eq!(fs::read(&dest).unwrap(), b"wheel bytes");
        let e = copy_local(&url, &dest, &http::Expect { size: None, sha256: Some("00".repeat(32).parse().unwrap()) }).unwrap_err();
        assert!(matches!(e, Error::Sha256Mismatch { .. }), "{e}");
        assert!(!dest.exists());
        assert!(matches!(copy_local(&file_url(&dir.path().join("gone.whl")), &dest, &http::Expect { size: None, sha256: None }), Err(Error::NotFound { .. })));
    }
}
