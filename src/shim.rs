//! TEMPORARY (replaced by the shim branch).
use std::path::PathBuf;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell { Cmd, PowerShell, Posix, Fish }
impl Shell { pub const ALL: [Shell; 4] = [Shell::Cmd, Shell::PowerShell, Shell::Posix, Shell::Fish]; }
pub struct Activation { pub profile: String, pub path_prepend: Vec<PathBuf>, pub ld_library_path_prepend: Vec<PathBuf>, pub set: Vec<(String, PathBuf)> }
pub const MARKER: &str = "cuenv-shim v1";
pub fn is_ours(text: &str) -> bool { text.lines().next().is_some_and(|l| l.contains(MARKER)) }
pub fn file_name(profile: &str, shell: Shell) -> String { format!("cuenv-{profile}.{}", match shell { Shell::Cmd => "bat", Shell::PowerShell => "ps1", Shell::Posix => "sh", Shell::Fish => "fish" }) }
pub fn render_activate(_s: Shell, a: &Activation) -> String { format!("# {MARKER}\nexport CUENV_PROFILE='{}'\n", a.profile) }
pub fn render_deactivate(_s: Shell, _a: &Activation) -> String { format!("# {MARKER}\nunset CUENV_PROFILE\n") }
