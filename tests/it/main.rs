//! cuenv's integration tests, one binary (as uv does: `crates/uv/tests/it/main.rs`): each former
//! `tests/<name>.rs` is the module `<name>` here, and `support` (the isolated home and the fixture
//! builders) is compiled once for all of them.
//!
//! Select by module path: `cargo test --test it store::` runs the store tests,
//! `cargo test --test it real_wheels:: -- --ignored` one real-input file (see scripts/real-input.sh).

mod support;

mod apply;
mod apply_agree;
mod apply_tx;
mod architecture;
#[cfg(target_os = "linux")]
mod build_against;
mod check_real;
mod check_stub;
#[cfg(target_os = "linux")]
mod cli_output;
mod companions;
mod completions;
mod conda_order;
mod cuda13;
#[cfg(target_os = "linux")]
mod dist;
mod doctor;
mod doctor_for;
mod doctor_pid;
mod doctor_shells;
mod env_hook;
mod export;
mod fatbin_real;
mod fetch_local;
mod fetch_real;
#[cfg(target_os = "linux")]
mod finders;
mod finders_windows;
mod fs_faults;
mod gpu_fit;
mod home_format;
mod hook;
mod input_refusals;
mod kernel;
mod kill_matrix;
mod linkfree;
mod linkfree_follow;
mod loader_linux;
mod loader_windows;
mod new_user_messages;
mod odd_paths;
mod path_fuzz;
mod planted_links;
mod profile_input;
mod python_envs;
mod real_apply;
mod real_sources;
mod real_wheels;
mod real_windows;
mod release_set;
mod repair;
mod requires;
mod requires_real;
mod run;
mod shim_cmd;
mod shim_posix;
mod signals;
mod static_rules;
mod status_runtime;
mod stdout_faults;
mod store;
mod store_integrity;
mod store_tx;
#[cfg(target_os = "linux")]
mod te_finder;
#[cfg(target_os = "linux")]
mod torch_fallback;
mod tour;
mod verdicts;
mod windows_paths;
mod wine_main_job;
mod wine_smoke;
