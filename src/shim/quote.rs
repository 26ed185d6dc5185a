//! Literal quoting, one function per shell. Each returns text that the shell reads back as
//! exactly the input string, with no expansion of any kind.

/// POSIX sh: `'...'`; an embedded `'` becomes `'\''` (close, escaped quote, reopen).
pub fn posix(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// fish: `'...'`; inside, only `\\` and `\'` are escapes.
pub fn fish(s: &str) -> String {
    format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
}

/// PowerShell: `'...'`; an embedded quote is doubled. PowerShell also ends a single-quoted
/// string at the typographic quotes U+2018..U+201B, so those are doubled too.
pub fn powershell(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// cmd: the `value` part of `set "NAME=value"` (the quotes make `&`, `|`, `<`, `>`, `(`, `)`
/// and `^` literal). `%` is doubled (percent expansion runs first, even inside quotes). When the
/// line will undergo delayed expansion (`bang_line`: delayed expansion is on and the line holds a
/// `!`), that pass treats `^` as an escape and `!` as a variable delimiter everywhere, quotes or
/// not, so they become `^^` and `^!`. Values must not hold `"`, CR or LF (Windows paths cannot).
pub fn cmd(s: &str, bang_line: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '%' => out.push_str("%%"),
            '^' if bang_line => out.push_str("^^"),
            '!' if bang_line => out.push_str("^!"),
            c => out.push(c),
        }
    }
    out
}

/// csh/tcsh: `'...'`; an embedded `'` becomes `'\''`, `!` becomes `\!` (history substitution
/// happens even inside single quotes in an interactive csh, and in files it sources), and a
/// line break becomes `\` + line break (csh ends a quoted word at a bare line break).
pub fn csh(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str(r"'\''"),
            '!' => out.push_str(r"\!"),
            '\n' => out.push_str("\\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
