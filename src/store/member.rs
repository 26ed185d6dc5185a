//! Validation of archive member names and symlink targets, before anything is written.
//!
//! Every name inside an archive is untrusted. A member is accepted only as a relative
//! path of plain components: no `..`, no absolute path, no drive letter (`C:`), no UNC
//! prefix (`\\server\share`), no NUL, no `:` (an NTFS alternate data stream). `\` is read
//! as a separator, as Windows would. Two names equal except for case are refused, since
//! they collide on Windows (NTFS is case-insensitive by default). Symlinks must resolve,
//! lexically, to a place inside the entry.
//!
//! Lexical resolution matches what the file system does only when no link is followed on
//! the way: `l1/..` is `.` lexically, but the parent of `l1`'s target on disk. So a path may
//! not pass through a symlink: no member lies under a symlink member ([`PathIndex`]), and a
//! symlink target goes through no other symlink before its last component
//! ([`resolve_symlink_within`]). Together these keep every write and every published link
//! inside the tree.

use std::collections::{BTreeMap, HashMap};

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

/// Like [`resolve_symlink`], also refusing a target that goes through a symlink
/// (`is_symlink` says which paths are symlink members) before its last component.
pub fn resolve_symlink_within(link: &str, target: &str, is_symlink: impl Fn(&str) -> bool) -> Result<String, Refusal> {
    let resolved = resolve_symlink(link, target)?;
    let mut stack: Vec<&str> = link.split('/').collect();
    stack.pop();
    let comps: Vec<&str> = target.split(['/', '\\']).filter(|c| !c.is_empty() && *c != ".").collect();
    for (i, comp) in comps.iter().enumerate() {
        if *comp == ".." {
            stack.pop();
            continue;
        }
        stack.push(comp);
        let prefix = stack.join("/");
        if i + 1 < comps.len() && is_symlink(&prefix) {
            return Err(Refusal(format!("the symlink target `{target}` goes through the symlink `{prefix}`")));
        }
    }
    Ok(resolved)
}

/// What a member is, for [`PathIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

/// Every accepted path with its kind (parents recorded as folders), to refuse a name used
/// twice (folders may repeat) and a member under a file or a symlink.
#[derive(Debug, Default)]
pub struct PathIndex {
    seen: BTreeMap<String, Kind>,
}

impl PathIndex {
    /// Records the normalized `path` as `kind`, and its parents as folders.
    ///
    /// Errors: the rule broken: the path was already taken (by anything but a folder, for a
    /// folder), it lies under a file or symlink member, or (file, symlink) an earlier member
    /// lies under it.
    pub fn claim(&mut self, path: &str, kind: Kind) -> Result<(), Refusal> {
        match self.seen.get(path) {
            Some(Kind::Dir) if kind == Kind::Dir => return Ok(()),
            Some(Kind::Dir) => return Err(Refusal("a folder of the same name holds other members".into())),
            Some(_) => return Err(Refusal("another member has the same name".into())),
            None => {}
        }
        let mut end = 0;
        while let Some(i) = path[end..].find('/') {
            end += i;
            match self.seen.get(&path[..end]) {
                Some(Kind::Symlink) => return Err(Refusal(format!("it lies under the symlink `{}`; nothing may be extracted through a link", &path[..end]))),
                Some(Kind::File) => return Err(Refusal(format!("it lies under `{}`, which is a file", &path[..end]))),
                _ => {}
            }
            end += 1;
        }
        if kind != Kind::Dir {
            let prefix = format!("{path}/");
            if let Some(below) = self.seen.range(prefix.clone()..).next().map(|(k, _)| k).filter(|k| k.starts_with(&prefix)) {
                return Err(Refusal(format!("`{below}` lies under it, but it is not a folder")));
            }
        }
        let mut end = 0;
        while let Some(i) = path[end..].find('/') {
            end += i;
            self.seen.entry(path[..end].to_string()).or_insert(Kind::Dir);
            end += 1;
        }
        self.seen.insert(path.to_string(), kind);
        Ok(())
    }

    /// True when `path` was claimed as a symlink.
    pub fn is_symlink(&self, path: &str) -> bool {
        self.seen.get(path) == Some(&Kind::Symlink)
    }

    /// True when `path` was claimed (or is a parent of a claimed path).
    pub fn contains(&self, path: &str) -> bool {
        self.seen.contains_key(path)
    }
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
    fn symlinks_do_not_go_through_symlinks() {
        let links = |p: &str| p == "lib/a/b/l1";
        // `l1/..` is `lib/a/b` lexically, but the parent of l1's target on disk.
        let err = resolve_symlink_within("lib/a/b/l2", "l1/../../x", links).unwrap_err();
        assert!(err.0.contains("goes through the symlink `lib/a/b/l1`"), "{}", err.0);
        // Pointing at a symlink (a chain) is fine.
        assert_eq!(resolve_symlink_within("lib/a/b/l2", "l1", links).unwrap(), "lib/a/b/l1");
        assert_eq!(resolve_symlink_within("lib/libcudnn.so", "libcudnn.so.9", links).unwrap(), "lib/libcudnn.so.9");
    }

    #[test]
    fn path_index() {
        let mut idx = PathIndex::default();
        idx.claim("lib/l1", Kind::Symlink).unwrap();
        assert!(idx.claim("lib/l1/x", Kind::File).unwrap_err().0.contains("under the symlink `lib/l1`"));
        idx.claim("lib/f", Kind::File).unwrap();
        assert!(idx.claim("lib/f", Kind::File).unwrap_err().0.contains("same name"));
        assert!(idx.claim("lib/f/x", Kind::Dir).unwrap_err().0.contains("which is a file"));
        idx.claim("lib", Kind::Dir).unwrap(); // folders may repeat
        idx.claim("inc/x.h", Kind::File).unwrap();
        assert!(idx.claim("inc", Kind::Symlink).unwrap_err().0.contains("a folder of the same name"));
        idx.claim("lib/g", Kind::Symlink).unwrap();
        assert!(idx.claim("lib/g", Kind::File).unwrap_err().0.contains("same name"));
        assert!(idx.is_symlink("lib/l1") && !idx.is_symlink("lib/f") && idx.contains("inc"));
    }

    #[test]
    fn case_collisions() {
        let mut idx = CaseIndex::default();
        assert_eq!(idx.insert("bin/A.dll"), None);
        assert_eq!(idx.insert("bin/A.dll"), None);
        assert_eq!(idx.insert("bin/a.dll").as_deref(), Some("bin/A.dll"));
    }
}
