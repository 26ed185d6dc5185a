//! Located diagnostics: an error that points into a source file (file:line:column, the source
//! line, a caret under the offending text, notes, and a separate hint), as the profile file
//! and the lock file report their errors.
//!
//! Pure: builds and renders text, no I/O. A span is always clamped into the text and widened
//! to whole characters, so rendering never panics.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A byte range in a source text (`start..end`, `end` exclusive).
pub type Span = Range<usize>;

/// A diagnostic that points into a source file. `Display` renders, without the hint:
///
/// ```text
/// lab.toml:7:9: `cudnn = "8.x"` is not a version requirement
///   7 | cudnn = "8.x"
///     |         ^^^^^
///     = note: ...            (one line per note, if any)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The file as the person named it.
    pub path: PathBuf,
    /// The byte span the diagnostic points at.
    pub span: Span,
    /// 1-based line of the span's start.
    pub line: usize,
    /// 1-based column of the span's start, in characters.
    pub column: usize,
    /// The first line: what is wrong.
    pub message: String,
    /// The whole source line that holds the span's start (without its line break).
    pub source_line: String,
    /// How many characters the caret underlines (at least 1, at most to the line's end).
    pub caret_len: usize,
    /// Extra facts shown under the caret (e.g. which store entries exist).
    pub notes: Vec<String>,
    /// What to do next; shown by the CLI as `hint: ...`, not part of `Display`.
    pub hint: Option<String>,
}

impl Located {
    /// Builds a diagnostic for `span` in `source` (the text of `path`). A span past the end
    /// of the text is clamped to the end; an empty span gets a one-character caret.
    pub fn new(path: &Path, source: &str, span: Span, message: impl Into<String>, hint: Option<String>) -> Located {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let mut end = span.end.clamp(start, source.len());
        while !source.is_char_boundary(end) {
            end += 1;
        }
        let line_start = source[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = source[start..].find('\n').map(|i| start + i).unwrap_or(source.len());
        let source_line = source[line_start..line_end].trim_end_matches('\r').to_string();
        let underlined = source[start..end.min(line_end)].trim_end_matches('\r').chars().count();
        Located {
            path: path.to_path_buf(),
            span: start..end,
            line: source[..start].matches('\n').count() + 1,
            column: source[line_start..start].chars().count() + 1,
            message: message.into(),
            source_line,
            caret_len: underlined.max(1),
            notes: Vec::new(),
            hint,
        }
    }
}

/// The largest char boundary at or before `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.line.to_string().len();
        let pad: String = self.source_line.chars().take(self.column - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)?;
        write!(f, "\n  {:>width$} | {}", self.line, self.source_line)?;
        write!(f, "\n  {:width$} | {}{}", "", pad, "^".repeat(self.caret_len))?;
        for note in &self.notes {
            write!(f, "\n  {:width$} = note: {}", "", note)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn located_handles_tabs_unicode_crlf_and_eof() {
        let src = "a = 1\r\n\tkey = \"ü\"\r\n";
        let l = Located::new(Path::new("x.toml"), src, 14..16, "m", None);
        // The span ends inside `ü`: it is widened to the whole character.
        assert_eq!((l.line, l.column, l.caret_len), (2, 8, 2));
        assert_eq!(l.source_line, "\tkey = \"ü\"");
        assert!(l.to_string().ends_with("\n    | \t      ^^"), "{l}");
        let l = Located::new(Path::new("x.toml"), src, 999..1000, "m", None);
        assert_eq!((l.line, l.caret_len), (3, 1));
    }
}
