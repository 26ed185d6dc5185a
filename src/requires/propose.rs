//! A profile that satisfies every framework of an env ([`propose`]): the cuDNN release and the
//! CUDA major the frameworks' requirements ([`super::needs`]) leave, where each would come from
//! (a store entry, else PyPI's `nvidia-cudnn-cuNN` wheels), and which requirement decided each.
//! Where no single cuDNN or CUDA major serves all of them, one profile per major.

use super::{Lib, Need, Spec, Verdict};

/// The cuDNN a proposal names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudnnFrom {
    /// A store entry: its name (`cudnn-9.5.0.50-cuda12-linux-x86_64-1c3dee487c8a`) and version.
    Store { id: String, version: String },
    /// PyPI's wheel of this version or prefix (`9.1.0.70` for an exact pin; `9`, the newest
    /// 9.x, when the requirements give floors only).
    Pypi { version: String },
}

/// One proposed profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The frameworks it serves (`torch 2.4.1`), in the order first read.
    pub frameworks: Vec<String>,
    /// The CUDA major (`cuda = "12"`: the newest toolkit root of that major) and the
    /// requirements that decided it (`torch 2.4.1: nvidia-cuda-runtime-cu12==12.1.105`).
    pub cuda: Option<(u64, Vec<String>)>,
    /// The cuDNN, and the requirements that decided it.
    pub cudnn: Option<(CudnnFrom, Vec<String>)>,
}

/// What [`propose`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// One profile serves every framework.
    One(Proposal),
    /// The frameworks need two or more cuDNN or CUDA majors: one profile per major, each for
    /// the frameworks of that major (a process loads one cuDNN).
    Split(Vec<Proposal>),
    /// No framework of the env states a requirement on cuDNN or CUDA.
    Nothing,
}

fn said(n: &Need) -> String {
    format!("{}: {}", n.framework, n.text)
}

fn major_of(n: &Need) -> Option<u64> {
    n.floor().map(|f| f.0)
}

/// Whether `version` serves every need of `lib` in `needs` (no [`Verdict::Misfit`] or
/// not-verified), and how many it fits exactly.
fn serves(needs: &[&Need], version: &str) -> Option<usize> {
    let mut exact = 0;
    for n in needs {
        match n.judge(version) {
            Verdict::Fits => exact += 1,
            Verdict::Newer(_) => {}
            Verdict::Misfit(_) => return None,
            Verdict::NotVerified(_) => {}
        }
    }
    Some(exact)
}

/// The cuDNN for `needs` (all of one major): the store entry (`store`: (id, version)) that
/// serves all of them, exact fits first, then the newest; else PyPI: an exact pin that serves
/// all, else the major alone (the newest release serves every floor).
fn choose_cudnn(needs: &[&Need], store: &[&(String, String, u64)]) -> Option<CudnnFrom> {
    let mut best: Option<(usize, crate::cudnn::version::Version, &(String, String, u64))> = None;
    for e in store.iter().copied() {
        let Ok(v) = e.1.parse::<crate::cudnn::version::Version>() else { continue };
        let Some(exact) = serves(needs, &e.1) else { continue };
        if best.as_ref().is_none_or(|(x, bv, _)| (exact, &v) > (*x, bv)) {
            best = Some((exact, v, e));
        }
    }
    if let Some((_, _, (id, version, _))) = best {
        return Some(CudnnFrom::Store { id: id.clone(), version: version.clone() });
    }
    for n in needs {
        if let Spec::Pip(s) = &n.spec
            && let [one] = &s[..]
            && *one.operator() == pep508_rs::pep440_rs::Operator::Equal
        {
            let v = one.version().to_string();
            if serves(needs, &v).is_some() {
                return Some(CudnnFrom::Pypi { version: v });
            }
        }
    }
    // The floors only: the newest release of their major serves every floor (a newer minor
    // works), so the major alone (`9`: the newest 9.x PyPI has).
    let major = needs.iter().filter_map(|n| n.floor()).map(|f| f.0).max()?;
    Some(CudnnFrom::Pypi { version: major.to_string() })
}

/// The proposal for the needs of one group (one cuDNN major, one CUDA major at most).
fn one(needs: &[&Need], store: &[(String, String, u64)]) -> Proposal {
    let mut frameworks: Vec<String> = Vec::new();
    for n in needs {
        if !frameworks.contains(&n.framework) {
            frameworks.push(n.framework.clone());
        }
    }
    let of = |lib: Lib| needs.iter().copied().filter(|n| n.lib == lib).collect::<Vec<&Need>>();
    let cuda_needs = of(Lib::Cuda);
    let cuda = cuda_needs.iter().find_map(|n| major_of(n)).map(|m| (m, cuda_needs.iter().map(|n| said(n)).collect()));
    let cudnn_needs = of(Lib::Cudnn);
    // Store entries for the CUDA major the frameworks need (any, when none says one).
    let store: Vec<&(String, String, u64)> = store.iter().filter(|e| cuda.as_ref().is_none_or(|(m, _)| *m == e.2)).collect();
    let cudnn = choose_cudnn(&cudnn_needs, &store).map(|c| (c, cudnn_needs.iter().map(|n| said(n)).collect()));
    Proposal { frameworks, cuda, cudnn }
}

/// The (cuDNN, CUDA) majors a group of frameworks needs (`None`: none of them says).
type Majors = (Option<u64>, Option<u64>);

/// The profile(s) that satisfy `needs`, with the store's entries `store` ((id, version, CUDA
/// major) of this platform) as the first place to take cuDNN from. Requirements without a floor are
/// left out of the choice (they are judged, and said, by `apply`).
pub fn propose(needs: &[Need], store: &[(String, String, u64)]) -> Outcome {
    let judged: Vec<&Need> = needs.iter().filter(|n| n.floor().is_some()).collect();
    if judged.is_empty() {
        return Outcome::Nothing;
    }
    // Group the frameworks by the (cuDNN major, CUDA major) their requirements give.
    let key = |f: &str, lib: Lib| judged.iter().filter(|n| n.framework == f && n.lib == lib).find_map(|n| major_of(n));
    let mut groups: Vec<(Majors, Vec<String>)> = Vec::new();
    for n in &judged {
        let k = (key(&n.framework, Lib::Cudnn), key(&n.framework, Lib::Cuda));
        match groups.iter_mut().find(|(g, _)| g.0.is_none_or(|x| k.0.is_none_or(|y| x == y)) && g.1.is_none_or(|x| k.1.is_none_or(|y| x == y))) {
            Some((g, fs)) => {
                g.0 = g.0.or(k.0);
                g.1 = g.1.or(k.1);
                if !fs.contains(&n.framework) {
                    fs.push(n.framework.clone());
                }
            }
            None => groups.push((k, vec![n.framework.clone()])),
        }
    }
    let mut out: Vec<Proposal> =
        groups.iter().map(|(_, fs)| one(&judged.iter().copied().filter(|n| fs.contains(&n.framework)).collect::<Vec<_>>(), store)).collect();
    if out.len() == 1 { Outcome::One(out.remove(0)) } else { Outcome::Split(out) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pip(framework: &str, lib: Lib, spec: &str, name: &str) -> Need {
        Need { framework: framework.into(), file: "METADATA".into(), lib, spec: Spec::Pip(spec.parse().unwrap()), text: format!("{name}{spec}") }
    }

    #[test]
    fn one_profile_takes_a_store_entry_that_serves_every_framework() {
        // torch 2.4.1's pins and jax-cuda12-plugin 0.4.35's range (real METADATA).
        let needs = [
            pip("torch 2.4.1", Lib::Cudnn, "==9.1.0.70", "nvidia-cudnn-cu12"),
            pip("torch 2.4.1", Lib::Cuda, "==12.1.105", "nvidia-cuda-runtime-cu12"),
            pip("jax-cuda12-plugin 0.4.35", Lib::Cudnn, ">=9.1,<10.0", "nvidia-cudnn-cu12"),
        ];
        let store = [
            ("cudnn-8.9.7.29".to_string(), "8.9.7.29".to_string(), 12),
            ("cudnn-9.6.0.74-cu11".to_string(), "9.6.0.74".to_string(), 11),
            ("cudnn-9.5.0.50".to_string(), "9.5.0.50".to_string(), 12),
        ];
        let Outcome::One(p) = propose(&needs, &store) else { panic!() };
        assert_eq!(p.cudnn.as_ref().unwrap().0, CudnnFrom::Store { id: "cudnn-9.5.0.50".into(), version: "9.5.0.50".into() });
        assert_eq!(p.cuda.as_ref().unwrap().0, 12);
        assert_eq!(p.frameworks, ["torch 2.4.1", "jax-cuda12-plugin 0.4.35"]);
        // Nothing in the store: torch's exact pin serves both, from PyPI.
        let Outcome::One(p) = propose(&needs, &[]) else { panic!() };
        assert_eq!(p.cudnn.unwrap().0, CudnnFrom::Pypi { version: "9.1.0.70".into() });
        // A floor above the pin (a jaxlib that wants 9.13): the pin no longer serves; the floor does.
        let needs = [needs[0].clone(), pip("jax 0.7.2", Lib::Cudnn, ">=9.13.1.26,<10", "nvidia-cudnn-cu12")];
        let Outcome::One(p) = propose(&needs, &[]) else { panic!() };
        assert_eq!(p.cudnn.unwrap().0, CudnnFrom::Pypi { version: "9".into() });
    }

    #[test]
    fn frameworks_of_two_majors_get_one_profile_each() {
        let needs = [
            pip("torch 2.4.1", Lib::Cudnn, "==9.1.0.70", "nvidia-cudnn-cu12"),
            Need {
                framework: "ctranslate2 3.24.0".into(),
                file: "lib".into(),
                lib: Lib::Cudnn,
                spec: Spec::BuiltWith(8, None),
                text: "libctranslate2.so names libcudnn.so.8".into(),
            },
        ];
        let Outcome::Split(ps) = propose(&needs, &[]) else { panic!() };
        assert_eq!(ps.iter().map(|p| p.frameworks.clone()).collect::<Vec<_>>(), [vec!["torch 2.4.1".to_string()], vec!["ctranslate2 3.24.0".to_string()]]);
        assert_eq!(ps[1].cudnn.as_ref().unwrap().0, CudnnFrom::Pypi { version: "8".into() });
        assert_eq!(propose(&[], &[]), Outcome::Nothing);
    }
}
