//! `--color auto|always|never` (and the `NO_COLOR` convention, <https://no-color.org>): for
//! clap's own help and usage errors, and the `error:` / `hint:` prefixes of cuenv's errors.
//! `auto` colors only a terminal, and not when `NO_COLOR` is set to a non-empty value.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

/// When to color.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum When {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always (also through pipes).
    Always,
    /// Never.
    Never,
}

impl When {
    /// The choice for clap, which applies the same `auto` rule (NO_COLOR included).
    pub fn clap(self) -> clap::ColorChoice {
        match self {
            When::Auto => clap::ColorChoice::Auto,
            When::Always => clap::ColorChoice::Always,
            When::Never => clap::ColorChoice::Never,
        }
    }
}

/// The `--color` value among `args` (the program's arguments, before clap parses them, so
/// that clap's own messages follow it): the last `--color X` / `--color=X` before `--`;
/// `auto` when absent or not a valid value (clap then reports it).
pub fn scan(args: impl IntoIterator<Item = OsString>) -> When {
    let args: Vec<String> = args.into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut when = When::Auto;
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        let value = match args[i].strip_prefix("--color") {
            Some("") => args.get(i + 1).cloned(),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        };
        if let Some(w) = value.and_then(|v| <When as clap::ValueEnum>::from_str(&v, true).ok()) {
            when = w;
        }
        i += 1;
    }
    when
}

/// Whether stderr gets colors: `always`, or `auto` on a terminal with `no_color` unset or empty.
pub fn decide(when: When, terminal: bool, no_color: Option<OsString>) -> bool {
    match when {
        When::Always => true,
        When::Never => false,
        When::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

static STDERR: AtomicBool = AtomicBool::new(false);

/// Sets whether stderr is colored, from `when`, stderr and `NO_COLOR`.
pub fn init(when: When) {
    STDERR.store(decide(when, std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR")), Ordering::Relaxed);
}

/// `text` with the `error:`, `warning:` and `hint:` that start its lines in bold red, bold
/// yellow and bold cyan, when stderr is colored; else `text` itself.
pub fn paint(text: &str) -> String {
    if !STDERR.load(Ordering::Relaxed) {
        return text.to_string();
    }
    paint_always(text)
}

fn paint_always(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    for line in text.split_inclusive('\n') {
        let styled = [("error:", "1;31"), ("warning:", "1;33"), ("hint:", "1;36")]
            .iter()
            .find_map(|(p, sgr)| line.strip_prefix(p).map(|rest| format!("\x1b[{sgr}m{p}\x1b[0m{rest}")));
        out.push_str(styled.as_deref().unwrap_or(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn scans_the_flag_before_clap() {
        assert_eq!(scan(args(&["cuenv", "plan", "x"])), When::Auto);
        assert_eq!(scan(args(&["cuenv", "--color", "never", "plan"])), When::Never);
        assert_eq!(scan(args(&["cuenv", "plan", "--color=always"])), When::Always);
        assert_eq!(scan(args(&["cuenv", "run", "--", "x", "--color", "never"])), When::Auto);
        assert_eq!(scan(args(&["cuenv", "--color", "pink"])), When::Auto);
    }

    #[test]
    fn auto_honours_no_color_and_the_terminal() {
        assert!(decide(When::Auto, true, None));
        assert!(decide(When::Auto, true, Some("".into())));
        assert!(!decide(When::Auto, true, Some("1".into())));
        assert!(!decide(When::Auto, false, None));
        assert!(decide(When::Always, false, Some("1".into())));
        assert!(!decide(When::Never, true, None));
    }

    #[test]
    fn paints_only_line_prefixes() {
        assert_eq!(paint_always("error: x\n  caused by: error: y\nhint: z\n"), "\x1b[1;31merror:\x1b[0m x\n  caused by: error: y\n\x1b[1;36mhint:\x1b[0m z\n");
    }
}
