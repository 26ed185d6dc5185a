//! The set of libraries a cuDNN release loads, as its own files name them.
//!
//! cuDNN's dispatcher loads its sub-libraries by name, and the names are in its read-only
//! data; each sub-library names the ones it loads or links against in turn (docs/facts.md §2,
//! read from the real wheels):
//! - 9.x: `libcudnn.so.9` names `libcudnn_graph.so`, `libcudnn_ops.so`, `libcudnn_cnn.so`,
//!   `libcudnn_adv.so` (and `libcudnn_ext.so` from 9.22.0.52), the version appended at run time;
//!   `libcudnn_graph.so.9` names `libcudnn_heuristic.so`, `libcudnn_engines_precompiled.so`,
//!   `libcudnn_engines_runtime_compiled.so` (and `libcudnn_engines_tensor_ir.so` from
//!   9.21.0.82); ops, cnn and adv name graph and ops in `DT_NEEDED`. The DLLs write whole names
//!   (`cudnn_ext64_9.dll`).
//! - 8.x: `libcudnn.so.8` / `cudnn64_8.dll` names all six `{ops,cnn,adv}_{infer,train}`.
//!
//! [`walk`] follows those names from the dispatcher: every sub-library of the release's major
//! that a file of the set names is a member; each member found is read in turn. The walk reads
//! nothing itself: the caller passes how to read a file's names (`sys::binfmt::referenced_libraries`)
//! and how to find a member (a folder's file, or the loader model's pick), so it serves
//! `store add` (the entry's folder), `check` and `doctor` (what the loader would take) alike.
//!
//! [`FIRST_SHIPPED`] is a cross-check, never the source: it serves only a dispatcher that
//! names no sub-library at all (a file whose data cannot be read, or a stand-in), and past its
//! [`CHECKED_THROUGH`] release it says so ([`Basis::Table`] with `beyond`).

use super::libname::{self, Os};
use super::version::Version;

/// Where a [`RequiredSet`]'s members came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Basis {
    /// Named by the files of the set themselves.
    Files,
    /// The dispatcher names no sub-library, so the members are [`FIRST_SHIPPED`]'s for the
    /// release. `beyond`: the release is newer than [`CHECKED_THROUGH`] (or its version is
    /// unknown), so a sub-library added since may be missing from the list: not verified.
    Table {
        /// Whether the release is past the table's last checked release (or unknown).
        beyond: bool,
    },
}

/// One sub-library of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member<P> {
    /// Its stem (`graph`, `ops_infer`, `engines_tensor_ir`), lowercased on Windows.
    pub stem: String,
    /// The file name of the library that names it (the dispatcher's for the table's rows).
    pub named_by: String,
    /// Where the caller's `find` found it; `None`: missing.
    pub file: Option<P>,
}

/// The sub-libraries a cuDNN release loads, found or not (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredSet<P> {
    /// The cuDNN major.
    pub major: u64,
    /// The naming convention of the set's files.
    pub os: Os,
    /// The members in the order the walk met them (the dispatcher's names first).
    pub members: Vec<Member<P>>,
    /// Where the members came from.
    pub basis: Basis,
}

impl<P> RequiredSet<P> {
    /// The loader's file name of `stem` in this set (`libcudnn_ops.so.9`, `cudnn_ops64_9.dll`).
    pub fn file_name(&self, stem: &str) -> String {
        libname::sub_library_name(stem, self.major, self.os)
    }

    /// The loader's file names of the members not found, in walk order.
    pub fn missing(&self) -> Vec<String> {
        self.members.iter().filter(|m| m.file.is_none()).map(|m| self.file_name(&m.stem)).collect()
    }

    /// The members' stems, in walk order.
    pub fn stems(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.stem.as_str()).collect()
    }
}

/// Follows the names the set's files carry, from the `dispatcher` (file name
/// `dispatcher_name`) of cuDNN `major` with the convention `os`:
/// - `names_in(file)`: the cuDNN library names `file` carries, as written
///   (`libcudnn_ops.so`, `cudnn_ops64_9.dll`; `sys::binfmt::References::cudnn`);
/// - `find(stem, asker)`: where the library of `stem` is found when `asker` asks for it
///   by name, or `None`.
///
/// Names of another major or convention, and dispatcher names, are not members. When the
/// dispatcher names no sub-library of its major, the members are [`FIRST_SHIPPED`]'s for
/// `version`, looked up with the dispatcher as the asker ([`Basis::Table`]).
pub fn walk<P: Clone>(
    dispatcher: &P,
    dispatcher_name: &str,
    major: u64,
    os: Os,
    version: Option<&Version>,
    mut names_in: impl FnMut(&P) -> Vec<String>,
    mut find: impl FnMut(&str, &P) -> Option<P>,
) -> RequiredSet<P> {
    let mut members: Vec<Member<P>> = Vec::new();
    let mut queue: Vec<(P, String)> = vec![(dispatcher.clone(), dispatcher_name.to_string())];
    let mut at = 0;
    while at < queue.len() {
        let (file, name) = queue[at].clone();
        at += 1;
        for named in names_in(&file) {
            let Some(lib) = libname::parse(&named) else { continue };
            let Some(stem) = lib.stem else { continue };
            if lib.os != os || lib.major.is_some_and(|m| m != major) || members.iter().any(|m| m.stem == stem) {
                continue;
            }
            let found = find(&stem, &file);
            if let Some(f) = &found {
                queue.push((f.clone(), libname::sub_library_name(&stem, major, os)));
            }
            members.push(Member { stem, named_by: name.clone(), file: found });
        }
    }
    if !members.is_empty() {
        return RequiredSet { major, os, members, basis: Basis::Files };
    }
    let (stems, beyond) = table_stems(major, version);
    let members =
        stems.into_iter().map(|stem| Member { stem: stem.to_string(), named_by: dispatcher_name.to_string(), file: find(stem, dispatcher) }).collect();
    RequiredSet { major, os, members, basis: Basis::Table { beyond } }
}

/// The sub-libraries of each cuDNN major with the first release that ships it:
/// `(major, stem, release)`. Read from the file lists of the `nvidia-cudnn-cu12` wheels on
/// PyPI (their zip central directories), 8.9.4.25 through 8.9.7.29 and 9.0.0 through
/// 9.28.0.42, and the cuDNN Installation Guide's file lists for 8.0-8.9 (docs/facts.md §2).
pub const FIRST_SHIPPED: &[(u64, &str, &str)] = &[
    (8, "ops_infer", "8.0.0"),
    (8, "ops_train", "8.0.0"),
    (8, "cnn_infer", "8.0.0"),
    (8, "cnn_train", "8.0.0"),
    (8, "adv_infer", "8.0.0"),
    (8, "adv_train", "8.0.0"),
    (9, "graph", "9.0.0"),
    (9, "engines_precompiled", "9.0.0"),
    (9, "engines_runtime_compiled", "9.0.0"),
    (9, "heuristic", "9.0.0"),
    (9, "ops", "9.0.0"),
    (9, "cnn", "9.0.0"),
    (9, "adv", "9.0.0"),
    (9, "engines_tensor_ir", "9.21.0.82"),
    (9, "ext", "9.22.0.52"),
];

/// The newest release of each major whose file list [`FIRST_SHIPPED`] was checked against.
pub const CHECKED_THROUGH: &[(u64, &str)] = &[(8, "8.9.7.29"), (9, "9.28.0.42")];

/// [`CHECKED_THROUGH`] for `major`, when the table has a row.
pub fn checked_through(major: u64) -> Option<&'static str> {
    CHECKED_THROUGH.iter().find(|r| r.0 == major).map(|r| r.1)
}

/// The first release of `major` that ships `stem` ([`FIRST_SHIPPED`]), when the table knows it.
pub fn first_shipped(major: u64, stem: &str) -> Option<&'static str> {
    FIRST_SHIPPED.iter().find(|r| r.0 == major && r.1 == stem).map(|r| r.2)
}

/// Whether `a` is at least `b`, comparing only the parts both have (`9.21.0` ships what
/// `9.21.0.82` ships: a 3-part version names every build of that release).
fn at_least(a: &Version, b: &Version) -> bool {
    let n = a.parts().len().min(b.parts().len());
    a.truncated(n) >= b.truncated(n)
}

/// [`FIRST_SHIPPED`]'s stems for a release of `major`: those its version ships (every row's
/// first release for an unknown version), with whether the release is past
/// [`CHECKED_THROUGH`] or unknown ([`Basis::Table`]'s `beyond`). Empty for a major without
/// rows (then `beyond` is true).
pub fn table_stems(major: u64, version: Option<&Version>) -> (Vec<&'static str>, bool) {
    let parse = |s: &str| s.parse::<Version>().ok();
    let stems = FIRST_SHIPPED
        .iter()
        .filter(|r| r.0 == major)
        .filter(|r| match (version, parse(r.2)) {
            (Some(v), Some(first)) => at_least(v, &first),
            (None, Some(first)) => first.parts().get(1) == Some(&0),
            _ => false,
        })
        .map(|r| r.1)
        .collect();
    let beyond = match (version, checked_through(major).and_then(parse)) {
        (Some(v), Some(last)) => !at_least(&last, v),
        _ => true,
    };
    (stems, beyond)
}

/// The members of a release that the rest of it shares: each sub-library another member names
/// as a library it needs (ELF `DT_NEEDED`, PE imports) that itself needs no member. `members`
/// is `(file name, names it needs)` for every cuDNN library of one folder. What the env hook
/// preloads beside the dispatcher (docs/design.md, "The env hook"): `libcudnn_graph.so.9` /
/// `cudnn_graph64_9.dll` in 9.x (ops, cnn, heuristic and the engines need it), and
/// `libcudnn_ops_infer.so.8` in 8.x (read from the real 9.5.0.50 and 8.9.4.25 wheels of both
/// platforms). Names are compared without regard to case on Windows; the result is sorted.
pub fn shared_members(members: &[(String, Vec<String>)], os: Os) -> Vec<String> {
    let same = |a: &str, b: &str| if os == Os::Windows { a.eq_ignore_ascii_case(b) } else { a == b };
    let is_member = |name: &str| members.iter().any(|(m, _)| same(m, name));
    let mut out: Vec<String> = members
        .iter()
        .filter(|(name, needs)| {
            libname::parse(name).is_some_and(|l| !l.is_dispatcher())
                && !needs.iter().any(|n| is_member(n))
                && members.iter().any(|(other, theirs)| !same(other, name) && theirs.iter().any(|n| same(n, name)))
        })
        .map(|(name, _)| name.clone())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shared_members_are_what_others_need_and_need_none_themselves() {
        let m = |name: &str, needs: &[&str]| (name.to_string(), needs.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        // The real 9.5.0.50 manylinux wheel's DT_NEEDED (readelf -d).
        let linux9 = [
            m("libcudnn.so.9", &["libdl.so.2"]),
            m("libcudnn_graph.so.9", &["libz.so.1", "libdl.so.2"]),
            m("libcudnn_ops.so.9", &["libcudnn_graph.so.9", "libdl.so.2"]),
            m("libcudnn_cnn.so.9", &["libcudnn_ops.so.9", "libcudnn_graph.so.9"]),
            m("libcudnn_heuristic.so.9", &["libcudnn_graph.so.9"]),
        ];
        assert_eq!(shared_members(&linux9, Os::Linux), ["libcudnn_graph.so.9"]);
        // The real 8.9.4.25 wheel: ops_train and the others need ops_infer.
        let linux8 = [
            m("libcudnn.so.8", &["libc.so.6"]),
            m("libcudnn_ops_infer.so.8", &["libc.so.6"]),
            m("libcudnn_ops_train.so.8", &["libcudnn_ops_infer.so.8"]),
            m("libcudnn_cnn_infer.so.8", &["libcudnn_ops_infer.so.8"]),
            m("libcudnn_cnn_train.so.8", &["libcudnn_cnn_infer.so.8", "libcudnn_ops_train.so.8", "libcudnn_ops_infer.so.8"]),
        ];
        assert_eq!(shared_members(&linux8, Os::Linux), ["libcudnn_ops_infer.so.8"]);
        // The real 9.5.0.50 win_amd64 wheel's imports, in the case a DLL may write them.
        let win9 = [m("cudnn64_9.dll", &["KERNEL32.dll"]), m("cudnn_graph64_9.dll", &["KERNEL32.dll"]), m("cudnn_ops64_9.dll", &["CUDNN_GRAPH64_9.DLL"])];
        assert_eq!(shared_members(&win9, Os::Windows), ["cudnn_graph64_9.dll"]);
        // A folder whose members need nothing of each other shares nothing (a stand-in set).
        assert!(shared_members(&[m("libcudnn.so.9", &[]), m("libcudnn_graph.so.9", &[])], Os::Linux).is_empty());
    }

    use super::*;
    use std::collections::BTreeMap;

    /// A folder in memory: file name -> the names it carries.
    fn folder(files: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        files.iter().map(|(f, names)| (f.to_string(), names.iter().map(|n| n.to_string()).collect())).collect()
    }

    fn walk_in(dir: &BTreeMap<String, Vec<String>>, dispatcher: &str, major: u64, os: Os, version: Option<&str>) -> RequiredSet<String> {
        let v = version.map(|v| v.parse::<Version>().unwrap());
        walk(
            &dispatcher.to_string(),
            dispatcher,
            major,
            os,
            v.as_ref(),
            |f| dir.get(f).cloned().unwrap_or_default(),
            |stem, _| Some(libname::sub_library_name(stem, major, os)).filter(|n| dir.contains_key(n)),
        )
    }

    #[test]
    fn the_set_is_what_the_dispatcher_and_the_graph_name() {
        // The names the real 9.27.0.42 Linux dispatcher and graph library carry.
        let dir = folder(&[
            ("libcudnn.so.9", &["libcudnn.so.9", "libcudnn_adv.so", "libcudnn_cnn.so", "libcudnn_ext.so", "libcudnn_graph.so", "libcudnn_ops.so"]),
            (
                "libcudnn_graph.so.9",
                &[
                    "libcudnn_engines_precompiled.so",
                    "libcudnn_engines_runtime_compiled.so",
                    "libcudnn_engines_tensor_ir.so",
                    "libcudnn_graph.so.9",
                    "libcudnn_heuristic.so",
                ],
            ),
            ("libcudnn_adv.so.9", &["libcudnn_graph.so.9", "libcudnn_ops.so.9"]),
            ("libcudnn_ops.so.9", &["libcudnn_graph.so.9"]),
            ("libcudnn_cnn.so.9", &[]),
            ("libcudnn_heuristic.so.9", &[]),
            ("libcudnn_engines_precompiled.so.9", &[]),
            ("libcudnn_engines_runtime_compiled.so.9", &[]),
        ]);
        let set = walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, Some("9.27.0.42"));
        assert_eq!(set.basis, Basis::Files);
        assert_eq!(set.stems(), ["adv", "cnn", "ext", "graph", "ops", "engines_precompiled", "engines_runtime_compiled", "engines_tensor_ir", "heuristic"]);
        assert_eq!(set.missing(), ["libcudnn_ext.so.9", "libcudnn_engines_tensor_ir.so.9"]);
        let tensor_ir = set.members.iter().find(|m| m.stem == "engines_tensor_ir").unwrap();
        assert_eq!(tensor_ir.named_by, "libcudnn_graph.so.9");
    }

    #[test]
    fn names_of_other_majors_platforms_and_dispatchers_are_no_members() {
        let dir = folder(&[
            ("cudnn64_9.dll", &["cudnn64_9.dll", "cudnn64_8.dll", "cudnn_ops64_8.dll", "libcudnn_ops.so", "CUDNN_GRAPH64_9.DLL"]),
            ("cudnn_graph64_9.dll", &[]),
        ]);
        let set = walk_in(&dir, "cudnn64_9.dll", 9, Os::Windows, None);
        assert_eq!((set.stems(), set.missing()), (vec!["graph"], vec![]));
    }

    #[test]
    fn a_dispatcher_naming_nothing_falls_back_to_the_table_and_says_how_far_it_goes() {
        let dir = folder(&[("libcudnn.so.9", &[]), ("libcudnn_graph.so.9", &[])]);
        let set = walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, Some("9.5.0.50"));
        assert_eq!(set.basis, Basis::Table { beyond: false });
        assert_eq!(set.stems(), ["graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"]);
        assert_eq!(set.missing().len(), 6);
        let set = walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, Some("9.22.0"));
        assert!(set.stems().contains(&"ext") && set.stems().contains(&"engines_tensor_ir"));
        let set = walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, Some("9.21.1.3"));
        assert!(!set.stems().contains(&"ext") && set.stems().contains(&"engines_tensor_ir"));
        assert_eq!(walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, Some("9.29.0.1")).basis, Basis::Table { beyond: true });
        assert_eq!(walk_in(&dir, "libcudnn.so.9", 9, Os::Linux, None).basis, Basis::Table { beyond: true });
        let (stems, beyond) = table_stems(10, Some(&"10.0.0".parse().unwrap()));
        assert!(stems.is_empty() && beyond);
    }

    #[test]
    fn the_table_names_each_first_release_as_the_wheels_list_it() {
        assert_eq!(first_shipped(9, "engines_tensor_ir"), Some("9.21.0.82"));
        assert_eq!(first_shipped(9, "ext"), Some("9.22.0.52"));
        for (major, stem, _) in FIRST_SHIPPED {
            assert!(checked_through(*major).is_some(), "{stem}");
        }
    }
}
