//! Driver and GPU fit: whether a profile's CUDA runtime and cuDNN can run on this machine's
//! NVIDIA driver and GPUs, decided from facts the probe reports (`cuDriverGetVersion`, NVML's
//! driver release, each device's compute capability) and two tables that cite NVIDIA's pages.
//!
//! Sources (docs/facts.md §11):
//! - CUDA minor-version compatibility,
//!   <https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html>:
//!   from CUDA 11 on, a runtime of major M runs on any driver of that major family or newer
//!   (CUDA 11.x: >= 450.80.02 Linux / 452.39 Windows; 12.x: >= 525; 13.x: >= 580). A driver
//!   whose CUDA version (`cuDriverGetVersion`, what `nvidia-smi` prints as "CUDA Version") is
//!   of an older major cannot run the runtime at all: `cudaErrorInsufficientDriver`, which
//!   cuDNN reports as `CUDNN_STATUS_NOT_INITIALIZED`.
//! - The cuDNN support matrix, <https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html>
//!   and its per-release pages (`.../cudnn/backend/v9.5.1/reference/support-matrix.html`,
//!   `.../cudnn/v9.5.0/...`, `.../cudnn/backend/v9.0.0/...`, `.../cudnn/archives/cudnn-891/...`,
//!   `.../cudnn/archives/cudnn-895/...`): per cuDNN release and CUDA toolkit version of its
//!   build, the driver floor and the compute capabilities. [`ARCH_TABLE`] holds only rows read
//!   there; releases between two read pages that agree are covered by one row (9.0.0-9.5.1).
//!
//! The table is a cross-check (docs/decisions.md 8). What decides a GPU's fit is the code the
//! set's libraries carry (docs/loader.md G1): the SASS and PTX architectures of their fat
//! binaries ([`crate::sys::fatbin`]), recorded in the store entry when `store add` imported it
//! ([`Want::with_code`]). Read that way for every cuDNN release on PyPI
//! (`scripts/derive-fatbin-archs.py`, docs/fatbin-archs.tsv): 8.5-8.7 carry sm_35 (Kepler),
//! 8.8-9.10 start at sm_50, 9.11 and later at sm_75 (Maxwell, Pascal and Volta dropped), and
//! the cu12 builds carry sm_100/sm_120 from 9.7.0. Where neither the files nor a row tell
//! (an entry whose libraries were not read, past the table's rows), each GPU is "not
//! verified" (G3): a warning, exit 0, `"unknown"` in `--json`.
//!
//! Overrides, for planning and tests (like conda's `CONDA_OVERRIDE_CUDA`):
//! `CUENV_OVERRIDE_DRIVER_CUDA=11.4` stands for the driver's CUDA version,
//! `CUENV_OVERRIDE_COMPUTE_CAPABILITY=6.1` for every GPU's compute capability (one GPU when
//! the probe saw none). Pure: the judgement reads nothing but its arguments.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;

use serde::Serialize;

use crate::cudnn::version::Version;
use crate::error::{Diagnose, ExitCode};
use crate::probe::Report;
use crate::sys::fatbin::GpuCode;

use crate::home::settings::{OVERRIDE_COMPUTE_CAPABILITY, OVERRIDE_DRIVER_CUDA};

/// The oldest driver release of a CUDA major family (minor-version compatibility).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverFloor {
    /// The CUDA major.
    pub cuda_major: u64,
    /// The driver branch to name in hints (`R525`).
    pub branch: u32,
    /// The minimum Linux driver release.
    pub linux: &'static str,
    /// The minimum Windows driver release, where NVIDIA's page names one.
    pub windows: Option<&'static str>,
}

/// Driver floors per CUDA major. Source: CUDA minor-version compatibility
/// (<https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html>) and the
/// cuDNN support matrix's driver columns (12.x >= 525.60.13 / 527.41; 13.x >= 580.65.06, the
/// Windows column "N/A" for 13.x in cuDNN 9.17.0's page).
pub const DRIVER_FLOORS: &[DriverFloor] = &[
    DriverFloor { cuda_major: 11, branch: 450, linux: "450.80.02", windows: Some("452.39") },
    DriverFloor { cuda_major: 12, branch: 525, linux: "525.60.13", windows: Some("527.41") },
    DriverFloor { cuda_major: 13, branch: 580, linux: "580.65.06", windows: None },
];

/// One row of the cuDNN support matrix: for cuDNN releases `cudnn` (inclusive) used with a
/// CUDA runtime in `cuda` (inclusive, `major.minor`), the compute capabilities supported, and
/// the driver that row needs beyond the CUDA family's floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchRow {
    /// First and last cuDNN release (`[major, minor, patch]`).
    pub cudnn: ([u64; 3], [u64; 3]),
    /// First and last CUDA runtime (`[major, minor]`).
    pub cuda: ([u64; 2], [u64; 2]),
    /// Lowest and highest compute capability (`[major, minor]`).
    pub cc: ([u64; 2], [u64; 2]),
    /// A Linux driver floor this row adds (9.10.2 for CUDA 12.8/12.9: 570.26).
    pub driver_linux: Option<&'static str>,
    /// The Windows driver floor this row adds.
    pub driver_windows: Option<&'static str>,
    /// The NVIDIA page the row was read from.
    pub source: &'static str,
}

/// The cuDNN support-matrix rows cuenv knows (see the module documentation for what is left
/// out): a cross-check of what the libraries' own fat binaries carry (docs/decisions.md 8;
/// unit test `every_row_agrees_with_the_fatbins_of_its_releases` against docs/fatbin-archs.tsv).
/// A profile whose set's GPU code is unknown and whose cuDNN and runtime match no row is
/// "not verified" for each GPU ([`NotVerified`]).
pub const ARCH_TABLE: &[ArchRow] = &[
    ArchRow {
        cudnn: ([8, 9, 1], [8, 9, 5]),
        cuda: ([11, 0], [12, 2]),
        cc: ([5, 0], [9, 0]),
        driver_linux: None,
        driver_windows: None,
        source: "https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-895/support-matrix/index.html",
    },
    // 9.10.2 for CUDA 12.8/12.9 adds Blackwell (10.0, 12.0) and needs driver >= 570.26 / 570.65.
    ArchRow {
        cudnn: ([9, 10, 2], [9, 10, 2]),
        cuda: ([12, 8], [12, 9]),
        cc: ([5, 0], [12, 0]),
        driver_linux: Some("570.26"),
        driver_windows: Some("570.65"),
        source: "https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html",
    },
    // The same page's rows for 9.10.2 with CUDA 11.x and 12.0-12.9 (Maxwell to Hopper, the family's driver floor).
    ArchRow {
        cudnn: ([9, 10, 2], [9, 10, 2]),
        cuda: ([11, 0], [12, 9]),
        cc: ([5, 0], [9, 0]),
        driver_linux: None,
        driver_windows: None,
        source: "https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html",
    },
    // Read on the 9.5.1 page; the 9.0.0 page (`.../cudnn/backend/v9.0.0/reference/support-matrix.html`)
    // lists the same 5.0-9.0 for CUDA 11.0-12.3. Not past 9.5.1: from 9.7.0 the cu12 wheels carry
    // sm_100/sm_120 (docs/fatbin-archs.tsv), which no page read here lists for those releases.
    ArchRow {
        cudnn: ([9, 0, 0], [9, 5, 1]),
        cuda: ([11, 0], [12, 9]),
        cc: ([5, 0], [9, 0]),
        driver_linux: None,
        driver_windows: None,
        source: "https://docs.nvidia.com/deeplearning/cudnn/backend/v9.5.1/reference/support-matrix.html",
    },
    ArchRow {
        cudnn: ([9, 17, 0], [9, 17, 0]),
        cuda: ([12, 0], [13, 1]),
        cc: ([7, 5], [12, 0]),
        driver_linux: None,
        driver_windows: None,
        source: "https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html",
    },
];

/// The driver floor of a CUDA major, when [`DRIVER_FLOORS`] has it.
pub fn driver_floor(cuda_major: u64) -> Option<&'static DriverFloor> {
    DRIVER_FLOORS.iter().find(|f| f.cuda_major == cuda_major)
}

/// A `major.minor` pair (CUDA versions, compute capabilities); JSON: the string `"12.6"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct MajorMinor(pub u64, pub u64);

impl Serialize for MajorMinor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for MajorMinor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

impl MajorMinor {
    /// `11.4` -> (11, 4); a bare `12` is 12.0. `None` for anything else.
    pub fn parse(s: &str) -> Option<MajorMinor> {
        let s = s.trim();
        let (a, b) = s.split_once('.').unwrap_or((s, "0"));
        Some(MajorMinor(a.parse().ok()?, b.parse().ok()?))
    }

    /// From the CUDA encoding `1000 * major + 10 * minor` (12060 = 12.6).
    pub fn from_cuda(v: u64) -> MajorMinor {
        MajorMinor(v / 1000, v % 1000 / 10)
    }
}

/// An override variable set to something that is not `major` or `major.minor`.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?} is not a version like {}", if *var == OVERRIDE_DRIVER_CUDA { "11.4" } else { "6.1" })]
pub struct BadOverride {
    /// The variable.
    pub var: &'static str,
    /// Its value (lossy).
    pub value: String,
}

impl Diagnose for BadOverride {
    fn hint(&self) -> Option<String> {
        Some(format!(
            "set {} to `major.minor` (e.g. {}), or unset it to use what the driver reports",
            self.var,
            if self.var == OVERRIDE_DRIVER_CUDA { "11.4" } else { "6.1" }
        ))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// The override variables as read from an environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `CUENV_OVERRIDE_DRIVER_CUDA`.
    pub driver_cuda: Option<MajorMinor>,
    /// `CUENV_OVERRIDE_COMPUTE_CAPABILITY`.
    pub compute_capability: Option<MajorMinor>,
}

impl Overrides {
    /// Reads the two variables from `env` (a complete environment); empty values count as
    /// unset. Errors: a value that is not `major.minor` (exit 2).
    pub fn from_env(env: &[(OsString, OsString)]) -> Result<Overrides, BadOverride> {
        let get = |var: &'static str| -> Result<Option<MajorMinor>, BadOverride> {
            let Some((_, v)) = env.iter().rev().find(|(k, _)| k == var) else { return Ok(None) };
            let s = v.to_string_lossy();
            if s.trim().is_empty() {
                return Ok(None);
            }
            MajorMinor::parse(&s).map(Some).ok_or_else(|| BadOverride { var, value: s.into_owned() })
        };
        Ok(Overrides { driver_cuda: get(OVERRIDE_DRIVER_CUDA)?, compute_capability: get(OVERRIDE_COMPUTE_CAPABILITY)? })
    }

    /// This process's overrides.
    pub fn from_process() -> Result<Overrides, BadOverride> {
        Overrides::from_env(&std::env::vars_os().collect::<Vec<_>>())
    }
}

/// One GPU as far as fit goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gpu {
    /// Ordinal.
    pub index: u32,
    /// Its name (`"(CUENV_OVERRIDE_COMPUTE_CAPABILITY)"` for a GPU only the override names).
    pub name: String,
    /// Compute capability.
    pub compute_capability: MajorMinor,
}

/// What this machine offers: the driver's CUDA version and release, and the GPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// The newest CUDA the driver supports (`cuDriverGetVersion`, or the override).
    pub driver_cuda: Option<MajorMinor>,
    /// The driver release (`580.65.06`), where NVML told it.
    pub driver_release: Option<String>,
    /// The GPUs (compute capability from the driver, or the override).
    pub gpus: Vec<Gpu>,
    /// The override variables that replaced what the probe saw.
    pub overridden: Vec<&'static str>,
}

impl Machine {
    /// The facts of a probe report (`None`: no report), with `ov` replacing what it names.
    pub fn from_report(report: Option<&Report>, ov: &Overrides) -> Machine {
        let mut m = Machine::default();
        if let Some(d) = report.and_then(|r| r.driver.as_ref()) {
            m.driver_cuda = d.version.filter(|v| *v > 0).map(|v| MajorMinor::from_cuda(v as u64));
            m.driver_release = d.release.clone();
            m.gpus = d
                .devices
                .iter()
                .map(|x| Gpu {
                    index: x.index,
                    name: x.name.clone(),
                    compute_capability: MajorMinor(x.compute_capability[0].max(0) as u64, x.compute_capability[1].max(0) as u64),
                })
                .collect();
        }
        if let Some(v) = ov.driver_cuda {
            m.driver_cuda = Some(v);
            m.overridden.push(OVERRIDE_DRIVER_CUDA);
        }
        if let Some(cc) = ov.compute_capability {
            if m.gpus.is_empty() {
                m.gpus.push(Gpu { index: 0, name: format!("({OVERRIDE_COMPUTE_CAPABILITY})"), compute_capability: cc });
            }
            for g in &mut m.gpus {
                g.compute_capability = cc;
            }
            m.overridden.push(OVERRIDE_COMPUTE_CAPABILITY);
        }
        m
    }

    /// How the driver's CUDA version is known, for messages: `` (set by CUENV_OVERRIDE_DRIVER_CUDA)``.
    fn driver_said(&self) -> String {
        let release = self.driver_release.as_deref().map(|r| format!(" {r}")).unwrap_or_default();
        if self.overridden.contains(&OVERRIDE_DRIVER_CUDA) {
            format!("the driver (CUDA version set by {OVERRIDE_DRIVER_CUDA})")
        } else {
            format!("the driver{release}")
        }
    }
}

/// What a profile needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// The cuDNN release.
    pub cudnn: Version,
    /// The CUDA runtime (`major.minor`; the minor is 0 where only the major is known).
    pub cuda: MajorMinor,
    /// Whether the minor of `cuda` is known.
    pub cuda_minor_known: bool,
    /// The GPU code the set's libraries carry (the store entry's record, docs/loader.md G1);
    /// `None` where nobody read it.
    pub code: Option<SetCode>,
}

/// The GPU code of a set: per library file name, the architectures its fat binary carries
/// ([`crate::sys::fatbin`]); libraries without GPU code are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetCode {
    /// Library file name -> its code.
    pub libraries: BTreeMap<String, GpuCode>,
    /// Libraries whose fat binary could not be read (`name: why`).
    pub unread: Vec<String>,
}

impl Want {
    /// From a cuDNN version and a CUDA runtime version text (`12.6.77`, `12.6`, `12`).
    pub fn new(cudnn: Version, cuda: &str, cuda_major: u64) -> Want {
        let parts: Vec<&str> = cuda.split('.').collect();
        match (parts.first().and_then(|m| m.parse::<u64>().ok()), parts.get(1).and_then(|m| m.parse::<u64>().ok())) {
            (Some(ma), Some(mi)) if ma == cuda_major || cuda_major == 0 => Want { cudnn, cuda: MajorMinor(ma, mi), cuda_minor_known: true, code: None },
            _ => Want { cudnn, cuda: MajorMinor(cuda_major, 0), cuda_minor_known: false, code: None },
        }
    }

    /// The same want, judged by the GPU code of its set (`(libraries, unread)` as
    /// [`crate::store::entry::EntryMeta::gpu_code_or_read`] returns them).
    pub fn with_code(mut self, code: Option<(BTreeMap<String, GpuCode>, Vec<String>)>) -> Want {
        self.code = code.map(|(libraries, unread)| SetCode { libraries, unread });
        self
    }

    fn cuda_shown(&self) -> String {
        if self.cuda_minor_known { self.cuda.to_string() } else { format!("{}.x", self.cuda.0) }
    }
}

/// Which fact rules a profile out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MisfitKind {
    /// The driver is of an older CUDA major than the runtime (or older than a row's floor).
    DriverTooOld,
    /// A GPU's compute capability is outside what this cuDNN supports.
    UnsupportedGpu,
}

/// One reason a profile cannot run here, in words, with what to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Misfit {
    /// The rule.
    pub kind: MisfitKind,
    /// The facts compared.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl fmt::Display for Misfit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.message, self.hint)
    }
}

/// Why the fit of a profile to a GPU could not be decided (docs/decisions.md 8): a warning,
/// never a refusal; `"unknown"` in `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotVerified {
    /// What is not known, naming the GPU and the release.
    pub message: String,
    /// What to do to know it.
    pub hint: String,
}

impl fmt::Display for NotVerified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.message, self.hint)
    }
}

/// The verdict on a profile's GPU fit, for `--json`: `fits`, `misfit` or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuVerdict {
    /// Every GPU runs the set (its libraries' code, or the table's row).
    Fits,
    /// Some fact rules the profile out ([`Misfit`]).
    Misfit,
    /// Neither the libraries' code nor a table row told (a [`NotVerified`]).
    Unknown,
}

/// What [`assess`] found: the misfits (each rules the profile out) and what it could not verify.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fit {
    /// Reasons the profile cannot run here.
    pub misfits: Vec<Misfit>,
    /// GPUs whose fit is not verified.
    pub not_verified: Vec<NotVerified>,
    /// Whether any GPU was judged (none known: no GPU verdict at all).
    pub judged_gpus: bool,
}

impl Fit {
    /// `None` when no GPU and no driver fact was judged.
    pub fn verdict(&self) -> Option<GpuVerdict> {
        if !self.misfits.is_empty() {
            Some(GpuVerdict::Misfit)
        } else if !self.not_verified.is_empty() {
            Some(GpuVerdict::Unknown)
        } else {
            self.judged_gpus.then_some(GpuVerdict::Fits)
        }
    }
}

fn ver3(v: &Version) -> [u64; 3] {
    [v.major(), v.minor(), v.patch()]
}

/// Compares dotted driver releases numerically (`525.60.13` < `570.26`).
fn release_lt(a: &str, b: &str) -> bool {
    let n = |s: &str| s.split('.').map(|p| p.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>();
    n(a) < n(b)
}

/// The reasons `want` cannot run on `m`; empty when it fits or nothing is known.
pub fn judge(m: &Machine, want: &Want) -> Vec<Misfit> {
    assess(m, want, "this profile's runtime is").misfits
}

/// [`judge`], naming the CUDA side of `want` as `subject` (`"this profile's runtime is"`,
/// `"it was built for CUDA"`).
pub fn judge_as(m: &Machine, want: &Want, subject: &str) -> Vec<Misfit> {
    assess(m, want, subject).misfits
}

/// The whole verdict on `want` running on `m` (docs/loader.md G1-G4): the driver against the
/// runtime's CUDA major and the family's floor; then each GPU against the code the set's
/// libraries carry (G1, the files decide), else against [`ARCH_TABLE`]'s row (G2), else
/// "not verified" (G3). `subject` names the CUDA side in messages (see [`judge_as`]).
pub fn assess(m: &Machine, want: &Want, subject: &str) -> Fit {
    let mut fit = Fit::default();
    let out = &mut fit.misfits;
    let windows = cfg!(windows);
    let floor = driver_floor(want.cuda.0);
    // `R525 or newer (>= 525.60.13)`.
    let floor_words = |f: &DriverFloor| {
        let exact = if windows { f.windows.map(|w| format!(" (>= {w})")).unwrap_or_default() } else { format!(" (>= {})", f.linux) };
        format!("R{} or newer{exact}", f.branch)
    };
    // 1. The driver's CUDA major against the runtime's (minor-version compatibility).
    if let Some(d) = m.driver_cuda
        && d.0 < want.cuda.0
    {
        let update =
            floor.map(|f| format!("update the driver to {}", floor_words(f))).unwrap_or_else(|| format!("update the driver to one for CUDA {}", want.cuda.0));
        out.push(Misfit {
            kind: MisfitKind::DriverTooOld,
            message: format!("{} supports CUDA <= {d}; {subject} {}", m.driver_said(), want.cuda_shown()),
            hint: format!("{update}, or use a CUDA {} profile", d.0),
        });
        return fit;
    }
    // 2. The driver release against the family's floor, where NVML told it.
    if let (Some(rel), Some(f)) = (m.driver_release.as_deref(), floor) {
        let need = if windows { f.windows } else { Some(f.linux) };
        if let Some(need) = need
            && release_lt(rel, need)
        {
            out.push(Misfit {
                kind: MisfitKind::DriverTooOld,
                message: format!("the driver {rel} is older than {need}, the oldest that runs CUDA {} runtimes", want.cuda.0),
                hint: format!("update the driver to {}", floor_words(f)),
            });
            return fit;
        }
    }
    // 3. The GPUs against the code the libraries carry, else the support matrix's row.
    if m.gpus.is_empty() {
        return fit;
    }
    fit.judged_gpus = true;
    let out = &mut fit.misfits;
    let v = ver3(&want.cudnn);
    let mut rows: Vec<&ArchRow> = ARCH_TABLE
        .iter()
        .filter(|r| r.cudnn.0 <= v && v <= r.cudnn.1)
        .filter(|r| {
            let c = [want.cuda.0, want.cuda.1];
            if want.cuda_minor_known { r.cuda.0 <= c && c <= r.cuda.1 } else { r.cuda.0[0] <= c[0] && c[0] <= r.cuda.1[0] }
        })
        .collect();
    // A row that needs no more than the family's driver floor is tried first.
    rows.sort_by_key(|r| r.driver_linux.is_some() || r.driver_windows.is_some());
    let said = if m.overridden.contains(&OVERRIDE_COMPUTE_CAPABILITY) { format!(" (set by {OVERRIDE_COMPUTE_CAPABILITY})") } else { String::new() };
    let code = want.code.as_ref().filter(|c| !c.libraries.is_empty());
    for g in &m.gpus {
        let cc = [g.compute_capability.0, g.compute_capability.1];
        let fits = |r: &&ArchRow| r.cc.0 <= cc && cc <= r.cc.1;
        // G1: the files decide. Every library that carries GPU code must carry some this GPU runs.
        if let Some(code) = code {
            let (ma, mi) = (g.compute_capability.0, g.compute_capability.1);
            let lacking: Vec<(&String, &GpuCode)> = code.libraries.iter().filter(|(_, c)| !c.runs_on(ma, mi)).collect();
            if let Some((lib, c)) = lacking.first() {
                let lowest = c.sass.iter().chain(&c.ptx).min().copied().unwrap_or(0);
                let old = u64::from(lowest) > ma * 10 + mi;
                let more = if lacking.len() > 1 {
                    format!(" (and {} more: {})", lacking.len() - 1, lacking[1..].iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
                } else {
                    String::new()
                };
                out.push(Misfit {
                    kind: MisfitKind::UnsupportedGpu,
                    message: format!(
                        "GPU {} {} has compute capability {}{said}; cuDNN {}'s {lib} carries {}, none of which runs on it{more} (this GPU is too {})",
                        g.index,
                        g.name,
                        g.compute_capability,
                        want.cudnn,
                        c.describe(),
                        if old { "old" } else { "new" }
                    ),
                    hint: format!(
                        "use a profile with {} (the architectures are read from the libraries' fat binaries)",
                        if old {
                            "a cuDNN release whose libraries still carry code for it"
                        } else {
                            "a newer cuDNN (and CUDA runtime) whose libraries carry code for it"
                        }
                    ),
                });
                continue;
            }
            // Runs only by the driver JIT-compiling PTX, and no row of NVIDIA's matrix says it is supported.
            if let Some((lib, c)) = code.libraries.iter().find(|(_, c)| c.only_jit(ma, mi))
                && !rows.iter().any(fits)
            {
                fit.not_verified.push(NotVerified {
                    message: format!(
                        "not verified for this GPU: GPU {} {} (compute capability {}{said}) can run cuDNN {}'s {lib} ({}) only by JIT-compiling its PTX, and cuenv's table has no row of NVIDIA's support matrix that lists it",
                        g.index,
                        g.name,
                        g.compute_capability,
                        want.cudnn,
                        c.describe()
                    ),
                    hint: "run `cuenv check` with a convolution (check = \"conv\") to see it work, or use a cuDNN release built for this GPU".into(),
                });
            }
            if !code.unread.is_empty() {
                fit.not_verified.push(NotVerified {
                    message: format!("not verified for this GPU: the GPU code of {} could not be read", code.unread.join("; ")),
                    hint: "re-import the release with `cuenv store add` (a damaged file is named by `cuenv store verify`)".into(),
                });
            }
        } else if rows.is_empty() {
            // G3: no reading of the files and no row: say so, never "fine" (decisions.md 8).
            fit.not_verified.push(NotVerified {
                message: format!(
                    "not verified for this GPU: GPU {} {} (compute capability {}{said}) with cuDNN {} for CUDA {}: the libraries' GPU code was not read and cuenv's table of NVIDIA's support matrix has no row for this release",
                    g.index,
                    g.name,
                    g.compute_capability,
                    want.cudnn,
                    want.cuda_shown()
                ),
                hint: format!("re-add the release with `cuenv store add` (it reads the architectures its libraries carry), or see NVIDIA's support matrix for cuDNN {}", want.cudnn),
            });
            continue;
        }
        let Some(row) = rows.iter().copied().find(fits) else {
            if code.is_some() || rows.is_empty() {
                continue;
            }
            let lo = rows.iter().map(|r| r.cc.0).min().unwrap_or([0, 0]);
            let hi = rows.iter().map(|r| r.cc.1).max().unwrap_or([0, 0]);
            let (too, what) =
                if cc < lo { ("old", "a cuDNN release that still supports it") } else { ("new", "a newer cuDNN (and CUDA runtime) that supports it") };
            out.push(Misfit {
                kind: MisfitKind::UnsupportedGpu,
                message: format!(
                    "GPU {} {} has compute capability {}{said}; cuDNN {} with CUDA {} supports {}.{} to {}.{} (this GPU is too {too})",
                    g.index,
                    g.name,
                    g.compute_capability,
                    want.cudnn,
                    want.cuda_shown(),
                    lo[0],
                    lo[1],
                    hi[0],
                    hi[1]
                ),
                hint: format!("use a profile with {what} (NVIDIA's cuDNN support matrix lists them)"),
            });
            continue;
        };
        // The row that admits this GPU may need a newer driver than the CUDA family does.
        let need = if windows { row.driver_windows } else { row.driver_linux };
        if let (Some(need), Some(rel)) = (need, m.driver_release.as_deref())
            && release_lt(rel, need)
        {
            out.push(Misfit {
                kind: MisfitKind::DriverTooOld,
                message: format!(
                    "GPU {} {} (compute capability {}) needs cuDNN {} with CUDA {} on driver {need} or newer; the driver is {rel}",
                    g.index,
                    g.name,
                    g.compute_capability,
                    want.cudnn,
                    want.cuda_shown()
                ),
                hint: format!("update the driver to {need} or newer"),
            });
        }
    }
    fit
}

/// `apply` refuses profiles that cannot run here (`--force` overrides).
#[derive(Debug, thiserror::Error)]
#[error("{}", self.render())]
pub struct Refusal {
    /// (profile, why) for each profile ruled out.
    pub profiles: Vec<(String, Vec<Misfit>)>,
    /// The generation current when the apply was refused (`None`: none is).
    pub current: Option<u64>,
    /// Whether the apply would have checked the profiles (not `--no-check`).
    pub checked: bool,
}

impl Refusal {
    fn render(&self) -> String {
        let mut s = String::new();
        for (i, (p, why)) in self.profiles.iter().enumerate() {
            if i > 0 {
                s.push('\n');
            }
            let msgs: Vec<String> = why.iter().map(|m| m.to_string()).collect();
            s.push_str(&format!("profile {p} cannot run on this machine: {}", msgs.join("; ")));
        }
        s
    }
}

impl Diagnose for Refusal {
    /// What `--force` does from here: with the check on, the check fails on the same rule
    /// ([`crate::check::CheckResult::add_misfits`]) and apply switches back to the generation
    /// current now, or to none; only `--no-check` keeps the forced generation.
    fn hint(&self) -> Option<String> {
        let force = if self.checked {
            let back = match self.current {
                Some(n) => format!("generation {n} stays current"),
                None => "no generation is current".into(),
            };
            format!(
                "`cuenv apply --force` builds and switches to it anyway, but its check fails on the same rule, so the apply is undone and {back}; `--force --no-check` keeps it without a check"
            )
        } else {
            "`cuenv apply --force --no-check` makes it current anyway (`cuenv check` then fails on the same rule)".into()
        };
        Some(format!("nothing was built or switched; {force}; {OVERRIDE_DRIVER_CUDA} and {OVERRIDE_COMPUTE_CAPABILITY} plan for another machine"))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::CheckFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(driver: Option<&str>, release: Option<&str>, cc: &[&str]) -> Machine {
        Machine {
            driver_cuda: driver.and_then(MajorMinor::parse),
            driver_release: release.map(str::to_string),
            gpus: cc.iter().enumerate().map(|(i, c)| Gpu { index: i as u32, name: "G".into(), compute_capability: MajorMinor::parse(c).unwrap() }).collect(),
            overridden: Vec::new(),
        }
    }

    fn want(cudnn: &str, cuda: &str) -> Want {
        Want::new(cudnn.parse().unwrap(), cuda, cuda.split('.').next().unwrap().parse().unwrap())
    }

    #[test]
    fn an_older_driver_major_rules_out_the_runtime() {
        let m = judge(&machine(Some("11.4"), None, &[]), &want("9.5.0", "12.6.77"));
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].kind, MisfitKind::DriverTooOld);
        assert_eq!(m[0].message, "the driver supports CUDA <= 11.4; this profile's runtime is 12.6");
        let floor = if cfg!(windows) { "527.41" } else { "525.60.13" };
        assert_eq!(m[0].hint, format!("update the driver to R525 or newer (>= {floor}), or use a CUDA 11 profile"));
        // Minor-version compatibility: an 12.0 driver runs a 12.6 runtime.
        assert!(judge(&machine(Some("12.0"), None, &[]), &want("9.5.0", "12.6")).is_empty());
        assert!(judge(&machine(Some("13.0"), None, &["9.0"]), &want("9.5.0", "12.6")).is_empty());
        // Nothing known: no verdict.
        assert!(judge(&Machine::default(), &want("9.5.0", "12.6")).is_empty());
    }

    #[test]
    fn a_release_below_the_family_floor_is_too_old() {
        if cfg!(windows) {
            return;
        }
        let m = judge(&machine(Some("11.0"), Some("450.51.05"), &[]), &want("8.9.4", "11.8"));
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].message.contains("450.51.05 is older than 450.80.02"), "{}", m[0]);
        assert!(judge(&machine(Some("11.0"), Some("450.80.02"), &[]), &want("8.9.4", "11.8")).is_empty());
    }

    #[test]
    fn compute_capability_by_release_and_runtime() {
        // 9.5 supports 5.0-9.0: Pascal fits, Blackwell does not.
        assert!(judge(&machine(Some("12.6"), None, &["6.1"]), &want("9.5.0", "12.6")).is_empty());
        let m = judge(&machine(Some("12.8"), None, &["12.0"]), &want("9.5.0", "12.6"));
        assert_eq!(m[0].kind, MisfitKind::UnsupportedGpu);
        assert!(m[0].message.contains("supports 5.0 to 9.0 (this GPU is too new)"), "{}", m[0]);
        // 9.10.2 with a 12.8 runtime adds 10.0/12.0, on driver >= 570.26.
        assert!(judge(&machine(Some("12.8"), None, &["12.0"]), &want("9.10.2", "12.8")).is_empty());
        if !cfg!(windows) {
            let m = judge(&machine(Some("12.8"), Some("565.57.01"), &["12.0"]), &want("9.10.2", "12.8"));
            assert_eq!(m[0].kind, MisfitKind::DriverTooOld, "{m:?}");
            assert!(m[0].message.contains("on driver 570.26 or newer; the driver is 565.57.01"), "{}", m[0]);
            // A Hopper GPU needs no more than the family floor from that row.
            assert!(judge(&machine(Some("12.8"), Some("565.57.01"), &["9.0"]), &want("9.10.2", "12.8")).is_empty());
        }
        // ... and with a 12.6 runtime 9.10.2 stops at 9.0.
        assert_eq!(judge(&machine(Some("12.8"), None, &["12.0"]), &want("9.10.2", "12.6"))[0].kind, MisfitKind::UnsupportedGpu);
        // 9.17.0 starts at 7.5: Pascal and Volta are too old for it.
        for cc in ["6.1", "7.0"] {
            let m = judge(&machine(Some("13.0"), None, &[cc]), &want("9.17.0", "13.0"));
            assert!(m[0].message.contains("supports 7.5 to 12.0 (this GPU is too old)"), "{}", m[0]);
        }
        // A release the table does not cover, whose files were not read: not verified (G3),
        // never silence and never a refusal.
        let fit = assess(&machine(Some("13.0"), None, &["6.1"]), &want("9.12.0", "13.0"), "x");
        assert!(fit.misfits.is_empty(), "{fit:?}");
        assert_eq!(fit.verdict(), Some(GpuVerdict::Unknown));
        assert!(
            fit.not_verified[0].message.starts_with("not verified for this GPU: GPU 0 G (compute capability 6.1) with cuDNN 9.12.0 for CUDA 13.0"),
            "{:?}",
            fit.not_verified
        );
        assert!(fit.not_verified[0].hint.contains("cuenv store add"), "{:?}", fit.not_verified);
        // Within the table: fits, and says so.
        assert_eq!(assess(&machine(Some("12.6"), None, &["6.1"]), &want("9.5.0", "12.6"), "x").verdict(), Some(GpuVerdict::Fits));
        // No GPU known: no GPU verdict.
        assert_eq!(assess(&machine(Some("12.6"), None, &[]), &want("9.12.0", "12.6"), "x").verdict(), None);
    }

    fn code(libs: &[(&str, &[u32], &[u32])]) -> Option<(BTreeMap<String, GpuCode>, Vec<String>)> {
        Some((libs.iter().map(|(n, s, p)| (n.to_string(), GpuCode { sass: s.to_vec(), ptx: p.to_vec() })).collect(), Vec::new()))
    }

    #[test]
    fn the_libraries_code_decides_before_the_table() {
        // 9.12's cnn as read from the real cu13 wheel: sm_75 and up. Pascal cannot run it
        // although no row of the table covers 9.12.
        let w = want("9.12.0", "13.0").with_code(code(&[("libcudnn_cnn.so.9", &[75, 80, 86, 90, 100, 120], &[120]), ("libcudnn_ops.so.9", &[75, 90], &[])]));
        let fit = assess(&machine(Some("13.0"), None, &["6.1"]), &w, "x");
        assert_eq!(fit.misfits.len(), 1, "{fit:?}");
        assert_eq!(fit.misfits[0].kind, MisfitKind::UnsupportedGpu);
        assert_eq!(
            fit.misfits[0].message,
            "GPU 0 G has compute capability 6.1; cuDNN 9.12.0's libcudnn_cnn.so.9 carries SASS sm_75 to sm_120 (6 architectures), PTX compute_120, none of which runs on it (and 1 more: libcudnn_ops.so.9) (this GPU is too old)"
        );
        // Turing runs it: fits with no row at all.
        assert_eq!(assess(&machine(Some("13.0"), None, &["7.5"]), &w, "x").verdict(), Some(GpuVerdict::Fits));
        // The files win over the table: 9.17.0's row starts at 7.5, a 9.17 set carrying sm_70 runs on Volta.
        let volta = want("9.17.0", "13.0").with_code(code(&[("libcudnn_cnn.so.9", &[70, 75], &[])]));
        assert!(judge(&machine(Some("13.0"), None, &["7.0"]), &volta).is_empty());
        // Only through PTX JIT, and no row lists the GPU: not verified.
        let jit = want("9.5.0", "12.6").with_code(code(&[("libcudnn_cnn.so.9", &[50, 90], &[90])]));
        let fit = assess(&machine(Some("12.8"), None, &["12.0"]), &jit, "x");
        assert!(fit.misfits.is_empty(), "{fit:?}");
        assert!(fit.not_verified[0].message.contains("only by JIT-compiling its PTX"), "{fit:?}");
        // A set without any GPU code (stand-in files) is judged by the table.
        let none = want("9.5.0", "12.6").with_code(Some((BTreeMap::new(), Vec::new())));
        assert_eq!(judge(&machine(Some("12.8"), None, &["12.0"]), &none)[0].kind, MisfitKind::UnsupportedGpu);
    }

    /// docs/fatbin-archs.tsv (scripts/derive-fatbin-archs.py: the fat binary of one library of
    /// every cuDNN release on PyPI) against [`ARCH_TABLE`]: each release a row covers (cuDNN
    /// range, CUDA variant) has SASS from the row's lowest compute capability up to its highest
    /// major; every row covers some release. Lists the releases past the table's rows.
    #[test]
    fn every_row_agrees_with_the_fatbins_of_its_releases() {
        let tsv = include_str!("../../docs/fatbin-archs.tsv");
        let mut covered = vec![0usize; ARCH_TABLE.len()];
        let mut past = Vec::new();
        for line in tsv.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            let variant: u64 = f[0].rsplit("-cu").next().unwrap().parse().unwrap();
            let v: Version = f[1].parse().unwrap();
            let sass: Vec<u32> = f[4].split(',').filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect();
            let (lo, hi) = (*sass.iter().min().unwrap(), *sass.iter().max().unwrap());
            let rows: Vec<usize> = (0..ARCH_TABLE.len())
                .filter(|&i| {
                    let r = &ARCH_TABLE[i];
                    r.cudnn.0 <= ver3(&v) && ver3(&v) <= r.cudnn.1 && r.cuda.0[0] <= variant && variant <= r.cuda.1[0]
                })
                .collect();
            if rows.is_empty() {
                past.push(format!("{} {}", f[0], f[1]));
                continue;
            }
            let agrees = |r: &ArchRow| r.cc.0 == [u64::from(lo) / 10, u64::from(lo) % 10] && r.cc.1[0] == u64::from(hi) / 10;
            assert!(
                rows.iter().any(|&i| agrees(&ARCH_TABLE[i])),
                "{} {}: the libraries carry SASS sm_{lo} to sm_{hi}; the table's rows say {:?}",
                f[0],
                f[1],
                rows.iter().map(|&i| (ARCH_TABLE[i].cc, ARCH_TABLE[i].source)).collect::<Vec<_>>()
            );
            for i in rows {
                covered[i] += 1;
            }
        }
        for (i, n) in covered.iter().enumerate() {
            assert!(*n > 0, "row {:?} covers no release of docs/fatbin-archs.tsv", ARCH_TABLE[i]);
        }
        assert!(past.len() > 40, "{past:?}");
        eprintln!("past the table's rows (judged by their files only): {}", past.join(", "));
    }

    #[test]
    fn overrides_replace_what_the_probe_saw() {
        let env = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect::<Vec<_>>();
        let ov = Overrides::from_env(&env(&[(OVERRIDE_DRIVER_CUDA, "11.4"), (OVERRIDE_COMPUTE_CAPABILITY, "6.1")])).unwrap();
        assert_eq!(ov, Overrides { driver_cuda: Some(MajorMinor(11, 4)), compute_capability: Some(MajorMinor(6, 1)) });
        let m = Machine::from_report(None, &ov);
        assert_eq!(m.driver_cuda, Some(MajorMinor(11, 4)));
        assert_eq!(m.gpus.len(), 1);
        let mis = judge(&m, &want("9.5.0", "12.6"));
        assert!(mis[0].message.starts_with("the driver (CUDA version set by CUENV_OVERRIDE_DRIVER_CUDA) supports CUDA <= 11.4"), "{}", mis[0]);
        assert!(Overrides::from_env(&env(&[(OVERRIDE_DRIVER_CUDA, "")])).unwrap().driver_cuda.is_none());
        let e = Overrides::from_env(&env(&[(OVERRIDE_COMPUTE_CAPABILITY, "sm_61")])).unwrap_err();
        assert_eq!(e.to_string(), "CUENV_OVERRIDE_COMPUTE_CAPABILITY=\"sm_61\" is not a version like 6.1");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }

    #[test]
    fn every_row_is_ordered_and_cites_nvidia() {
        for r in ARCH_TABLE {
            assert!(r.cudnn.0 <= r.cudnn.1 && r.cuda.0 <= r.cuda.1 && r.cc.0 <= r.cc.1, "{r:?}");
            assert!(r.source.starts_with("https://docs.nvidia.com/"), "{r:?}");
        }
    }
}
