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
//!
//! Names are also bounded and plain: valid UTF-8 ([`name_from_bytes`]), no control character
//! (C0, DEL, C1: a name is printed, and a terminal would run an escape sequence), at most
//! [`MAX_COMPONENT_BYTES`] per component, [`MAX_DEPTH`] components and [`MAX_NAME_BYTES`] in
//! all, so an overlong name is refused here, naming the rule, before the file system refuses
//! it. Symlinks may not form loops: a chain of links ends within [`MAX_LINK_HOPS`], and no
//! folder symlink leads back above itself ([`folder_link_cycle`]). Any name from outside that
//! cuenv prints goes through [`escape`] / [`escape_bytes`] / [`shown`].

use std::collections::{BTreeMap, HashMap};

/// The longest file or folder name accepted in a member path, in bytes (`NAME_MAX` on Linux;
/// 255 UTF-16 units on NTFS).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// The most components a member path may have. Real releases nest at most 6 deep
/// (`CUDNN/v9.5/bin/12.6/x64/cudnn64_9.dll`).
pub const MAX_DEPTH: usize = 64;
/// The longest member path accepted, in bytes (real ones are under 200), leaving room for the
/// home and staging folders under Linux's 4096-byte `PATH_MAX`.
pub const MAX_NAME_BYTES: usize = 1024;
/// The most symlinks a chain may follow (Linux's own bound before `ELOOP`).
pub const MAX_LINK_HOPS: usize = 40;

/// True for a character a name must not hold because a terminal would act on it: controls
/// (C0, DEL, C1) and the bidirectional overrides that reorder what is shown.
fn is_unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character and bidirectional override written as an escape
/// (`\n`, `\u{1b}`), so printing it never runs a terminal escape sequence. Other text,
/// backslashes included, is unchanged.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Like [`escape`] for bytes that need not be UTF-8: each byte of an invalid sequence is
/// written `\xNN`.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::new();
    for chunk in b.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// [`escape`], and a name over 300 characters shortened to its start and end with its length,
/// for error messages.
pub fn shown(s: &str) -> String {
    let e = escape(s);
    let n = e.chars().count();
    if n <= 300 {
        return e;
    }
    let head: String = e.chars().take(120).collect();
    let tail: String = e.chars().skip(n - 60).collect();
    format!("{head}...{tail} ({} bytes)", s.len())
}

/// The UTF-8 text of a raw member name or link target.
///
/// Errors: the bytes are not UTF-8 (a name stored in another encoding would be stored
/// mangled); the rule names the first bad byte.
pub fn name_from_bytes(raw: &[u8]) -> Result<&str, Refusal> {
    std::str::from_utf8(raw).map_err(|e| {
        let at = e.valid_up_to();
        Refusal(format!("it is not valid UTF-8 (byte 0x{:02x} at offset {at}); names must be UTF-8", raw[at]))
    })
}

fn control_refusal(s: &str, what: &str) -> Option<Refusal> {
    let c = s.chars().find(|c| is_unsafe_char(*c))?;
    Some(Refusal(format!("{what} contains the control character U+{:04X}; names must be printable", c as u32)))
}

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
    if let Some(r) = control_refusal(name, "it") {
        return Err(r);
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
            c if c.len() > MAX_COMPONENT_BYTES => {
                return Err(Refusal(format!("a component is {} bytes long, over the bound of {MAX_COMPONENT_BYTES} bytes for a file name", c.len())));
            }
            c => parts.push(c),
        }
    }
    if parts.len() > MAX_DEPTH {
        return Err(Refusal(format!("it is {} components deep, over the bound of {MAX_DEPTH}", parts.len())));
    }
    let path = parts.join("/");
    if path.len() > MAX_NAME_BYTES {
        return Err(Refusal(format!("it is {} bytes long, over the bound of {MAX_NAME_BYTES} bytes for a member path", path.len())));
    }
    Ok(path)
}

/// Resolves a symlink `target` stored at `link` (both relative to the entry root, `/`
/// separators) lexically, and returns the normalized target path inside the entry.
///
/// Errors: the target is absolute, or climbs above the entry root with `..`.
pub fn resolve_symlink(link: &str, target: &str) -> Result<String, Refusal> {
    if target.is_empty() {
        return Err(Refusal("the symlink target is empty".into()));
    }
    if let Some(r) = control_refusal(target, "the symlink target") {
        return Err(r);
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

/// A loop among folder symlinks: `links` holds (link path, the folder its chain ends at;
/// `""` for the entry root). Following a link leads into its folder, and from there to any
/// link below it; returns the links of one cycle, in order, or `None`.
///
/// A link to a folder that holds the link itself (`lib/up -> .`) is a cycle of one. The walk
/// goes down the folder tree one level at a time, so it costs the total depth of the paths.
pub fn folder_link_cycle(links: &[(String, String)]) -> Option<Vec<String>> {
    // Nodes: folders ("d" + path) and links ("l" + path). Edges: a folder to each sub-folder
    // and link directly in it (on the way to some link), a link to its target folder.
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    for (link, target) in links {
        let mut parent = "d".to_string();
        let mut end = 0;
        while let Some(i) = link[end..].find('/') {
            end += i;
            let child = format!("d{}", &link[..end]);
            edges.entry(parent).or_default().push(child.clone());
            parent = child;
            end += 1;
        }
        edges.entry(parent).or_default().push(format!("l{link}"));
        edges.entry(format!("l{link}")).or_default().push(format!("d{target}"));
    }
    for v in edges.values_mut() {
        v.sort();
        v.dedup();
    }
    // Iterative depth-first search; `on_stack` holds the current path.
    let mut done: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut starts: Vec<&String> = edges.keys().collect();
    starts.sort();
    for start in starts {
        if done.contains(start.as_str()) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
        let mut on_stack: HashMap<&str, usize> = HashMap::from([(start.as_str(), 0)]);
        while let Some((node, next)) = stack.last_mut() {
            let node: &str = node;
            let succ = edges.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if *next < succ.len() {
                let s = succ[*next].as_str();
                *next += 1;
                if let Some(&at) = on_stack.get(s) {
                    let cycle = stack[at..].iter().filter_map(|(n, _)| n.strip_prefix('l')).map(str::to_string).collect();
                    return Some(cycle);
                }
                if !done.contains(s) {
                    on_stack.insert(s, stack.len());
                    stack.push((s, 0));
                }
            } else {
                on_stack.remove(node);
                done.insert(node);
                stack.pop();
            }
        }
    }
    None
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

    /// The kind `path` was claimed as (folders also for parents of claimed paths).
    pub fn get(&self, path: &str) -> Option<Kind> {
        self.seen.get(path).copied()
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
    fn refuses_controls_and_overlong_names() {
        for bad in ["a\x1b[2Jb", "a\nb", "a\x07", "a\u{7f}", "a\u{9b}31m", "a\u{202e}txt.exe"] {
            assert!(normalize(bad).unwrap_err().0.contains("control character"), "{bad:?} accepted");
        }
        assert!(normalize(&"a".repeat(256)).unwrap_err().0.contains("256 bytes long, over the bound of 255"));
        assert!(normalize(&"a".repeat(255)).is_ok());
        assert!(normalize(&"a/".repeat(65)).unwrap_err().0.contains("65 components deep"));
        assert!(normalize(&format!("{}/", "d".repeat(99)).repeat(11)).unwrap_err().0.contains("1099 bytes long"));
        assert!(resolve_symlink("lib/a", "b\x1b]0;x\x07").unwrap_err().0.contains("U+001B"));
        assert!(name_from_bytes(b"ok\xffno").unwrap_err().0.contains("byte 0xff at offset 2"));
    }

    #[test]
    fn escapes_what_a_terminal_would_run() {
        assert_eq!(escape("bin/\x1b]0;pwned\x07x\n\u{9b}\u{7f}\u{202e}.dll"), "bin/\\u{1b}]0;pwned\\u{7}x\\n\\u{9b}\\u{7f}\\u{202e}.dll");
        assert_eq!(escape("C:\\x\\é.dll"), "C:\\x\\é.dll");
        assert_eq!(escape_bytes(b"a\xff\xfe\x1bb"), "a\\xff\\xfe\\u{1b}b");
        let long = shown(&"a".repeat(1000));
        assert!(long.ends_with("... (1000 bytes)") || long.contains("(1000 bytes)"), "{long}");
        assert!(long.len() < 200);
    }

    #[test]
    fn folder_link_loops() {
        let l = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
        assert_eq!(folder_link_cycle(&l(&[("lib/up", "lib")])), Some(vec!["lib/up".to_string()]));
        assert_eq!(folder_link_cycle(&l(&[("lib/root", "")])), Some(vec!["lib/root".to_string()]));
        let c = folder_link_cycle(&l(&[("lib/x/l1", "lib/y"), ("lib/y/l2", "lib/x")])).unwrap();
        assert_eq!(c.len(), 2, "{c:?}");
        // A link to a sibling folder, or a folder link under its own target's sibling, is fine.
        assert_eq!(folder_link_cycle(&l(&[("lib/inc", "include"), ("include/l", "share")])), None);
        assert_eq!(folder_link_cycle(&l(&[("a/l", "b"), ("b/m", "c")])), None);
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
