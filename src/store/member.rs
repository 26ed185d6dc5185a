//! Validation of archive member names and symlink targets, before anything is written.
//!
//! Every name inside an archive is untrusted. A member is accepted only as a relative
//! path of plain components: no `..`, no absolute path, no drive letter (`C:`), no UNC
//! prefix (`\\server\share`), no NUL, no `:` (an NTFS alternate data stream). `\` is read
//! as a separator, as Windows would. Two names equal except for case are refused, since
//! they collide on Windows (NTFS is case-insensitive by default). Symlinks must resolve,
//! lexically, to a place inside the entry.

use std::collections::HashMap;

/// Why a member name or symlink target was refused. The `String` is the rule broken,
/// in words, for the error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Turns an archive member name into a normalized relative path with `/` separators
/// (`bin\x64\a.dll` -> `bin/x64/a.dll`), dropping `.` and empty components.
///
/// Errors: the rule the name breaks. An empty result (the name was only `.` or `/`s that
/// are not leading) is returned as `Ok("")`, meaning the archive root.
pub fn normalize(name: &str) -> Result<String, Refusal> {
    if name.contains('\0') {
        return Err(Refusal("it contains a NUL character".into()));
    }
    if name.starts_with("\\\\") || name.starts_with("//") {
        return Err(Refusal("it is a UNC path (\\\\server\\share)".into()));
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Err(Refusal("it is an absolute path".into()));
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(Refusal("it starts with a drive letter".into()));
    }
    let mut parts = Vec::new();
    for comp in name.split(['/', '\\']) {
        match comp {
            "" | "." => continue,
            ".." => return Err(Refusal("it has a `..` component".into())),
            c if c.contains(':') => {
                return Err(Refusal("a component contains `:` (an NTFS alternate data stream or drive)".into()));
            }
            c => parts.push(c),
        }
    }
    Ok(parts.join("/"))
}

/// Resolves a symlink `target` stored at `link` (both relative to the entry root, `/`
/// separators) lexically, and returns the normalized target path inside the entry.
///
/// Errors: the target is absolute, or climbs above the entry root with `..`.
pub fn resolve_symlink(link: &str, target: &str) -> Result<String, Refusal> {
    if target.is_empty() {
        return Err(Refusal("the symlink target is empty".into()));
    }
    if target.starts_with('/') || target.starts_with('\\') || target.as_bytes().get(1) == Some(&b':') {
        return Err(Refusal(format!("the symlink points to an absolute path `{target}`, outside the entry")));
    }
    let mut stack: Vec<&str> = link.split('/').collect();
    stack.pop(); // the link's own name
    for comp in target.split(['/', '\\']) {
        match comp {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() {
                    return Err(Refusal(format!("the symlink target `{target}` points outside the entry")));
                }
            }
            c => stack.push(c),
        }
    }
    Ok(stack.join("/"))
}

/// Remembers every accepted path, case-folded, to find two names that differ only by case.
#[derive(Default)]
pub struct CaseIndex {
    seen: HashMap<String, String>,
}

impl CaseIndex {
    /// Records `path`. Returns the earlier name it collides with (same letters, other case),
    /// or `None`. The same exact name twice is not a collision (zips may repeat folders).
    pub fn insert(&mut self, path: &str) -> Option<String> {
        let folded = path.to_lowercase();
        match self.seen.get(&folded) {
            Some(prev) if prev != path => Some(prev.clone()),
            Some(_) => None,
            None => {
                self.seen.insert(folded, path.to_string());
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_plain_names() {
        assert_eq!(normalize("a/b/./c.dll").unwrap(), "a/b/c.dll");
        assert_eq!(normalize("bin\\x64\\cudnn64_9.dll").unwrap(), "bin/x64/cudnn64_9.dll");
        assert_eq!(normalize("dir/").unwrap(), "dir");
        assert_eq!(normalize("./").unwrap(), "");
    }

    #[test]
    fn refuses_escapes() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "\\x", "C:/x", "c:x", "\\\\srv\\share\\x", "//srv/x", "a/b:c", "a\0b"] {
            assert!(normalize(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn symlinks_stay_inside() {
        assert_eq!(resolve_symlink("lib/libcudnn.so", "libcudnn.so.9").unwrap(), "lib/libcudnn.so.9");
        assert_eq!(resolve_symlink("lib/a", "../include/x.h").unwrap(), "include/x.h");
        assert!(resolve_symlink("lib/a", "../../etc/passwd").is_err());
        assert!(resolve_symlink("lib/a", "/etc/passwd").is_err());
        assert!(resolve_symlink("a", "").is_err());
    }

    #[test]
    fn case_collisions() {
        let mut idx = CaseIndex::default();
        assert_eq!(idx.insert("bin/A.dll"), None);
        assert_eq!(idx.insert("bin/A.dll"), None);
        assert_eq!(idx.insert("bin/a.dll").as_deref(), Some("bin/A.dll"));
    }
}
