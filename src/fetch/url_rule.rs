//! Which URLs cuenv downloads from: `https://` to any host; `http://` only to this machine
//! (`localhost`, `127.0.0.0/8`, `[::1]`: a test server or a local mirror) or to a host named
//! in `CUENV_ALLOW_HTTP` (comma-separated host names, e.g. a lab mirror on a closed network).
//! Nothing else: no `ftp://`, `file://` or `javascript:`. Applied to every URL a user
//! configures (`pypi-index`, `nvidia-mirror`, a cuDNN `from` URL, `--pypi-index`,
//! `--nvidia-mirror`, `CUENV_PYPI_INDEX`, `CUENV_NVIDIA_MIRROR`) before anything is fetched.

use crate::error::{Diagnose, ExitCode};

/// The variable naming the hosts plain `http://` may reach besides this machine.
pub const ALLOW_HTTP_VAR: &str = "CUENV_ALLOW_HTTP";

/// What to write instead of a refused URL.
pub const HINT: &str = "use an https:// URL; plain http:// is allowed only to this machine (localhost, 127.0.0.1, [::1]) or to a host listed in CUENV_ALLOW_HTTP (comma-separated host names)";

/// Why `url` may not be fetched from, in words (`"ftp:// is not a supported scheme"`), or
/// `None` when it may. `allowed`: the hosts of [`ALLOW_HTTP_VAR`].
pub fn refusal(url: &str, allowed: &[String]) -> Option<String> {
    use url::Host;
    let not_a_url = || {
        let shown: String = url.chars().take(40).collect();
        Some(format!("`{}` is not an http(s) URL", shown.escape_debug()))
    };
    // The `url` crate (WHATWG URL parsing) reads the scheme and host, user info and port
    // apart; a string without `://` (`javascript:...`, `mailto:`) is no URL of a server.
    let Some((scheme, rest)) = url.split_once("://") else { return not_a_url() };
    // WHATWG parsing reads `https:///path` as the host `path`: refused, as written it names none.
    if ["http", "https"].iter().any(|s| s.eq_ignore_ascii_case(scheme)) && rest.starts_with(['/', '\\']) {
        return Some("the URL names no host".into());
    }
    let parsed = match url::Url::parse(url) {
        Ok(u) => u,
        Err(url::ParseError::EmptyHost) => return Some("the URL names no host".into()),
        Err(_) => return not_a_url(),
    };
    let (host, loopback) = match parsed.host() {
        Some(Host::Domain(d)) => (d.to_ascii_lowercase(), d.eq_ignore_ascii_case("localhost")),
        Some(Host::Ipv4(ip)) => (ip.to_string(), ip.is_loopback()),
        Some(Host::Ipv6(ip)) => (ip.to_string(), ip.is_loopback()),
        None => (String::new(), false),
    };
    match parsed.scheme() {
        "https" | "http" if host.is_empty() => Some("the URL names no host".into()),
        "https" => None,
        "http" if loopback || allowed.iter().any(|a| a.eq_ignore_ascii_case(&host)) => None,
        "http" => Some(format!("plain http:// to {host} is not allowed (it is not this machine, and {ALLOW_HTTP_VAR} does not list it)")),
        other => Some(format!("{}:// is not a supported scheme", other.escape_debug())),
    }
}

/// The hosts `CUENV_ALLOW_HTTP` lists (empty when unset).
pub fn allowed_hosts() -> Vec<String> {
    std::env::var(ALLOW_HTTP_VAR).unwrap_or_default().split(',').map(|h| h.trim().to_ascii_lowercase()).filter(|h| !h.is_empty()).collect()
}

/// A configured URL cuenv will not fetch from: where it was set, the URL and why.
#[derive(Debug, thiserror::Error)]
#[error("{place} = {url}: {why}")]
pub struct Refused {
    /// Where the URL was set (`CUENV_PYPI_INDEX`, `--nvidia-mirror`).
    pub place: String,
    /// The URL (shortened and escaped for the terminal).
    pub url: String,
    /// What the rule says of it.
    pub why: String,
}

impl Diagnose for Refused {
    fn hint(&self) -> Option<String> {
        Some(HINT.into())
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// Checks `url`, set at `place`, against the rule (with `CUENV_ALLOW_HTTP`).
pub fn check(place: &str, url: &str) -> Result<(), Refused> {
    match refusal(url, &allowed_hosts()) {
        None => Ok(()),
        Some(why) => {
            let mut shown: String = url.chars().take(200).collect::<String>().escape_debug().to_string();
            if url.chars().count() > 200 {
                shown.push_str("...");
            }
            Err(Refused { place: place.into(), url: shown, why })
        }
    }
}

/// Checks the URL variables (`CUENV_PYPI_INDEX`, `CUENV_NVIDIA_MIRROR`) when they are set.
pub fn check_env() -> Result<(), Refused> {
    let e = super::Endpoints::from_env();
    for (var, v) in [(crate::home::settings::PYPI_INDEX_VAR, e.pypi_index), (crate::home::settings::NVIDIA_MIRROR_VAR, e.nvidia_mirror)] {
        if let Some(url) = v {
            check(var, &url)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_this_machine_or_an_allowed_host() {
        let none: Vec<String> = Vec::new();
        for ok in [
            "https://pypi.org",
            "HTTPS://x.example/redist/",
            "http://127.0.0.1:8080/",
            "http://127.9.9.9",
            "http://[::1]:1/x",
            "http://localhost/x",
            "http://u:p@localhost:9",
        ] {
            assert_eq!(refusal(ok, &none), None, "{ok}");
        }
        for (bad, why) in [
            ("javascript:alert(1)", "is not an http(s) URL"),
            ("ftp://mirror.example/redist", "ftp:// is not a supported scheme"),
            ("file:///srv/redist", "file:// is not a supported scheme"),
            ("http://mirror.example/redist", "plain http:// to mirror.example is not allowed"),
            ("http://localhost.evil.example/", "not allowed"),
            ("http://127.0.0.1@evil.example/", "not allowed"),
            ("https://", "names no host"),
            ("https:///path", "names no host"),
        ] {
            let got = refusal(bad, &none).unwrap_or_default();
            assert!(got.contains(why), "{bad}: {got}");
        }
        assert_eq!(refusal("http://Mirror.Lab:8080/redist", &["mirror.lab".into()]), None);
    }
}
