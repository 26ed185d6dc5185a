//! How an error reaches a person: `error: <message>`, one `  caused by: <cause>` line per
//! source in its chain, then `hint: <hint>`, and an exit code.
//!
//! Every command returns `Result<ExitCode, Report>`. A [`Report`] can only be made from an
//! error that implements [`Diagnose`] (`impl From<E: Diagnose> for Report`), so `?` on an
//! error type without a diagnosis does not compile: there is no list of known error types
//! to keep up to date. The hint and exit code are those of the outermost error; wrapper
//! enums (`apply::Error`, `sources::Error`) delegate both to the error they wrap.

use std::fmt::{self, Write as _};

use crate::error::{Diagnose, ExitCode};

/// An error on its way to the person at the terminal.
pub struct Report(Box<dyn Diagnose + Send + Sync>);

impl<E: Diagnose + Send + Sync + 'static> From<E> for Report {
    fn from(err: E) -> Report {
        Report(Box::new(err))
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl Report {
    /// Renders the error as `error: ...`, one `  caused by: ...` line per cause, and a
    /// `hint: ...` line when the error has one. Every line ends with a newline.
    pub fn render(&self) -> String {
        render_as("error", self.0.as_ref())
    }

    /// The failure class: the error's own.
    pub fn exit_code(&self) -> ExitCode {
        self.0.exit_code()
    }
}

/// Renders `d` as `<label>: <message>` (`<label>[<rule id>]` when it cites a rule), one `  caused by: <cause>` line per source in its
/// chain, and `hint: <hint>` when it has one; every line ends with a newline. The one
/// renderer of errors (`label` = `error`, through [`Report::render`]) and of warnings that
/// carry a hint (`warning`).
///
/// Bounded: a line is cut at [`MAX_LINE`] bytes and the message and causes together at
/// [`MAX_TOTAL`], each cut saying how much it left out (a 9 MB value in a profile file is
/// shown by its start, not printed four times over); the hint is always shown.
pub fn render_as(label: &str, d: &(dyn Diagnose + '_)) -> String {
    let mut body = format!("{}: {d}\n", crate::error::rule::labelled(label, d.rule()));
    let mut cause = d.source();
    while let Some(c) = cause {
        let _ = writeln!(body, "  caused by: {c}");
        cause = c.source();
    }
    let mut out = capped(&body, MAX_TOTAL);
    if let Some(hint) = d.hint() {
        out.push_str(&capped(&format!("hint: {hint}\n"), MAX_LINE));
    }
    out
}

/// The most bytes of one line of an error that are shown: room for a message naming two
/// paths of `PATH_MAX` (4096) bytes each, with their escapes.
pub const MAX_LINE: usize = 16 * 1024;
/// The most bytes of one error's message and causes that are shown.
pub const MAX_TOTAL: usize = 64 * 1024;

/// `text` (lines ending in `\n`) with each line cut at [`MAX_LINE`] bytes and the whole
/// at `total`, each cut followed by how much it left out.
fn capped(text: &str, total: usize) -> String {
    let mut out = String::new();
    let (mut lines_left, mut bytes_left) = (0usize, 0usize);
    for line in text.split_inclusive('\n') {
        if out.len() >= total {
            lines_left += 1;
            bytes_left += line.len();
            continue;
        }
        if line.len() <= MAX_LINE {
            out.push_str(line);
            continue;
        }
        let cut = line.floor_char_boundary(MAX_LINE);
        let _ = writeln!(out, "{} ... ({} more bytes of this line left out)", &line[..cut], line.trim_end_matches('\n').len() - cut);
    }
    if lines_left > 0 {
        let _ = writeln!(out, "... ({lines_left} more lines, {bytes_left} bytes, left out)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Hinted;

    #[test]
    fn a_warning_renders_like_an_error_under_its_own_label() {
        let w = Hinted::new("the active profile is gone", "run `cuenv use <profile>`", ExitCode::Success);
        assert_eq!(render_as("warning", &w), "warning: the active profile is gone\nhint: run `cuenv use <profile>`\n");
    }

    #[test]
    fn a_hinted_error_renders_message_hint_and_code() {
        let r = Report::from(Hinted::new("no generation yet", "run `cuenv apply <lab.toml>` first", ExitCode::Invalid));
        assert_eq!(r.render(), "error: no generation yet\nhint: run `cuenv apply <lab.toml>` first\n");
        assert_eq!(r.exit_code(), ExitCode::Invalid);
        let platform = Report::from(Hinted::unsupported_platform("cuDNN is not built for this platform", "run cuenv on one of those"));
        assert_eq!(
            platform.render(),
            "error: cuDNN is not built for this platform\nhint: cuDNN exists for windows-x86_64, linux-x86_64, linux-sbsa, linux-aarch64 and linux-ppc64le; run cuenv on one of those\n"
        );
        assert_eq!(platform.exit_code(), ExitCode::Failure);
    }

    #[test]
    fn a_typed_error_renders_its_cause_chain_and_hint() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = crate::generation::Error::Io { doing: "write", path: "/h/generations/3".into(), source: io };
        let r = Report::from(e);
        assert_eq!(
            r.render(),
            "error: cannot write /h/generations/3\n  caused by: denied\nhint: check the permissions of /h/generations/3 (and of the folders above it)\n"
        );
        assert_eq!(r.exit_code(), ExitCode::Failure);
        let unknown =
            crate::generation::UnknownProfile { name: "tarin".into(), generation: 2, known: vec!["train".into()], elsewhere: vec![], declared_in: None };
        let r = Report::from(unknown);
        assert_eq!(
            r.render(),
            "error: generation 2 has no profile `tarin`\nhint: did you mean `train`? profiles: train; or add it to your profile file and run `cuenv apply`\n"
        );
        assert_eq!(r.exit_code(), ExitCode::Invalid);
    }

    #[test]
    fn a_wrapped_error_keeps_the_message_chain_hint_and_code_of_what_it_wraps() {
        let drift = crate::apply::LockedDrift { message: "lab.lock does not match lab.toml".into(), hint: "run `cuenv apply lab.toml`".into() };
        let direct = Report::from(crate::apply::LockedDrift { message: drift.message.clone(), hint: drift.hint.clone() });
        let wrapped = Report::from(crate::apply::Error::from(drift));
        assert_eq!(wrapped.render(), direct.render());
        assert_eq!(wrapped.render(), "error: lab.lock does not match lab.toml\nhint: run `cuenv apply lab.toml`\n");
        assert_eq!(wrapped.exit_code(), ExitCode::Invalid);
        let pin = crate::sources::PinMismatch { profile: "p".into(), url: "u".into(), pinned: "a".into(), served: "b".into() };
        let twice = Report::from(crate::apply::Error::from(crate::sources::Error::from(pin)));
        assert_eq!(twice.exit_code(), ExitCode::Invalid);
        assert!(twice.render().starts_with("error: profile p: u has SHA-256 b, but lab.lock pins a\nhint: the index or mirror serves"), "{}", twice.render());
    }
}
