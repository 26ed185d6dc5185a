//! The shape of `src/`, checked from the files: no import cycle between top-level modules (a
//! folder counts as one), no file longer than [`MAX_LINES`] before its tests, and the module
//! map of docs/design.md ("Module map") drawing exactly this graph;
//! `cargo test --test it architecture -- --nocapture` prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a source file may have before its `#[cfg(test)]` part.
const MAX_LINES: usize = 700;

/// Files still over [`MAX_LINES`], each waiting for its split (docs/design.md, "Module map").
/// A listed file that is no longer over the limit fails the test, so the list only shrinks.
const OVER_THE_LIMIT: &[&str] = &[];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` that is compiled outside tests, with its text up to its
/// first `#[cfg(test)]` item. A file that a `#[cfg(test)] mod name;` declares is left out.
fn sources() -> Vec<(PathBuf, String)> {
    let mut files: Vec<PathBuf> = walk(&src());
    files.sort();
    let mut test_only = BTreeSet::new();
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for w in lines.windows(2) {
            if w[0].trim() == "#[cfg(test)]"
                && let Some(name) = w[1].trim().strip_prefix("mod ").or_else(|| w[1].trim().strip_prefix("pub mod ")).and_then(|r| r.strip_suffix(';'))
            {
                let dir = if f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs") { f.parent().unwrap().to_path_buf() } else { f.with_extension("") };
                test_only.insert(dir.join(format!("{name}.rs")));
                test_only.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    files
        .into_iter()
        .filter(|f| !test_only.contains(f))
        .map(|f| {
            let text = fs::read_to_string(&f).unwrap();
            let cut = text.lines().position(|l| l.trim_start() == "#[cfg(test)]").unwrap_or(usize::MAX);
            let kept: Vec<&str> = text.lines().take(cut).collect();
            (f, kept.join("\n"))
        })
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The top-level module of a file under `src/` (`src/store/extract.rs` -> `store`); `None`
/// for the crate roots.
fn top_module(f: &Path) -> Option<String> {
    let rel = f.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.as_str() {
        "lib.rs" | "main.rs" => None,
        _ => Some(first.trim_end_matches(".rs").to_string()),
    }
}

/// The top-level modules that `text` names through `crate::` paths (comments left out),
/// including every item of a `crate::{a, b::c}` group.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let preceded_ok = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        if preceded_ok {
            if let Some(group) = after.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                let mut depth = 0;
                let mut item = String::new();
                let mut items = Vec::new();
                for c in group[..end].chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => items.push(std::mem::take(&mut item)),
                        _ => item.push(c),
                    }
                }
                items.push(item);
                for i in items {
                    let name: String = i.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() && name != "self" {
                        out.insert(name);
                    }
                }
            } else {
                let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
        rest = &rest[at + "crate::".len()..];
    }
    out
}

/// The import graph between top-level modules: module -> the other modules it names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, text) in sources() {
        let Some(m) = top_module(&f) else { continue };
        let deps: Vec<String> = named_modules(&text).into_iter().filter(|d| *d != m).collect();
        g.entry(m).or_default().extend(deps);
    }
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for deps in g.values_mut() {
        deps.retain(|d| known.contains(d));
    }
    g
}

/// The strongly connected components of `g` with more than one module (Tarjan's algorithm).
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.g[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), out: Vec::new() };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn top_level_modules_import_no_cycle() {
    let g = graph();
    for (m, deps) in &g {
        println!("{m:<12} -> {}", deps.iter().cloned().collect::<Vec<_>>().join(" "));
    }
    let c = cycles(&g);
    assert!(c.is_empty(), "import cycles between top-level modules (each list imports itself through the others): {c:?}");
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into());
        g.entry(b.into()).or_default();
    }
    g.entry("d".into()).or_default();
    assert_eq!(cycles(&g), [vec!["a".to_string(), "b".into(), "c".into()]]);
    assert_eq!(named_modules("use crate::{a::X, b, c::{d, e}};\n// crate::z\nlet x = crate::f::g();"), ["a", "b", "c", "f"].map(String::from).into());
}

#[test]
fn no_file_is_over_the_limit_before_its_tests() {
    let mut over = Vec::new();
    for (f, text) in sources() {
        let n = text.lines().count();
        let rel = f.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        let listed = OVER_THE_LIMIT.contains(&rel.as_str());
        if n > MAX_LINES && !listed {
            over.push(format!("src/{rel}: {n} lines"));
        }
        if n <= MAX_LINES && listed {
            over.push(format!("src/{rel} is down to {n} lines: take it off OVER_THE_LIMIT"));
        }
    }
    assert!(over.is_empty(), "files over {MAX_LINES} lines before their tests (split them along their sections):\n{}", over.join("\n"));
}

/// The graph docs/design.md draws in its "Module map" block: `  name ──▶ deps` rows (a row
/// may go on over lines that start with spaces), and names with no arrow under `── leaves`.
fn documented_graph(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section = &doc[doc.find("## Module map").expect("design.md has a Module map")..];
    let block = &section[section.find("```text\n").expect("a text block") + 8..];
    let block = &block[..block.find("```").expect("the block ends")];
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let (mut current, mut leaves) = (None::<String>, false);
    for line in block.lines() {
        if line.starts_with("──") {
            leaves = line.contains("leaves");
            current = None;
        } else if let Some((name, deps)) = line.split_once("──▶") {
            let name = name.trim().to_string();
            g.entry(name.clone()).or_default().extend(deps.split_whitespace().map(String::from));
            current = Some(name);
        } else if leaves {
            for name in line.split_whitespace() {
                g.entry(name.to_string()).or_default();
            }
        } else if let Some(c) = &current {
            g.get_mut(c).unwrap().extend(line.split_whitespace().map(String::from));
        }
    }
    g
}

#[test]
fn the_module_map_in_design_md_is_the_graph() {
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md")).unwrap();
    let drawn = documented_graph(&doc);
    let real = graph();
    let mut diff = Vec::new();
    for m in real.keys().chain(drawn.keys()).collect::<BTreeSet<_>>() {
        let (r, d) = (real.get(m).cloned().unwrap_or_default(), drawn.get(m).cloned().unwrap_or_default());
        if r != d || real.contains_key(m) != drawn.contains_key(m) {
            let missing: Vec<_> = r.difference(&d).cloned().collect();
            let extra: Vec<_> = d.difference(&r).cloned().collect();
            diff.push(format!("{m}: imports but not drawn {missing:?}; drawn but not imported {extra:?}"));
        }
    }
    assert!(diff.is_empty(), "docs/design.md's Module map differs from the imports:\n{}", diff.join("\n"));
}
