//! cuenv: declarative, reversible cuDNN / CUDA toolkit environments.
//!
//! Data flow (each arrow is one module):
//!
//! ```text
//! archive / wheel / folder --store::add--> store entry (content-addressed, read-only)
//!                                           |
//! lab.toml --profile--> resolved profiles --+--> generation (views + shims) --> stable paths
//! ```
//!
//! Only the CLI layer (`cli`) prints; library modules return typed errors that implement
//! [`error::Diagnose`] (a hint and an exit code).

pub mod activate;
pub mod active;
pub mod apply;
pub mod binfmt;
pub mod candidates;
pub mod change;
pub mod check;
pub mod cli;
pub mod conda;
pub mod diagnostic;
pub mod doctor;
pub mod error;
pub mod export;
pub mod fetch;
pub mod follow;
pub mod fsutil;
pub mod generation;
pub mod generation_check;
pub mod gpufit;
pub mod kernel;
pub mod layout;
pub mod libname;
pub mod link;
pub mod lockfile;
pub mod paths;
pub mod probe;
pub mod procmods;
pub mod profile;
pub mod progress;
pub mod project;
pub mod resolve;
pub mod settings;
pub mod shim;
pub mod sources;
pub mod status;
pub mod store;
pub mod suggest;
pub mod toolkit;
pub mod version;
pub mod view;
pub mod wheel_toolkit;
pub mod writer_lock;
