//! Located diagnostics: an error that points into a source file (file:line:column, the source
//! line, a caret under the offending text, notes, and a separate hint), as the profile file
//! and the lock file report their errors.
//!
//! Pure: builds and renders text, no I/O. A span is always clamped into the text and widened
//! to whole characters, so rendering never panics. Locating is linear: a [`LineIndex`] (the
//! start of every line, built once per text) turns an offset into its line by binary search,
//! so a file with thousands of errors is not rescanned from its start for each one.

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
    ///
    /// Scans `source` once to find the line; for many diagnostics in one text, build a
    /// [`LineIndex`] once and use [`Located::indexed`].
    pub fn new(path: &Path, source: &str, span: Span, message: impl Into<String>, hint: Option<String>) -> Located {
        Located::indexed(path, source, &LineIndex::new(source), span, message, hint)
    }

    /// As [`Located::new`], with `lines` the [`LineIndex`] of `source`: costs only the length
    /// of the span's line (plus a binary search), however far into the text the span is.
    pub fn indexed(path: &Path, source: &str, lines: &LineIndex, span: Span, message: impl Into<String>, hint: Option<String>) -> Located {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let mut end = span.end.clamp(start, source.len());
        while !source.is_char_boundary(end) {
            end += 1;
        }
        let line = lines.line_of(start);
        let line_start = lines.starts[line];
        let line_end = source[start..].find('\n').map(|i| start + i).unwrap_or(source.len());
        // Control characters (ESC, BEL, ...) are shown as U+FFFD, so that printing a hostile
        // file's line cannot drive the terminal; one character each, so the caret stays put.
        let source_line =
            source[line_start..line_end].trim_end_matches('\r').chars().map(|c| if c.is_control() && c != '\t' { '\u{FFFD}' } else { c }).collect();
        let underlined = source[start..end.min(line_end)].trim_end_matches('\r').chars().count();
        Located {
            path: path.to_path_buf(),
            span: start..end,
            line: line + 1,
            column: source[line_start..start].chars().count() + 1,
            message: message.into(),
            source_line,
            caret_len: underlined.max(1),
            notes: Vec::new(),
            hint,
        }
    }
}

/// The byte offset where each line of a text starts (the first is 0), built in one pass;
/// [`Located::indexed`] uses it to place many spans without rescanning the text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// The index of `source`.
    pub fn new(source: &str) -> LineIndex {
        LineIndex { starts: std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect() }
    }

    /// The 0-based line holding byte `offset` (offsets past the end are on the last line).
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).saturating_sub(1)
    }
}

/// The text of a source file's `bytes`, which must be UTF-8 (a leading UTF-8 byte-order mark
/// is kept; parsers strip it so that line-1 columns stay right). Otherwise a diagnostic naming
/// what the file is instead, with `hint`:
/// - UTF-16 or UTF-32 text (with a byte-order mark, or UTF-16 recognised by its NUL bytes):
///   the encoding, at 1:1 of the decoded text;
/// - anything else: the first byte that is not valid UTF-8, at its line and column.
pub fn decode_utf8<'b>(bytes: &'b [u8], path: &Path, hint: &str) -> Result<&'b str, Box<Located>> {
    if let Some((encoding, text)) = wide_text(bytes) {
        let message = format!("the file is {encoding} text, not UTF-8");
        return Err(Box::new(Located::new(path, &text, 0..0, message, Some(hint.to_string()))));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        // Lossy decoding keeps every byte before `at` where it is; the bad byte becomes U+FFFD.
        let text = String::from_utf8_lossy(bytes);
        let message = format!("the file is not UTF-8: byte 0x{:02X} is not valid UTF-8 here", bytes[at]);
        Box::new(Located::new(path, &text, at..at + 1, message, Some(hint.to_string())))
    })
}

/// When `bytes` are UTF-16 or UTF-32 text: its encoding, in words, and the text decoded
/// (bad units as U+FFFD). Without a byte-order mark only UTF-16 is recognised, by NUL bytes
/// in every other position of most of the first 256 bytes (UTF-8 TOML never holds a NUL).
fn wide_text(bytes: &[u8]) -> Option<(&'static str, String)> {
    let utf32 = |body: &[u8], be: bool| -> String {
        body.chunks_exact(4)
            .map(|c| {
                let c: [u8; 4] = c.try_into().expect("chunks of 4");
                char::from_u32(if be { u32::from_be_bytes(c) } else { u32::from_le_bytes(c) }).unwrap_or('\u{FFFD}')
            })
            .collect()
    };
    let utf16 = |body: &[u8], be: bool| -> String {
        let units = body.chunks_exact(2).map(|c| if be { u16::from_be_bytes([c[0], c[1]]) } else { u16::from_le_bytes([c[0], c[1]]) });
        char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect()
    };
    match bytes {
        [0, 0, 0xFE, 0xFF, rest @ ..] => return Some(("UTF-32 (big-endian, with a byte-order mark)", utf32(rest, true))),
        [0xFF, 0xFE, 0, 0, rest @ ..] => return Some(("UTF-32 (little-endian, with a byte-order mark)", utf32(rest, false))),
        [0xFE, 0xFF, rest @ ..] => return Some(("UTF-16 (big-endian, with a byte-order mark)", utf16(rest, true))),
        [0xFF, 0xFE, rest @ ..] => return Some(("UTF-16 (little-endian, with a byte-order mark)", utf16(rest, false))),
        _ => {}
    }
    let sample = &bytes[..bytes.len().min(256)];
    let pairs = sample.len() / 2;
    if pairs == 0 {
        return None;
    }
    let count = |nul: usize| sample.chunks_exact(2).filter(|p| p[nul] == 0 && p[1 - nul] != 0).count();
    if count(1) * 2 > pairs {
        Some(("UTF-16 (little-endian, without a byte-order mark)", utf16(bytes, false)))
    } else if count(0) * 2 > pairs {
        Some(("UTF-16 (big-endian, without a byte-order mark)", utf16(bytes, true)))
    } else {
        None
    }
}

/// The largest char boundary at or before `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Where a TOML parse error points: its own span, or, when the parser gave none (toml_edit's
/// "recursion limit" for a dotted key of too many parts, `a.a.a...`), the key with the most
/// dotted parts (a `[table.header]` or the key before `=`); `0..0` when there is none.
pub fn toml_error_span(text: &str, span: Option<Span>) -> Span {
    if let Some(s) = span {
        return s;
    }
    let mut best: Option<(usize, Span)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        let body = &line[lead..];
        let key = if body.starts_with('[') { body.trim_start_matches('[').split(']').next() } else { body.split('=').next().filter(|_| body.contains('=')) };
        if let Some(key) = key {
            let parts = key.matches('.').count();
            let start = at + lead + body.find(key).unwrap_or(0);
            if parts > 0 && best.as_ref().is_none_or(|(n, _)| parts > *n) {
                best = Some((parts, start..start + key.trim_end().len()));
            }
        }
        at += line.len();
    }
    best.map(|(_, s)| s).unwrap_or(0..0)
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

    #[test]
    fn decode_names_the_encoding_or_the_first_bad_byte() {
        let p = Path::new("lab.toml");
        assert_eq!(decode_utf8(b"\xEF\xBB\xBFa = 1", p, "h").unwrap(), "\u{FEFF}a = 1");
        let l = decode_utf8(b"a = 1\nb = \"\xE9t\xE9\"\n", p, "h").unwrap_err();
        assert_eq!((l.line, l.column, l.caret_len), (2, 6, 1));
        assert_eq!(l.message, "the file is not UTF-8: byte 0xE9 is not valid UTF-8 here");
        assert_eq!(l.hint.as_deref(), Some("h"));
        let wide = |s: &str, be: bool, bom: bool| -> Vec<u8> {
            let units = (bom.then_some(0xFEFF)).into_iter().chain(s.encode_utf16());
            units.flat_map(|u| if be { u.to_be_bytes() } else { u.to_le_bytes() }).collect()
        };
        for (be, bom, name) in [
            (false, true, "UTF-16 (little-endian, with a byte-order mark)"),
            (true, true, "UTF-16 (big-endian, with a byte-order mark)"),
            (false, false, "UTF-16 (little-endian, without a byte-order mark)"),
            (true, false, "UTF-16 (big-endian, without a byte-order mark)"),
        ] {
            let l = decode_utf8(&wide("[profiles.a]\ncuda = \"12\"\n", be, bom), p, "h").unwrap_err();
            assert_eq!(l.message, format!("the file is {name} text, not UTF-8"));
            assert_eq!((l.line, l.column, l.source_line.as_str()), (1, 1, "[profiles.a]"));
        }
        let utf32: Vec<u8> = [0xFEFFu32, 'a' as u32].iter().flat_map(|u| u.to_le_bytes()).collect();
        assert!(decode_utf8(&utf32, p, "h").unwrap_err().message.contains("UTF-32 (little-endian"));
        assert!(decode_utf8(b"", p, "h").is_ok());
    }

    #[test]
    fn control_characters_are_not_printed() {
        let l = Located::new(Path::new("x"), "a\x1b[31m = \x07", 1..2, "m", None);
        assert_eq!(l.source_line, "a\u{FFFD}[31m = \u{FFFD}");
        assert_eq!(l.column, 2);
    }

    #[test]
    fn indexed_matches_a_rescan_at_every_offset() {
        let src = "a\n\nbé = 1\r\n\tc\n";
        let lines = LineIndex::new(src);
        for i in 0..=src.len() + 2 {
            let slow_line = src[..floor_char_boundary(src, i.min(src.len()))].matches('\n').count() + 1;
            let l = Located::indexed(Path::new("x"), src, &lines, i..i + 1, "m", None);
            assert_eq!(l, Located::new(Path::new("x"), src, i..i + 1, "m", None));
            assert_eq!(l.line, slow_line, "offset {i}");
        }
        assert_eq!(Located::new(Path::new("x"), "", 0..0, "m", None).line, 1);
    }
}
