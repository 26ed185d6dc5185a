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

pub mod apply;
pub mod change;
pub mod check;
pub mod cli;
pub mod companion;
pub mod cudnn;
pub mod doctor;
pub mod env;
pub mod error;
pub mod fetch;
pub mod generation;
pub mod home;
pub mod link;
pub mod probe;
pub mod profile;
pub mod pyenv;
pub mod requires;
pub mod resolve;
pub mod shim;
pub mod sources;
pub mod store;
pub mod sys;
pub mod toolkit;
