//! `apply`, `plan` and `lock`: from a profile file to a new current generation, as a
//! pipeline that runs one way. [`run`] calls one stage after the other, top to bottom. A
//! stage's module may use what an earlier stage made (the [`Desired`] of stage 3) and the
//! domain modules below `apply`, never a later stage:
//!
//! ```text
//! 1  parse     crate::profile::load          lab.toml            -> ProfileFile
//!    inputs    run::Inputs                   read once: host, lab.lock (LockText), current generation
//!    links     desire::validate_link_mode_works a link-mode this host cannot make: error at its line
//! 2  validate  desire::validate_all          every resolution and conda-env error at once, before fetching
//! 3  fetch     crate::sources::ensure        ProfileFile + pins  -> store entries, toolkit roots
//! 4  resolve   desire::desire_in             gather (I/O: store, toolkits; the lock's section), then
//!                └ crate::resolve::honour    file + lock + candidates -> choices (pure)
//!                                                                -> Desired (views + shims)
//! 5  gpu fit   run::gpu_fit                  a profile this driver or GPU cannot run: refused (--force skips)
//! 6  plan      plan::plan                    Desired vs. current generation -> changes
//!    repair    repair::repair                no changes: the current generation's damaged
//!                                            links and shims put back from its records
//!    preflight record::preflight_lock        before building: lab.lock can take the change
//! 7  build     build::build                  Desired -> generations/<N>/ (staged, one rename)
//! 8  record    record::write_lock            lab.lock (this platform's section + pins), written
//!                                            once, inside the transaction (a revert puts the old back)
//! 9  switch    crate::generation::ApplyTx    journal, profiles -> generations/<N>/views
//! 10 check     crate::generation::profile_check::run  probe each profile
//! 11 verdict   ApplyTx::commit / revert      commit, or revert when a profile failed
//! ```
//!
//! Stages 8 to 11 are one journaled transaction ([`crate::generation::ApplyTx`]): until the
//! verdict it can be undone, in process (a failed check, an error, a terminating signal or
//! a Windows console event, see [`interrupt`]) or by the next writer after a kill. `lab.lock` is read once, at stage 1,
//! and written at most once, at stage 8 (or, with nothing to change, right after stage 6).
//!
//! `plan` (the command) runs 1, 2, 4 and 6 without fetching; `lock` runs 1, 3, 4 and 8 for
//! each platform asked for. `error` and `home_token` are leaves every stage may use.
//! `rollback` and `gc`, the other commands that decide which generation is current or
//! kept, live with the generations ([`crate::generation::rollback`], [`crate::generation::gc`]).
//!
//! cuenv never writes inside a toolkit root or a store entry: views only link to them.

mod build;
mod desire;
mod error;
mod home_token;
pub mod interrupt;
mod pin;
mod plan;
mod preview;
mod record;
mod repair;
mod run;

pub use crate::env::view::{VIEW_LINKS, activation, stable_home};
pub use build::{build, remove_generation_tree};
pub use desire::{Desired, Locking, link_kind, missing_section, resolve_locked};
pub use error::{CheckReverted, Error, LockedDrift, Replacing};
pub use home_token::{HOME_TOKEN, from_home_token, to_home_token};
pub use pin::{PlatformLock, lock};
pub use plan::{plan, replacing, unchanged};
pub use preview::{Preview, preview};
pub use record::{preflight_lock, write_lock, write_lock_section};
pub use repair::{NotRepaired, Repair, RepairKind, Repaired, Unrepaired, Was, damage, repair};
pub use run::{Options, Outcome, Reporter, declared_fit, framework_fit, headline_changes, run};
