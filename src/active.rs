//! The active profile: `<home>/active`, one stable link to `<home>/profiles/<name>` that
//! `cuenv use` points at a profile of the current generation (and `env --setup` shells
//! follow). Setting it is one link replacement through `<home>/.active.new` (never
//! delete-then-create); clearing it removes the link.

use std::path::PathBuf;

use crate::error::{Diagnose, ExitCode, IoError};
use crate::generation::{self, UnknownProfile};
use crate::layout::Layout;
use crate::link::{self, LinkKind};

/// Why `cuenv use` could not make a profile active.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// There is no generation yet, so no profile either.
    #[error("no generation yet")]
    NoGeneration,
    /// The current generation has no such profile.
    #[error(transparent)]
    Unknown(#[from] UnknownProfile),
    /// The current generation could not be read.
    #[error(transparent)]
    Generation(#[from] generation::Error),
    /// The link could not be replaced.
    #[error(transparent)]
    Link(#[from] link::LinkError),
    /// The link could not be removed.
    #[error(transparent)]
    Io(#[from] IoError),
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::NoGeneration => Some("run `cuenv apply <lab.toml>` first".into()),
            Error::Unknown(e) => e.hint(),
            Error::Generation(e) => e.hint(),
            Error::Link(e) => e.hint(),
            Error::Io(e) => e.hint(),
        }
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            Error::NoGeneration => ExitCode::Invalid,
            Error::Unknown(e) => e.exit_code(),
            Error::Generation(e) => e.exit_code(),
            Error::Link(e) => e.exit_code(),
            Error::Io(e) => e.exit_code(),
        }
    }
}

/// Makes profile `name` of the current generation the active one. Returns the link and the
/// stable path it now points at (`<home>/profiles/<name>`, as users see the home).
///
/// Errors: [`Error::NoGeneration`], [`Error::Unknown`] (with the closest name), link errors.
pub fn set(layout: &Layout, name: &str) -> Result<(PathBuf, PathBuf), Error> {
    let cur = generation::current(layout).ok_or(Error::NoGeneration)?;
    generation::read(layout, cur)?.profile(name)?;
    let active = layout.active_link();
    let target = crate::view::stable_home(layout).join("profiles").join(name);
    link::set(LinkKind::native(), &active, &target, &layout.active_staging())?;
    Ok((active, target))
}

/// Makes no profile active (removes `<home>/active`; nothing to do when there is none).
pub fn clear(layout: &Layout) -> Result<(), Error> {
    let active = layout.active_link();
    link::remove(&active).map_err(|e| IoError::new("remove the link", &active, e))?;
    Ok(())
}
