//! How `lab.lock` spells toolkit roots inside the cuenv home: `${CUENV_HOME}/a/b`, always
//! with `/`, so a lock travels between machines and platforms. Pure; read by the resolve
//! stage ([`super::desire`]) and written by the record stage ([`super::record`]).

use std::path::{Path, PathBuf};

/// How a path inside the cuenv home is written in `lab.lock`.
pub const HOME_TOKEN: &str = "${CUENV_HOME}";

/// `path` inside `home` as `${CUENV_HOME}/a/b` (always `/`, so a lock written on Windows reads
/// the same on Linux); `None` for a path outside `home`.
pub fn to_home_token(path: &Path, home: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(home).ok()?;
    let parts: Vec<String> = rest.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Some(PathBuf::from(format!("{HOME_TOKEN}/{}", parts.join("/"))))
}

/// The inverse of [`to_home_token`]: `${CUENV_HOME}/a/b` (or `${CUENV_HOME}\a\b`) under
/// `home`; `None` for a path that does not start with the token.
pub fn from_home_token(path: &Path, home: &Path) -> Option<PathBuf> {
    let text = path.to_string_lossy();
    let rest = text.strip_prefix(HOME_TOKEN)?;
    if !(rest.is_empty() || rest.starts_with(['/', '\\'])) {
        return None;
    }
    Some(rest.split(['/', '\\']).filter(|c| !c.is_empty()).fold(home.to_path_buf(), |acc, c| acc.join(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_token_round_trips_with_forward_slashes_on_every_platform() {
        let home = std::env::temp_dir().join("cuenv home ü");
        let root = home.join("toolkits").join("cuda-12.6.77-linux-x86_64-efd7971adb22");
        let t = to_home_token(&root, &home).unwrap();
        // As text: on Windows `PathBuf ==` would also take `\` for `/`.
        assert_eq!(t.to_str(), Some("${CUENV_HOME}/toolkits/cuda-12.6.77-linux-x86_64-efd7971adb22"));
        assert_eq!(from_home_token(&t, &home).unwrap(), root);
        // Written by an older cuenv on Windows.
        let back = PathBuf::from(r"${CUENV_HOME}\toolkits\cuda-12.6.77-linux-x86_64-efd7971adb22");
        assert_eq!(from_home_token(&back, &home).unwrap(), root);
        assert_eq!(to_home_token(Path::new("/usr/local/cuda-12.6"), &home), None);
        assert_eq!(from_home_token(Path::new("/usr/local/cuda-12.6"), &home), None);
        assert_eq!(from_home_token(Path::new("${CUENV_HOME}x/y"), &home), None);
    }
}
