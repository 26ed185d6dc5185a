//! One line of a plan: what `apply` would add (`+`), remove (`-`) or change (`~`), and the
//! links the new generation's views would hold. Shown as text by `plan` and `apply`
//! ([`Change`]'s `Display`, [`render`]) and as structured JSON by `plan --json`.

use std::fmt;

use serde::Serialize;

/// Whether a change adds, removes or changes something (a view link is none of these: it
/// lists what the new generation holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// Something new.
    #[serde(rename = "+")]
    Add,
    /// Something goes.
    #[serde(rename = "-")]
    Remove,
    /// Something changes.
    #[serde(rename = "~")]
    Change,
    /// A link of the new generation's views (changed or not).
    #[serde(rename = "link")]
    Link,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Add => "+",
            Kind::Remove => "-",
            Kind::Change => "~",
            Kind::Link => "link",
        })
    }
}

/// What a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Subject {
    /// A profile's view (`name` is the profile).
    Profile,
    /// A conda shim (`name` is its path).
    Shim,
    /// The generation's link mode (`detail` is `old -> new`).
    LinkMode,
    /// A view link (`name` is `profiles/<p>/<link>`, `detail` its target).
    Link,
    /// Something to fetch first (`name` is the profile, `detail` what and from where).
    Fetch,
}

/// One change of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `+`, `-`, `~` or `link`.
    pub kind: Kind,
    /// What it is about.
    pub subject: Subject,
    /// The profile, shim path or link path (empty for the link mode).
    pub name: String,
    /// What changes, in words (absent when the kind says it all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why this choice was made (a profile's toolkit root: which candidates it was chosen
    /// among), shown on its own indented line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Change {
    /// A change of `subject` `name`, with an optional `detail`.
    pub fn new(kind: Kind, subject: Subject, name: impl Into<String>, detail: Option<String>) -> Change {
        Change { kind, subject, name: name.into(), detail, why: None }
    }

    /// With a reason, shown as `    why: ...` under the change's line.
    pub fn with_why(mut self, why: impl Into<String>) -> Change {
        let why = why.into();
        self.why = (!why.is_empty()).then_some(why);
        self
    }
}

/// The line `plan` prints: `+ profile p: ...`, `- shim <path>`, `~ link mode a -> b`,
/// `  link profiles/p/cuda -> <target>`, `+ fetch <what> for profile p`.
impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let detail = self.detail.as_deref().unwrap_or("");
        match self.subject {
            Subject::Profile if self.detail.is_some() => write!(f, "{} profile {}: {detail}", self.kind, self.name),
            Subject::Profile => write!(f, "{} profile {}", self.kind, self.name),
            Subject::Shim => write!(f, "{} shim {}", self.kind, self.name),
            Subject::LinkMode => write!(f, "{} link mode {detail}", self.kind),
            Subject::Link => write!(f, "  link {} -> {detail}", self.name),
            Subject::Fetch => write!(f, "{} fetch {detail} for profile {}", self.kind, self.name),
        }?;
        match &self.why {
            Some(why) => write!(f, "\n    why: {why}"),
            None => Ok(()),
        }
    }
}

/// The heading `plan` prints before the first view link.
pub const LINKS_HEADING: &str = "  the new generation's views (every link, changed or not):";

/// The plan as text lines: each change's line, with [`LINKS_HEADING`] before the first link.
pub fn render(changes: &[Change]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut headed = false;
    for c in changes {
        if c.kind == Kind::Link && !headed {
            lines.push(LINKS_HEADING.to_string());
            headed = true;
        }
        lines.push(c.to_string());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_are_the_plan_format() {
        let cs = vec![
            Change::new(Kind::Add, Subject::Profile, "train", Some("cuDNN 9.5.0.50 (x) on CUDA 12.6 (/usr/local/cuda-12.6)".into())),
            Change::new(Kind::Remove, Subject::Profile, "old", None),
            Change::new(Kind::Change, Subject::LinkMode, "", Some("symlink -> copy".into())),
            Change::new(Kind::Add, Subject::Shim, "/env/etc/conda/activate.d/cuenv-train.sh", None),
            Change::new(Kind::Add, Subject::Fetch, "train", Some("cuDNN 9.5 from PyPI".into())),
            Change::new(Kind::Link, Subject::Link, "profiles/train/cuda", Some("/usr/local/cuda-12.6".into())),
            Change::new(Kind::Link, Subject::Link, "profiles/train/cudnn", Some("/s/e".into())),
        ];
        assert_eq!(
            render(&cs),
            [
                "+ profile train: cuDNN 9.5.0.50 (x) on CUDA 12.6 (/usr/local/cuda-12.6)",
                "- profile old",
                "~ link mode symlink -> copy",
                "+ shim /env/etc/conda/activate.d/cuenv-train.sh",
                "+ fetch cuDNN 9.5 from PyPI for profile train",
                LINKS_HEADING,
                "  link profiles/train/cuda -> /usr/local/cuda-12.6",
                "  link profiles/train/cudnn -> /s/e",
            ]
        );
        let json = serde_json::to_value(&cs[1]).unwrap();
        assert_eq!(json, serde_json::json!({ "kind": "-", "subject": "profile", "name": "old" }));
    }
}
