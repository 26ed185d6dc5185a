//! What the modules outside `generation` get from a generation: a profile's activation
//! through its view (or the real folders when link-free), its exported environment, and the
//! side of a generation that exported artifacts follow (`env::follow`).

use super::*;

/// The activation of profile `view` of a generation built in `mode`: the real folders in the
/// link-free mode ([`ViewRecord::real_folders`]), else through the stable path
/// `<home>/profiles/<name>` ([`crate::env::view::activation`]). Shims, `cuenv env`, exports and
/// the check all take theirs from here (docs/decisions.md 4).
pub fn activation_of(layout: &Layout, mode: ViewMode, view: &ViewRecord, platform: crate::cudnn::platform::Platform) -> crate::shim::Activation {
    if mode.is_link_free() {
        crate::env::view::activation_at(&view.name, &view.real_folders(), platform)
    } else {
        crate::env::view::activation(layout, &view.name, platform)
    }
}

/// Where `view`'s linker scripts are ([`crate::env::build`]): through the stable path
/// `<home>/profiles/<p>/build-lib` in the link modes, the entry's own
/// `<home>/store/.build/<entry>/lib` in the link-free mode.
pub fn build_lib(layout: &Layout, mode: ViewMode, view: &ViewRecord) -> std::path::PathBuf {
    if mode.is_link_free() {
        layout.entry_build_lib(&view.cudnn_name)
    } else {
        crate::env::view::stable_home(layout).join("profiles").join(&view.name).join(crate::env::build::BUILD_LIB)
    }
}

/// Profile `name`'s activation as the current generation makes it ([`activation_of`]);
/// through the stable path when there is no current generation or it lacks `name`.
pub fn activation(layout: &Layout, name: &str, platform: crate::cudnn::platform::Platform) -> crate::shim::Activation {
    match current_manifest(layout) {
        Some(m) if m.link_mode.is_link_free() => match m.profile(name) {
            Ok(v) => activation_of(layout, m.link_mode, v, platform),
            Err(_) => crate::env::view::activation(layout, name, platform),
        },
        _ => crate::env::view::activation(layout, name, platform),
    }
}

/// The exported environment of `profile` for `platform` ([`activation`]: through the stable
/// paths; in the link-free mode the real folders, as of the current generation).
pub fn exported(layout: &Layout, profile: &str, platform: crate::cudnn::platform::Platform) -> crate::env::export::Exported {
    let direct = current_manifest(layout).is_some_and(|m| m.link_mode.is_link_free() && m.profile(profile).is_ok());
    crate::env::export::from_activation(activation(layout, profile, platform), profile, direct)
}

/// The exported environment of every profile of generation `m` (whether or not it is
/// current), as [`activation_of`] gives it: what a switch rewrites followed exports and
/// kernelspecs with (the `follow` module).
pub fn follow_side(layout: &Layout, m: &Manifest, platform: crate::cudnn::platform::Platform) -> crate::env::follow::Side {
    crate::env::follow::Side {
        link_free: m.link_mode.is_link_free(),
        profiles: m
            .profiles
            .iter()
            .map(|v| {
                (v.name.clone(), crate::env::export::from_activation(activation_of(layout, m.link_mode, v, platform), &v.name, m.link_mode.is_link_free()))
            })
            .collect(),
    }
}
