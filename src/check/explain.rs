//! The wording of check reasons: what loader messages, Windows loader codes, cuDNN status
//! names and abnormal process ends mean, in words; and the decoding of CUDA's and cuDNN's
//! integer version encodings.
//!
//! Pure functions of their inputs: no I/O.

use super::ProbeEnd;

/// Library names cuDNN or the loader said they could not find, in order, deduplicated:
/// "Could not locate X" (Windows), "Could not load library X." (8.x), "Unable to load any of
/// {X.9.5.0, X.9.5, X.9, X}" (9.x), "X: cannot open shared object file" (dlerror).
pub fn missing_libraries(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim().trim_end_matches(['.', ':', ',', '!']).trim_matches(['"', '\'']);
        let s = s.rsplit(['/', '\\']).next().unwrap_or(s);
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for line in text.lines() {
        for marker in ["Could not locate ", "Could not load library "] {
            if let Some(i) = line.find(marker)
                && let Some(name) = line[i + marker.len()..].split_whitespace().next()
            {
                push(name);
            }
        }
        if let Some(i) = line.find("Unable to load any of {") {
            let list = &line[i + "Unable to load any of {".len()..];
            let list = list.split('}').next().unwrap_or(list);
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            // Prefer the plain soname: `libX.so.<major>`.
            let pick =
                names.iter().find(|n| n.rsplit_once(".so.").is_some_and(|(_, v)| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))).or(names.first());
            if let Some(n) = pick {
                push(n);
            }
        }
        if let Some(i) = line.find(": cannot open shared object file") {
            let before = &line[..i];
            let name = before.rsplit([' ', '\t']).next().unwrap_or(before);
            push(name);
        }
    }
    out
}

/// The meaning of a Windows loader error code, in words.
pub fn explain_windows_error(code: i64) -> Option<&'static str> {
    Some(match code {
        126 => {
            "error 126 (ERROR_MOD_NOT_FOUND): the DLL, or a DLL it imports, was not found on the search path (application folder, System32, Windows folder, current folder, then PATH)"
        }
        127 => {
            "error 127 (ERROR_PROC_NOT_FOUND): a DLL lacks a function another one imports; DLLs of different versions are mixed (an older copy earlier on PATH, or already loaded by name)"
        }
        193 => "error 193 (ERROR_BAD_EXE_FORMAT): not a valid image for this 64-bit process (a 32-bit, damaged or non-Windows file)",
        1114 => "error 1114 (ERROR_DLL_INIT_FAILED): the DLL's initialization routine failed",
        _ => return None,
    })
}

pub(super) fn explain_dlerror(msg: &str) -> Option<&'static str> {
    if msg.contains("wrong ELF class") {
        Some("a 32-bit library, or one for another architecture")
    } else if msg.contains("undefined symbol") || msg.contains("version `") {
        Some("a library of another version is mixed in")
    } else if msg.contains("invalid ELF header") || msg.contains("file too short") {
        Some("not a valid Linux library: damaged, or a file for another system")
    } else {
        None
    }
}

pub(super) fn explain_cudnn_status(name: &str) -> Option<&'static str> {
    let n = name.trim_start_matches("CUDNN_STATUS_");
    Some(match n {
        "SUBLIBRARY_VERSION_MISMATCH" | "VERSION_MISMATCH" => "cuDNN's sub-libraries are of different versions",
        "SUBLIBRARY_LOADING_FAILED" => "a cuDNN sub-library could not be loaded",
        "NOT_SUPPORTED_ARCH_MISMATCH" | "ARCH_MISMATCH" => "this cuDNN does not support the GPU's architecture",
        "NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER" => "the NVIDIA driver is too old for this cuDNN's CUDA version",
        "NOT_SUPPORTED_INCOMPATIBLE_CUDART" => "the CUDA runtime is incompatible with this cuDNN",
        "NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING" | "RUNTIME_PREREQUISITE_MISSING" => "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing",
        "NOT_INITIALIZED" => "the CUDA driver or device could not be initialized",
        "LICENSE_ERROR" => "cuDNN's license check failed",
        _ => return None,
    })
}

pub(super) fn describe_end(end: &ProbeEnd) -> String {
    match end {
        ProbeEnd::Signaled { signal, name } => {
            format!("was killed by {name} (signal {signal})")
        }
        ProbeEnd::Exited { code } => {
            let c = *code as u32;
            let what = match c {
                3 => Some("abort() on Windows"),
                0xC000_0005 => Some("STATUS_ACCESS_VIOLATION"),
                0xC000_0409 => Some("STATUS_STACK_BUFFER_OVERRUN: a fail-fast exit, also what abort() uses"),
                0xC000_0135 => Some("STATUS_DLL_NOT_FOUND"),
                0xC000_0139 => Some("STATUS_ENTRYPOINT_NOT_FOUND"),
                0xC000_001D => Some("STATUS_ILLEGAL_INSTRUCTION"),
                0xC000_00FD => Some("STATUS_STACK_OVERFLOW"),
                _ => None,
            };
            match what {
                Some(w) if c > 0xFFFF => format!("ended with exit code {c:#010X} ({w})"),
                Some(w) => format!("ended with exit code {code} ({w})"),
                None => format!("ended with exit code {code}"),
            }
        }
        ProbeEnd::TimedOut { after_ms } => format!("was killed after {}", human_ms(*after_ms)),
        ProbeEnd::SpawnFailed { error } => format!("could not start: {error}"),
    }
}

pub(super) fn stderr_suffix(tail: &str) -> String {
    let t = tail.trim();
    if t.is_empty() { String::new() } else { format!("; its stderr ends with:\n{t}") }
}

pub(super) fn human_ms(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

/// `12060` -> `12.6`, `11080` -> `11.8` (CUDA's `M*1000 + m*10` encoding).
pub(crate) fn cuda_version(v: u64) -> String {
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

/// The cuDNN integer encoding back to `M.m.p` (9.x: `M*10000+m*100+p`, 8.x: `M*1000+m*100+p`).
pub(crate) fn decode_cudnn(v: u64) -> String {
    if v >= 10000 { format!("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100) } else { format!("{}.{}.{}", v / 1000, v % 1000 / 100, v % 100) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_messages_parse() {
        let text = "Unable to load any of {libcudnn_graph.so.9.5.0, libcudnn_graph.so.9.5, libcudnn_graph.so.9, libcudnn_graph.so}\nInvalid handle. Cannot load symbol cudnnGetVersion";
        assert_eq!(missing_libraries(text), vec!["libcudnn_graph.so.9"]);
        assert_eq!(
            missing_libraries(
                "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory"
            ),
            vec!["libcudnn_cnn_infer.so.8"]
        );
        assert_eq!(missing_libraries("Could not locate zlibwapi.dll. Please make sure it is in your library path!"), vec!["zlibwapi.dll"]);
        assert_eq!(missing_libraries("/opt/x/libcublasLt.so.12: cannot open shared object file"), vec!["libcublasLt.so.12"]);
        assert!(missing_libraries("all fine").is_empty());
    }
}
