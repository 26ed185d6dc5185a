//! The active profile: `<home>/active`, one stable link to `<home>/profiles/<name>` that
//! `cuenv use` points at a profile of the current generation (and `env --setup` shells
//! follow). Setting it is one link replacement through `<home>/.active.new` (never
//! delete-then-create); clearing it removes the link.
//!
//! When the current generation is link-free, `<home>/active` is a pointer file instead: the
//! profile's name and a newline, replaced by one rename ([`generation::write_pointer`]).
//! `env --setup` reads it when the shell starts ([`setup_activation`]) and names the real
//! folders of that profile, so a `use` reaches shells started after it.

use std::path::PathBuf;

use crate::error::{ExitCode, IoError};
use crate::generation::{self, UnknownProfile};
use crate::home::layout::Layout;
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

crate::error::diagnose! {
    impl Diagnose for Error {
        transparent Unknown, Generation, Link, Io;
        fn hint(&self) -> Option<String> {
            match self {
                Error::NoGeneration => Some("run `cuenv apply <lab.toml>` first".into()),
            }
        }
        fn exit_code(&self) -> ExitCode {
            match self {
                Error::NoGeneration => ExitCode::Invalid,
            }
        }
    }
}

/// Makes profile `name` of the current generation the active one. Returns the link and the
/// stable path it now points at (`<home>/profiles/<name>`, as users see the home).
///
/// Errors: [`Error::NoGeneration`], [`Error::Unknown`] (with the closest name), link errors.
///
/// In the link-free mode `<home>/active` becomes a pointer file naming the profile (one
/// rename), and the second path returned is the profile's cuDNN library folder in the store.
pub fn set(layout: &Layout, name: &str) -> Result<(PathBuf, PathBuf), Error> {
    let cur = generation::current(layout).ok_or(Error::NoGeneration)?;
    let m = generation::read(layout, cur)?;
    let view = m.profile(name).map_err(|e| e.in_home(layout))?;
    let active = layout.active_link();
    if m.link_mode.is_link_free() {
        // A link left by a linked generation is replaced: one rename over it on Unix; a
        // junction (a folder to Windows) is removed first.
        if cfg!(windows) && link::is_link(&active) {
            link::remove(&active).map_err(|e| IoError::new("remove the link", &active, e))?;
        }
        generation::write_pointer(&active, &layout.active_staging(), &format!("{name}\n"))?;
        return Ok((active, view.real_folders().cudnn_lib));
    }
    // A pointer file left by a link-free generation makes way for the link.
    if !link::is_link(&active) && active.is_file() {
        std::fs::remove_file(&active).map_err(|e| IoError::new("remove the pointer file", &active, e))?;
    }
    let target = crate::env::view::stable_home(layout).join("profiles").join(name);
    link::set(LinkKind::native(), &active, &target, &layout.active_staging())?;
    Ok((active, target))
}

/// Makes no profile active (removes `<home>/active`, link or pointer file; nothing to do
/// when there is none).
pub fn clear(layout: &Layout) -> Result<(), Error> {
    let active = layout.active_link();
    if !link::is_link(&active) && active.is_file() {
        std::fs::remove_file(&active).map_err(|e| IoError::new("remove the pointer file", &active, e))?;
        return Ok(());
    }
    link::remove(&active).map_err(|e| IoError::new("remove the link", &active, e))?;
    Ok(())
}

/// The name of the active profile: the last component of the `<home>/active` link's target,
/// or what the pointer file holds (link-free mode). `None` when no profile is active.
pub fn name(layout: &Layout) -> Option<String> {
    let active = layout.active_link();
    if let Ok(target) = link::read(&active) {
        return target.file_name().map(|n| n.to_string_lossy().into_owned());
    }
    let text = std::fs::read_to_string(&active).ok()?;
    Some(text.trim_end_matches(['\r', '\n']).to_string()).filter(|n| !n.is_empty())
}

/// Whether the active profile is one the current generation has (the link resolves; or,
/// for a pointer file, the current generation names the profile).
pub fn resolves(layout: &Layout) -> bool {
    let active = layout.active_link();
    match generation::current_manifest(layout) {
        Some(m) if m.link_mode.is_link_free() => name(layout).is_some_and(|n| m.profile(&n).is_ok()),
        _ => link::is_link(&active) && active.exists(),
    }
}

/// `cuenv env --setup`'s activation ([`crate::env::view::setup_activation`], through
/// `<home>/active`), except when the current generation is link-free and a profile is
/// active: then the real folders of that profile as they are when the shell starts (layer
/// `SETUP`, `CUENV_PROFILE=active`).
pub fn setup_activation(layout: &Layout, platform: crate::cudnn::platform::Platform) -> crate::shim::Activation {
    let link_free = generation::current_manifest(layout).filter(|m| m.link_mode.is_link_free());
    let view = link_free.as_ref().and_then(|m| m.profile(&name(layout)?).ok());
    match view {
        Some(v) => {
            let mut a = crate::env::view::activation_at("active", &v.real_folders(), platform);
            a.layer = crate::shim::Layer::Setup;
            a
        }
        None => crate::env::view::setup_activation(layout, platform),
    }
}
