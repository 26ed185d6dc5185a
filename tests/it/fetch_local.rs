//! `cuenv store fetch` against a local HTTP server on 127.0.0.1 (ephemeral port) that plays
//! NVIDIA's redist folder (manifests of all three shapes) and a PyPI JSON API, serving
//! cuDNN-looking archives and wheels built at test time. Hermetic: proxy variables are
//! removed from the child's environment, except where a test sets them.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::support;

// ---------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server: one thread per connection, `Connection: close`, plus CONNECT
// (so it can also act as the HTTPS_PROXY/HTTP_PROXY the client tunnels through).

#[derive(Clone)]
enum Route {
    /// 200 with this body.
    Ok(Arc<Vec<u8>>),
    /// This status, empty body.
    Status(u16),
    /// Announces the full length, sends `after` bytes, then closes the connection.
    Drop { body: Arc<Vec<u8>>, after: usize },
    /// `status` for the first `fails` requests, then 200 with `body`.
    FailFirst { fails: Arc<AtomicUsize>, status: u16, body: Arc<Vec<u8>> },
    /// Byte ranges of `body` (HTTP 206; 416 past its end); a GET without a range gets `full`
    /// (the same bytes, or others), cut off after `cut` bytes when set, after a pause of
    /// `stall` seconds there.
    Ranged { body: Arc<Vec<u8>>, full: Arc<Vec<u8>>, cut: Option<usize>, stall: u64 },
}

#[derive(Clone)]
struct Server {
    base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = Server { base, routes: Default::default(), log: Default::default() };
        let s = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || s.handle(stream));
            }
        });
        server
    }

    fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_string(), route);
    }

    fn ok(&self, path: &str, body: impl Into<Vec<u8>>) {
        self.route(path, Route::Ok(Arc::new(body.into())));
    }

    /// Request targets seen so far (`GET /path`, `CONNECT host:port`, `GET http://...`).
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn hits(&self, path: &str) -> usize {
        self.log().iter().filter(|l| l.ends_with(path)).count()
    }

    fn handle(&self, stream: TcpStream) {
        let mut out = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let mut range = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" || h == "\n" {
                    break;
                }
                if let Some((k, v)) = h.split_once(':')
                    && k.eq_ignore_ascii_case("range")
                {
                    range = Some(v.trim().to_string());
                }
            }
            let mut parts = line.split_whitespace();
            let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
            // A range request is logged with its range, so `hits` counts whole GETs only.
            let logged = match &range {
                Some(r) => format!("{method} {target} ({r})"),
                None => format!("{method} {target}"),
            };
            self.log.lock().unwrap().push(logged);
            if method == "CONNECT" {
                let _ = out.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                continue;
            }
            // Absolute-form targets (plain HTTP proxying) carry scheme and host.
            let path = match target.strip_prefix("http://") {
                Some(rest) => rest.find('/').map(|i| rest[i..].to_string()).unwrap_or("/".into()),
                None => target.clone(),
            };
            let route = self.routes.lock().unwrap().get(&path).cloned();
            let head = |code: u16, len: usize| format!("HTTP/1.1 {code} X\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n");
            let _ = match route {
                None => out.write_all(head(404, 0).as_bytes()),
                Some(Route::Status(code)) => out.write_all(head(code, 0).as_bytes()),
                Some(Route::Ok(body)) => out.write_all(head(200, body.len()).as_bytes()).and_then(|_| out.write_all(&body)),
                Some(Route::Drop { body, after }) => {
                    let _ = out.write_all(head(200, body.len()).as_bytes()).and_then(|_| out.write_all(&body[..after])).and_then(|_| out.flush());
                    let _ = out.shutdown(Shutdown::Both);
                    return;
                }
                Some(Route::Ranged { body, full, cut, stall }) => {
                    let wanted = range.as_deref().and_then(|r| r.strip_prefix("bytes=")).and_then(|r| r.split_once('-'));
                    let span = wanted.and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)));
                    match (range.is_some(), span) {
                        (true, Some((a, b))) if a <= b && b < body.len() => {
                            let head = format!(
                                "HTTP/1.1 206 X\r\nContent-Length: {}\r\nContent-Range: bytes {a}-{b}/{}\r\nConnection: close\r\n\r\n",
                                b - a + 1,
                                body.len()
                            );
                            out.write_all(head.as_bytes()).and_then(|_| out.write_all(&body[a..=b]))
                        }
                        (true, _) => out.write_all(head(416, 0).as_bytes()),
                        (false, _) => {
                            let end = cut.unwrap_or(full.len()).min(full.len());
                            let _ = out.write_all(head(200, full.len()).as_bytes()).and_then(|_| out.write_all(&full[..end])).and_then(|_| out.flush());
                            std::thread::sleep(std::time::Duration::from_secs(stall));
                            let _ = out.shutdown(Shutdown::Both);
                            return;
                        }
                    }
                }
                Some(Route::FailFirst { fails, status, body }) => {
                    if fails.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                        out.write_all(head(status, 0).as_bytes())
                    } else {
                        out.write_all(head(200, body.len()).as_bytes()).and_then(|_| out.write_all(&body))
                    }
                }
            };
            let _ = out.flush();
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Fixtures: cuDNN-looking releases built at test time.

/// A 64-bit little-endian ELF shared-object header for x86-64 (all `binfmt` reads), padded
/// with some bytes so downloads are not trivially small.
fn elf_so(seed: u8) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2; // ELFCLASS64
    h[5] = 1; // little-endian
    h[6] = 1; // EV_CURRENT
    h[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    h[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    h[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    h[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
    // Pseudo-random padding (xorshift) so compression leaves a few hundred kB.
    let mut x: u32 = 0x9e3779b9 ^ seed as u32;
    for _ in 0..300_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        h.push(x as u8);
    }
    h
}

fn version_header(version: &str) -> String {
    let p: Vec<&str> = version.split('.').collect();
    format!("#define CUDNN_MAJOR {}\n#define CUDNN_MINOR {}\n#define CUDNN_PATCHLEVEL {}\n", p[0], p[1], p[2])
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The sub-libraries of a cuDNN major, as the real releases ship them beside the dispatcher
/// (`store add` refuses a set without them).
fn sublibraries(major: &str) -> &'static [&'static str] {
    if major == "8" {
        &["ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"]
    } else {
        &["graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"]
    }
}

/// `cudnn-linux-x86_64-<v>_cuda<N>-archive.tar.xz` with `lib/libcudnn.so.<major>`,
/// `include/cudnn_version.h` and `LICENSE`. Returns (file name, bytes).
fn linux_archive(version: &str, cuda: &str) -> (String, Vec<u8>) {
    let stem = format!("cudnn-linux-x86_64-{version}_cuda{cuda}-archive");
    let major = version.split('.').next().unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    let mut add = |path: &str, data: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, format!("{stem}/{path}"), data).unwrap();
    };
    // Distinct bytes per release and CUDA major (identical content would be one store entry).
    let seed = version.bytes().chain(cuda.bytes()).fold(0u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
    add(&format!("lib/libcudnn.so.{major}"), &elf_so(seed));
    for (i, sub) in sublibraries(major).iter().enumerate() {
        add(&format!("lib/libcudnn_{sub}.so.{major}"), &elf_so(seed.wrapping_add(1 + i as u8)));
    }
    add("include/cudnn_version.h", version_header(version).as_bytes());
    add("LICENSE", b"test license\n");
    let tar = tar.into_inner().unwrap();
    let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&tar).unwrap();
    (format!("{stem}.tar.xz"), xz.finish().unwrap())
}

/// `nvidia_cudnn_cu<N>-<v>-py3-none-manylinux2014_x86_64.whl` with a valid RECORD.
fn linux_wheel(version: &str, cuda: u64) -> (String, Vec<u8>) {
    linux_wheel_with(version, cuda, zip::CompressionMethod::Stored)
}

/// [`linux_wheel`] with its members compressed by `method`.
fn linux_wheel_with(version: &str, cuda: u64, method: zip::CompressionMethod) -> (String, Vec<u8>) {
    let dist = format!("nvidia_cudnn_cu{cuda}-{version}.dist-info");
    let major = version.split('.').next().unwrap();
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (format!("nvidia/cudnn/lib/libcudnn.so.{major}"), elf_so(7)),
        ("nvidia/cudnn/include/cudnn_version.h".into(), version_header(version).into_bytes()),
        (format!("{dist}/METADATA"), format!("Metadata-Version: 2.1\nName: nvidia-cudnn-cu{cuda}\nVersion: {version}\n").into_bytes()),
        (format!("{dist}/WHEEL"), b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-manylinux2014_x86_64\n".to_vec()),
    ];
    for (i, sub) in sublibraries(major).iter().enumerate() {
        files.push((format!("nvidia/cudnn/lib/libcudnn_{sub}.so.{major}"), elf_so(8 + i as u8)));
    }
    let mut record = String::new();
    for (p, d) in &files {
        let h = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(d));
        record.push_str(&format!("{p},sha256={h},{}\n", d.len()));
    }
    record.push_str(&format!("{dist}/RECORD,,\n"));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (p, d) in files.iter().chain(std::iter::once(&(format!("{dist}/RECORD"), record.into_bytes()))) {
        zip.start_file(p.as_str(), opts).unwrap();
        zip.write_all(d).unwrap();
    }
    let bytes = zip.finish().unwrap().into_inner();
    (format!("nvidia_cudnn_cu{cuda}-{version}-py3-none-manylinux2014_x86_64.whl"), bytes)
}

fn artifact(rel: &str, bytes: &[u8]) -> Value {
    json!({"relative_path": rel, "sha256": sha256_hex(bytes), "md5": "00", "size": bytes.len().to_string()})
}

/// Serves NVIDIA-style manifests of all three shapes under `/redist/`:
/// - `redistrib_8.5.0.96.json`: 8.5-era flat, cuda11 in the archive name;
/// - `redistrib_8.9.4.25.json`: 8.9-era, flat, one file for CUDA 12 only; and
///   `redistrib_8.9.4.json`: the same release, nested, with CUDA 11 and 12;
/// - `redistrib_9.5.0.json`: 9.x nested `platform -> {cuda11, cuda12}`.
fn serve_nvidia(s: &Server) {
    let put = |version: &str, cuda: &str| -> Value {
        let (name, bytes) = linux_archive(version, cuda);
        let rel = format!("cudnn/linux-x86_64/{name}");
        let a = artifact(&rel, &bytes);
        s.ok(&format!("/redist/{rel}"), bytes);
        a
    };
    let a85 = put("8.5.0.96", "11");
    let a89_11 = put("8.9.4.25", "11");
    let a89_12 = put("8.9.4.25", "12");
    let a95_11 = put("9.5.0.50", "11");
    let a95_12 = put("9.5.0.50", "12");
    let win = json!({"relative_path": "cudnn/windows-x86_64/cudnn-windows-x86_64-9.5.0.50_cuda12-archive.zip", "sha256": "2c7cf19fa6ffd923e4f12472b6e7bd33144bda7e9553cc54a491afa8f4d4df38", "md5": "0", "size": "549722031"});
    let m85 = json!({"release_date": "2022-08-04", "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn", "version": "8.5.0.96", "linux-x86_64": a85}});
    let m8925 = json!({"release_date": "2023-08-09", "release_label": "8.9.4.25", "release_product": "cudnn-v8-9-cuda-12",
        "cudnn": {"name": "x", "license": "cudnn", "license_path": "cudnn/LICENSE.txt", "version": "8.9.4.25", "linux-x86_64": a89_12.clone()}});
    let m894 = json!({"release_date": "2024-03-15", "release_label": "8.9.4", "release_product": "cudnn",
        "cudnn": {"name": "x", "version": "8.9.4.25", "cuda_variant": ["11", "12"], "linux-x86_64": {"cuda11": a89_11, "cuda12": a89_12}}});
    let m95 = json!({"release_date": "2024-10-07", "release_label": "9.5.0", "release_product": "cudnn",
        "cudnn": {"name": "x", "version": "9.5.0.50", "linux-x86_64": {"cuda11": a95_11, "cuda12": a95_12}, "cuda_variant": ["11", "12"], "windows-x86_64": {"cuda12": win}},
        "cudnn_samples": {"name": "s", "version": "9.5.0.50", "source": {"relative_path": "cudnn_samples/source/x.tar.xz", "sha256": "f326d2b8225765b5ad5fe7419f55a72d2d6985a26bd025f2f9ac2d9fc9b7ee3a", "md5": "0", "size": "1"}}});
    s.ok("/redist/redistrib_8.5.0.96.json", m85.to_string());
    s.ok("/redist/redistrib_8.9.4.25.json", m8925.to_string());
    s.ok("/redist/redistrib_8.9.4.json", m894.to_string());
    s.ok("/redist/redistrib_9.5.0.json", m95.to_string());
}

/// What a PyPI JSON API says about one wheel.
fn pypi_file(s: &Server, name: &str, bytes: &[u8]) -> Value {
    json!({"filename": name, "url": format!("{}/files/{name}", s.base), "digests": {"sha256": sha256_hex(bytes), "md5": "0"}, "size": bytes.len(), "packagetype": "bdist_wheel", "yanked": false})
}

/// Serves `nvidia-cudnn-cu12` 9.5.0.50 (a linux wheel, plus a listed-only Windows wheel)
/// and 9.1.0.70 (listed only) under `/pypi/`; the wheel itself under `/files/`. Returns the
/// wheel's (file name, bytes). `tweak` edits the wheel's JSON entry (to lie about it).
fn serve_pypi(s: &Server, tweak: impl FnOnce(&mut Value)) -> (String, Vec<u8>) {
    serve_pypi_wheel(s, linux_wheel("9.5.0.50", 12), tweak)
}

/// [`serve_pypi`] serving the wheel `(name, bytes)` as 9.5.0.50's.
fn serve_pypi_wheel(s: &Server, (name, bytes): (String, Vec<u8>), tweak: impl FnOnce(&mut Value)) -> (String, Vec<u8>) {
    let mut f = pypi_file(s, &name, &bytes);
    tweak(&mut f);
    let win = json!({"filename": "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl", "url": format!("{}/files/w.whl", s.base), "digests": {"sha256": "11".repeat(32)}, "size": 557000000});
    let doc = json!({"info": {"name": "nvidia-cudnn-cu12", "version": "9.5.0.50"}, "urls": [f.clone(), win.clone()]});
    s.ok("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", doc.to_string());
    let old = json!({"filename": "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl", "url": format!("{}/files/old.whl", s.base), "digests": {"sha256": "22".repeat(32)}, "size": 1});
    let project =
        json!({"info": {"name": "nvidia-cudnn-cu12"}, "releases": {"9.5.0.50": [f, win], "9.1.0.70": [old], "9.5.1.17": [], "8.9.4.25": [{"filename": "x"}]}});
    s.ok("/pypi/nvidia-cudnn-cu12/json", project.to_string());
    s.ok(&format!("/files/{name}"), bytes.clone());
    (name, bytes)
}

// ---------------------------------------------------------------------------------------
// Running cuenv.

struct Env {
    home: TempDir,
    server: Server,
}

impl Drop for Env {
    fn drop(&mut self) {
        // Store entries are read-only: on Windows the temp dir's own cleanup fails on them
        // (Wine's Temp folder kept 167 of these homes, 8.7 MB each).
        crate::support::make_writable(self.home.path());
    }
}

impl Env {
    fn new() -> Env {
        Env { home: tempfile::Builder::new().prefix("cuenv-fetch-").tempdir().unwrap(), server: Server::start() }
    }

    /// `cuenv` with an isolated home, no proxy, one retry, the local server as index and mirror.
    fn cuenv(&self) -> Command {
        Command::from_std(self.cuenv_std())
    }

    /// [`Env::cuenv`] as a plain `std::process::Command` (to spawn and kill).
    fn cuenv_std(&self) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
        for k in [
            "ALL_PROXY",
            "all_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "NO_PROXY",
            "no_proxy",
            "CUENV_OFFLINE",
            "CUENV_HTTP_TIMEOUT",
            "CUENV_ALLOW_HTTP",
        ] {
            c.env_remove(k);
        }
        c.env("CUENV_HOME", self.home.path())
            .env("CUENV_HTTP_RETRIES", "1")
            .env("CUENV_PYPI_INDEX", &self.server.base)
            .env("CUENV_NVIDIA_MIRROR", format!("{}/redist/", self.server.base))
            .env("CUENV_LOCK_TIMEOUT", "30");
        c
    }

    fn fetch(&self, args: &[&str]) -> std::process::Output {
        self.cuenv().args(["store", "fetch"]).args(args).args(["--platform", "linux-x86_64"]).output().unwrap()
    }

    fn entries(&self) -> Vec<Value> {
        let out = self.cuenv().args(["store", "list", "--json"]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
    }

    /// Asserts that no download or import left anything behind.
    fn assert_no_leftovers(&self) {
        for d in [self.home.path().join("store/.tmp"), self.home.path().join("store/.downloads")] {
            let left: Vec<_> = std::fs::read_dir(&d).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
            assert!(left.is_empty(), "left in {}: {left:?}", d.display());
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_fails(out: &std::process::Output, code: i32, stderr_has: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stdout: {}\nstderr: {err}", text(&out.stdout));
    for s in stderr_has {
        assert!(err.contains(s), "stderr lacks {s:?}:\n{err}");
    }
}

// ---------------------------------------------------------------------------------------
// PyPI.

#[test]
fn pypi_fetch_imports_then_second_run_downloads_nothing() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("added cudnn-9.5.0.50-cuda12-linux-x86_64-"), "{stdout}");
    assert!(stdout.contains(&format!("from {}/files/{name} (sha256 {})", env.server.base, sha256_hex(&bytes))), "{stdout}");
    assert!(text(&out.stderr).contains(&format!("downloading {}/files/{name}", env.server.base)));
    let entries = env.entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["version"], "9.5.0.50");
    assert_eq!(entries[0]["cuda_major"], 12);
    assert_eq!(entries[0]["source"], name.as_str());
    env.assert_no_leftovers();
    assert_eq!(env.server.hits(&format!("/files/{name}")), 1);

    let again = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(text(&again.stdout).starts_with("already in store: cudnn-9.5.0.50-cuda12-linux-x86_64-"), "{}", text(&again.stdout));
    assert!(text(&again.stdout).contains("nothing downloaded"));
    assert_eq!(env.server.hits(&format!("/files/{name}")), 1, "the second run must not download");
}

#[test]
fn pypi_fetch_json_reports_source() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "9.5.0.50");
    assert_eq!(v["cuda_major"], 12);
    assert_eq!(v["platform"], "linux-x86_64");
    assert_eq!(v["url"], format!("{}/files/{name}", env.server.base));
    assert_eq!(v["sha256"], sha256_hex(&bytes));
    assert_eq!(v["size"], bytes.len());
    assert_eq!(v["downloaded"], true);
    assert_eq!(v["existed"], false);
    assert_eq!(v["source"], "pypi");
    assert!(Path::new(v["path"].as_str().unwrap()).join("entry.toml").is_file());
}

#[test]
fn pypi_project_document_is_enough() {
    // Some mirrors serve only <index>/pypi/<project>/json, with URLs relative to it.
    let env = Env::new();
    let (name, _) = serve_pypi(&env.server, |_| {});
    env.server.route("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", Route::Status(404));
    let Some(Route::Ok(doc)) = env.server.routes.lock().unwrap().get("/pypi/nvidia-cudnn-cu12/json").cloned() else { panic!() };
    env.server.ok("/pypi/nvidia-cudnn-cu12/json", text(&doc).replace(&format!("{}/files/", env.server.base), "../../files/"));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("added cudnn-9.5.0.50-cuda12-"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(&format!("from {}/files/{name} ", env.server.base)), "{}", text(&out.stdout));
}

#[test]
fn pypi_three_part_version_picks_the_build() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5.0", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("added cudnn-9.5.0.50-cuda12-"), "{}", text(&out.stdout));
}

/// `store fetch cudnn@9.5` says which release it picked and why.
#[test]
fn a_short_version_says_which_release_was_picked_and_why() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("picked cuDNN 9.5.0.50 for cudnn@9.5: the newest 9.5.x release of nvidia-cudnn-cu12 on PyPI for CUDA 12 (linux-x86_64)"), "{err}");
    // A full version is fetched as named: nothing to explain.
    let again = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(!text(&again.stderr).contains("picked"), "{}", text(&again.stderr));
}

#[test]
fn pypi_unknown_version_lists_nearby_versions() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5.0.49", "--cuda", "12"]);
    assert_fails(
        &out,
        2,
        &[&format!("error: `nvidia-cudnn-cu12` has no version 9.5.0.49 on {}; nearby versions: 9.5.0.50", env.server.base), "hint: pick one of: 9.5.0.50"],
    );
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "13"]);
    assert_fails(&out, 2, &[&format!("error: no project `nvidia-cudnn-cu13` on the index {}", env.server.base)]);
}

#[test]
fn pypi_no_wheel_for_platform() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let out = env.cuenv().args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-sbsa"]).output().unwrap();
    assert_fails(
        &out,
        2,
        &[
            "error: `nvidia-cudnn-cu12` 9.5.0.50 has no wheel for linux-sbsa; its wheels: nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl, nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl",
        ],
    );
}

#[test]
fn sha256_mismatch_imports_nothing() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |f| f["digests"]["sha256"] = json!("ab".repeat(32)));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(
        &out,
        2,
        &[
            &format!("error: {}/files/{name}: SHA-256 is {}, but {} was expected", env.server.base, sha256_hex(&bytes), "ab".repeat(32)),
            "hint: the server sent other bytes than the manifest or index publishes",
        ],
    );
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

#[test]
fn size_mismatch_imports_nothing() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |f| f["size"] = json!(f["size"].as_u64().unwrap() + 1));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(&out, 2, &[&format!("error: {}/files/{name}: got {} bytes, but {} were expected", env.server.base, bytes.len(), bytes.len() + 1)]);
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

#[test]
fn missing_file_is_404() {
    let env = Env::new();
    let (name, _) = serve_pypi(&env.server, |_| {});
    env.server.route(&format!("/files/{name}"), Route::Status(404));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(&out, 1, &[&format!("error: GET {}/files/{name}: not found (HTTP 404)", env.server.base)]);
    // 404 is final: no retry.
    assert_eq!(env.server.hits(&format!("/files/{name}")), 1);
    env.assert_no_leftovers();
}

#[test]
fn dropped_connection_mid_file_leaves_nothing() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |_| {});
    env.server.route(&format!("/files/{name}"), Route::Drop { body: Arc::new(bytes.clone()), after: 100_000 });
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(
        &out,
        1,
        &[
            &format!("error: download of {}/files/{name} broke off after 100000 bytes of {} (tried 2 times)", env.server.base, bytes.len()),
            "hint: check the network",
        ],
    );
    assert_eq!(env.server.hits(&format!("/files/{name}")), 2, "one retry");
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

// ---------------------------------------------------------------------------------------
// Importing a wheel while it downloads (byte ranges for the central directory, then the body).

/// Serves 9.5.0.50 as [`serve_pypi`] does, but deflated, with byte ranges; a whole GET gets the
/// bytes `full` makes of the wheel's, cut off after `cut` bytes (pausing `stall` seconds there).
fn serve_ranged(s: &Server, cut: Option<usize>, stall: u64, full: impl FnOnce(&mut Vec<u8>)) -> (String, Vec<u8>) {
    let (name, bytes) = serve_pypi_wheel(s, linux_wheel_with("9.5.0.50", 12, zip::CompressionMethod::Deflated), |_| {});
    let mut whole = bytes.clone();
    full(&mut whole);
    s.route(&format!("/files/{name}"), Route::Ranged { body: Arc::new(bytes.clone()), full: Arc::new(whole), cut, stall });
    (name, bytes)
}

/// The range requests the server saw for `path`.
fn ranges_of(s: &Server, path: &str) -> usize {
    s.log().iter().filter(|l| l.contains(&format!("{path} (bytes="))).count()
}

#[test]
fn a_wheel_is_imported_while_it_downloads_as_a_whole_download_would_be() {
    let env = Env::new();
    let (name, bytes) = serve_ranged(&env.server, None, 0, |_| {});
    let path = format!("/files/{name}");
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The central directory by range (its tail), then the body once: no second, whole download.
    assert!(ranges_of(&env.server, &path) >= 1, "{:?}", env.server.log());
    assert_eq!(env.server.hits(&path), 1, "{:?}", env.server.log());
    let streamed = env.entries();
    assert_eq!(streamed.len(), 1);
    assert_eq!(streamed[0]["source"], name.as_str());
    let meta = std::fs::read_to_string(env.home.path().join("store").join(streamed[0]["name"].as_str().unwrap()).join("entry.toml")).unwrap();
    assert!(meta.contains(&sha256_hex(&bytes)) && meta.contains(&format!("size = {}", bytes.len())), "{meta}");
    let verify = env.cuenv().args(["store", "verify"]).output().unwrap();
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    env.assert_no_leftovers();

    // A server that answers a range request with the whole file: downloaded whole, the same entry.
    let plain = Env::new();
    serve_pypi_wheel(&plain.server, (name.clone(), bytes.clone()), |_| {});
    let out = plain.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(ranges_of(&plain.server, &path), 1, "one range asked for, refused");
    assert_eq!(plain.server.hits(&path), 1);
    let whole = plain.entries();
    assert_eq!(whole[0]["id"], streamed[0]["id"], "the same content, file by file");
    assert_eq!(whole[0]["name"], streamed[0]["name"]);
    plain.assert_no_leftovers();
}

#[test]
fn a_streamed_download_that_breaks_off_is_downloaded_again_and_leaves_nothing() {
    let env = Env::new();
    let (name, bytes) = serve_ranged(&env.server, Some(100_000), 0, |_| {});
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    // The stream breaks off; the whole download that follows breaks off too, twice (one retry).
    assert_fails(&out, 1, &[&format!("error: download of {}/files/{name} broke off after 100000 bytes of {} (tried 2 times)", env.server.base, bytes.len())]);
    assert_eq!(env.server.hits(&format!("/files/{name}")), 3, "{:?}", env.server.log());
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

#[test]
fn a_streamed_wheel_with_one_byte_changed_imports_nothing() {
    let env = Env::new();
    let at = std::sync::atomic::AtomicUsize::new(0);
    let (name, bytes) = serve_ranged(&env.server, None, 0, |b| {
        // In the data of the first member (the dispatcher library), not in the directory.
        let i = 2_000;
        b[i] ^= 0x40;
        at.store(i, Ordering::SeqCst);
    });
    let mut flipped = bytes.clone();
    flipped[at.load(Ordering::SeqCst)] ^= 0x40;
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(
        &out,
        2,
        &[
            &format!("error: {}/files/{name}: SHA-256 is {}, but {} was expected", env.server.base, sha256_hex(&flipped), sha256_hex(&bytes)),
            "hint: the server sent other bytes than the manifest or index publishes",
        ],
    );
    assert_eq!(env.server.hits(&format!("/files/{name}")), 1, "bytes that are not the published ones are not fetched again");
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

#[test]
fn killed_during_a_streamed_import_leaves_no_entry_and_the_next_run_imports() {
    let env = Env::new();
    let (name, bytes) = serve_ranged(&env.server, Some(1_200_000), 60, |_| {});
    let path = format!("/files/{name}");
    let mut child = env.cuenv_std().args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"]).spawn().unwrap();
    // Wait until the body is streaming and some member is being written in staging.
    let staging = env.home.path().join("store/.tmp");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let writing = || walkdir(&staging).iter().any(|p| p.metadata().is_ok_and(|m| m.is_file() && m.len() > 0));
    while !(env.server.hits(&path) == 1 && writing()) {
        assert!(std::time::Instant::now() < deadline, "the import never started writing: {:?}", env.server.log());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(env.entries().is_empty(), "nothing was published");

    // The next run removes what the killed one left in staging, and imports.
    env.server.route(&path, Route::Ranged { body: Arc::new(bytes.clone()), full: Arc::new(bytes.clone()), cut: None, stall: 0 });
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(env.entries().len(), 1);
    env.assert_no_leftovers();
}

/// Every path under `dir` (none when it does not exist).
fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

#[test]
fn server_errors_are_retried() {
    let env = Env::new();
    let (name, bytes) = serve_pypi(&env.server, |_| {});
    env.server.route(&format!("/files/{name}"), Route::FailFirst { fails: Arc::new(AtomicUsize::new(2)), status: 503, body: Arc::new(bytes) });
    let out =
        env.cuenv().env("CUENV_HTTP_RETRIES", "3").args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The range request that starts a streamed import meets the two 503s and is retried; the
    // server then answers with the whole file (it serves no ranges), which is downloaded whole.
    let path = format!("/files/{name}");
    assert_eq!((ranges_of(&env.server, &path), env.server.hits(&path)), (3, 1), "{:?}", env.server.log());

    // Retries spent: the last status is reported.
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    env.server.route("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", Route::Status(502));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert_fails(&out, 1, &[&format!("error: GET {}/pypi/nvidia-cudnn-cu12/9.5.0.50/json: HTTP 502 (tried 2 times)", env.server.base)]);
}

#[test]
fn offline_names_what_is_missing_and_touches_no_network() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let expected = format!(
        "error: offline: cannot get cuDNN 9.5.0.50 for CUDA 12 (linux-x86_64) from PyPI; that needs {}/pypi/nvidia-cudnn-cu12/9.5.0.50/json",
        env.server.base
    );
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12", "--offline"]);
    assert_fails(&out, 1, &[&expected, "hint: drop --offline (or unset CUENV_OFFLINE)"]);
    let out = env.cuenv().env("CUENV_OFFLINE", "1").args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"]).output().unwrap();
    assert_fails(&out, 1, &[&expected]);
    let out = env
        .cuenv()
        .env("CUENV_OFFLINE", "1")
        .args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--from", "nvidia", "--platform", "linux-x86_64"])
        .output()
        .unwrap();
    assert_fails(
        &out,
        1,
        &[&format!(
            "error: offline: cannot get cuDNN 9.5.0.50 for CUDA 12 (linux-x86_64) from NVIDIA; that needs {}/redist/redistrib_9.5.0.50.json",
            env.server.base
        )],
    );
    assert!(env.server.log().is_empty(), "offline touched the network: {:?}", env.server.log());
    // CUENV_OFFLINE=0 means online.
    let out = env.cuenv().env("CUENV_OFFLINE", "0").args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn proxy_variables_are_honoured() {
    let env = Env::new();
    // The index's host does not exist: only a proxy can reach it.
    let (name, _) = serve_pypi(&env.server, |_| {});
    let doc = env.server.routes.lock().unwrap().get("/pypi/nvidia-cudnn-cu12/9.5.0.50/json").cloned();
    let Some(Route::Ok(body)) = doc else { panic!() };
    let rewritten = text(&body).replace(&env.server.base, "http://files.cuenv.invalid");
    env.server.ok("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", rewritten);
    let out = env
        .cuenv()
        .env("HTTP_PROXY", &env.server.base)
        // Plain http to a host other than this machine must be allowed by name.
        .env("CUENV_ALLOW_HTTP", "pypi.cuenv.invalid")
        .env("CUENV_PYPI_INDEX", "http://pypi.cuenv.invalid")
        .args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = env.server.log();
    assert!(log.contains(&"CONNECT pypi.cuenv.invalid:80".to_string()), "{log:?}");
    assert!(log.contains(&"CONNECT files.cuenv.invalid:80".to_string()), "{log:?}");
    assert!(log.iter().any(|l| l.ends_with(&format!("/files/{name}"))), "{log:?}");

    // NO_PROXY: a dead proxy is bypassed for 127.0.0.1.
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let out = env
        .cuenv()
        .env("HTTP_PROXY", &dead_url)
        .env("NO_PROXY", "127.0.0.1")
        .args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without NO_PROXY the dead proxy is used, and fails.
    let out =
        env.cuenv().env("HTTP_PROXY", &dead_url).args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--platform", "linux-x86_64"]).output().unwrap();
    assert_fails(&out, 1, &[&format!("error: cannot reach {}/pypi/nvidia-cudnn-cu12/9.5.0.50/json (tried 2 times)", env.server.base)]);
}

// ---------------------------------------------------------------------------------------
// NVIDIA.

#[test]
fn nvidia_all_three_manifest_shapes() {
    let env = Env::new();
    serve_nvidia(&env.server);
    for (what, cuda) in [("cudnn@8.5.0.96", "11"), ("cudnn@8.9.4.25", "12"), ("cudnn@8.9.4.25", "11"), ("cudnn@9.5.0.50", "12")] {
        let out = env.fetch(&[what, "--cuda", cuda, "--from", "nvidia"]);
        assert!(out.status.success(), "{what} cuda {cuda}: {}", text(&out.stderr));
        let v = &what[6..];
        assert!(text(&out.stdout).starts_with(&format!("added cudnn-{v}-cuda{cuda}-linux-x86_64-")), "{}", text(&out.stdout));
        assert!(text(&out.stdout).contains(&format!("cudnn-linux-x86_64-{v}_cuda{cuda}-archive.tar.xz")), "{}", text(&out.stdout));
    }
    let got: Vec<(String, u64)> = env.entries().iter().map(|e| (e["version"].as_str().unwrap().to_string(), e["cuda_major"].as_u64().unwrap())).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    for want in [("8.5.0.96", 11), ("8.9.4.25", 11), ("8.9.4.25", 12), ("9.5.0.50", 12)] {
        assert!(got.contains(&(want.0.to_string(), want.1)), "{want:?} missing from {got:?}");
    }
    // 8.9.4.25 for CUDA 12 came from the one-major 4-part file; for CUDA 11 from the 3-part file.
    assert_eq!(env.server.hits("/redist/redistrib_8.9.4.json"), 1);
    assert_eq!(env.server.hits("/redist/redistrib_8.9.4.25.json"), 2);
    env.assert_no_leftovers();
}

#[test]
fn nvidia_three_part_version() {
    let env = Env::new();
    serve_nvidia(&env.server);
    let out = env.fetch(&["cudnn@9.5.0", "--cuda", "11", "--from", "nvidia"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("added cudnn-9.5.0.50-cuda11-linux-x86_64-"), "{}", text(&out.stdout));
}

#[test]
fn nvidia_lists_what_the_manifest_offers() {
    let env = Env::new();
    serve_nvidia(&env.server);
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "13", "--from", "nvidia"]);
    assert_fails(
        &out,
        2,
        &[&format!(
            "error: cuDNN 9.5.0.50 has no archive for linux-x86_64 and CUDA 13 at {}/redist/; offered: linux-x86_64/cuda11, linux-x86_64/cuda12, windows-x86_64/cuda12",
            env.server.base
        )],
    );
    let out = env.fetch(&["cudnn@9.99.0", "--cuda", "12", "--from", "nvidia"]);
    assert_fails(&out, 2, &[&format!("error: no NVIDIA redist manifest for cuDNN 9.99.0 under {}/redist/ (tried redistrib_9.99.0.json)", env.server.base)]);
    let out = env.fetch(&["cudnn@9.5.0.49", "--cuda", "12", "--from", "nvidia"]);
    assert_fails(&out, 2, &[&format!("error: {}/redist/redistrib_9.5.0.json describes cuDNN 9.5.0.50, not 9.5.0.49", env.server.base)]);
}

#[test]
fn nvidia_sha256_mismatch_and_drop() {
    let env = Env::new();
    serve_nvidia(&env.server);
    let rel = "/redist/cudnn/linux-x86_64/cudnn-linux-x86_64-9.5.0.50_cuda12-archive.tar.xz";
    let Some(Route::Ok(good)) = env.server.routes.lock().unwrap().get(rel).cloned() else { panic!() };
    let mut bad = (*good).clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    env.server.ok(rel, bad.clone());
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12", "--from", "nvidia"]);
    assert_fails(&out, 2, &[&format!("error: {}{rel}: SHA-256 is {}, but {} was expected", env.server.base, sha256_hex(&bad), sha256_hex(&good))]);
    env.server.route(rel, Route::Drop { body: good.clone(), after: good.len() / 2 });
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12", "--from", "nvidia"]);
    assert_fails(&out, 1, &[&format!("broke off after {} bytes of {}", good.len() / 2, good.len())]);
    assert!(env.entries().is_empty());
    env.assert_no_leftovers();
}

#[test]
fn bad_arguments() {
    let env = Env::new();
    let out = env.fetch(&["cuda@12.6", "--cuda", "12"]);
    assert_fails(&out, 2, &["only cuDNN can be fetched for now (`cudnn@VERSION`), not `cuda`"]);
    let out = env.fetch(&["cudnn@9.x", "--cuda", "12"]);
    assert_fails(&out, 2, &["`9.x` is not a version"]);
    let out = env.cuenv().args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--from", "conda"]).output().unwrap();
    assert_fails(&out, 2, &["unknown source `conda` (expected `nvidia` or `pypi`)"]);
}

// ---------------------------------------------------------------------------------------
// apply with `from` sources: cuDNN and the CUDA runtime from the (local) PyPI.

/// A runtime-style wheel `nvidia_<pkg>_cu12-<version>` holding `nvidia/<pkg>/lib/<lib>`.
fn runtime_wheel(project: &str, pkg: &str, version: &str, lib: &str, seed: u8) -> (String, Vec<u8>) {
    let name = format!("{}-{version}-py3-none-manylinux2014_x86_64.whl", project.replace('-', "_"));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file(format!("nvidia/{pkg}/lib/{lib}"), opts).unwrap();
    zip.write_all(&elf_so(seed)).unwrap();
    zip.start_file(format!("nvidia/{pkg}/__init__.py"), opts).unwrap();
    (name, zip.finish().unwrap().into_inner())
}

/// Serves the three CUDA 12 runtime wheels (cudart 12.6.77, cuBLAS 12.6.4.1, NVRTC 12.6.85)
/// as project documents only (like the mirror this was first run against).
fn serve_runtime(s: &Server) {
    for (project, pkg, version, lib, seed) in [
        ("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1),
        ("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2),
        ("nvidia-cuda-nvrtc-cu12", "cuda_nvrtc", "12.6.85", "libnvrtc.so.12", 3),
    ] {
        let (name, bytes) = runtime_wheel(project, pkg, version, lib, seed);
        let f = pypi_file(s, &name, &bytes);
        let older = json!({"filename": format!("{}-12.4.0-py3-none-manylinux2014_x86_64.whl", project.replace('-', "_")), "url": format!("{}/files/nope.whl", s.base), "digests": {"sha256": "33".repeat(32)}, "size": 1});
        s.ok(&format!("/pypi/{project}/json"), json!({"info": {"name": project}, "releases": {version: [f], "12.4.0": [older]}}).to_string());
        s.ok(&format!("/files/{name}"), bytes);
    }
}

#[test]
fn apply_fetches_from_sources_pins_them_and_refuses_other_bytes() {
    let env = Env::new();
    let (wheel, _) = serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::write(&lab, "[profiles.torch]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"9.5.0.50\", from = \"pypi\" }\n").unwrap();
    let lab_s = lab.to_str().unwrap();

    // plan names what would be fetched and fetches nothing.
    let out = env.cuenv().args(["plan", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(plan.contains("+ fetch CUDA runtime 12.6") && plan.contains("+ fetch cuDNN 9.5.0.50 from PyPI"), "{plan}");
    // What the index said, from its metadata.
    assert!(plan.contains("; PyPI has 12.6.77, ") && plan.contains("; PyPI has 9.5.0.50 for CUDA 12, "), "{plan}");
    // The runtime's size counts all three wheels it downloads, not cudart alone.
    assert!(plan.contains(" to download (cudart, cuBLAS, NVRTC)"), "{plan}");
    assert_eq!(env.server.hits(&format!("/files/{wheel}")), 0);
    // A version the index does not have is an error of `plan`, with what it has instead.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[profiles.torch]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"9.5.0.49\", from = \"pypi\" }\n").unwrap();
    let out = env.cuenv().args(["plan", bad.to_str().unwrap()]).output().unwrap();
    assert_fails(&out, 2, &["bad.toml:3:21: no source has cuDNN 9.5.0.49 for CUDA 12 (linux-x86_64): PyPI has no such version", "9.5.0.50"]);
    assert_eq!(env.server.hits(&format!("/files/{wheel}")), 0);

    // apply fetches, imports, assembles the runtime root and pins the download.
    let out = env.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("+ CUDA runtime 12.6 from PyPI") && said.contains("+ cuDNN 9.5.0.50 for CUDA 12 from"), "{said}");
    let view = env.home.path().join("profiles/torch");
    assert!(view.join("cuda-lib/libcudart.so.12").exists() && view.join("cuda-lib/libcublas.so.12").exists() && view.join("cuda-lib/libnvrtc.so.12").exists());
    assert!(view.join("cuda/version.json").exists());
    assert!(view.join("cudnn-lib/libcudnn.so.9").exists());
    let lock = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    assert!(lock.contains("toolkit-root = \"${CUENV_HOME}/toolkits/cuda-12.6.77-linux-x86_64-"), "{lock}");
    let (_, wheel_bytes) = linux_wheel("9.5.0.50", 12);
    assert!(lock.contains(&format!("cudnn-sha256 = \"{}\"", sha256_hex(&wheel_bytes))), "{lock}");
    let (_, rt) = runtime_wheel("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1);
    assert!(lock.contains(&format!("\"nvidia-cuda-runtime-cu12==12.6.77 sha256:{}\"", sha256_hex(&rt))), "{lock}");
    assert!(lock.contains("nvidia-cublas-cu12==12.6.4.1 sha256:") && lock.contains("nvidia-cuda-nvrtc-cu12==12.6.85 sha256:"), "{lock}");
    assert_eq!(env.server.hits(&format!("/files/{wheel}")), 1);

    // Everything cached: a second apply downloads nothing and changes nothing.
    let out = env.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert!(text(&out.stdout).contains("no changes"), "{}", text(&out.stdout));
    assert_eq!(env.server.hits(&format!("/files/{wheel}")), 1);

    // Another machine (a fresh home) with the same lock, `--locked`: the same bytes again.
    let other = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = other.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("lab.lock")).unwrap(), lock, "the lock is unchanged");

    // A newer cuBLAS 12.6 on the index does not move a locked runtime: the pins win.
    let (name, bytes) = runtime_wheel("nvidia-cublas-cu12", "cublas", "12.6.9.9", "libcublas.so.12", 9);
    let f = pypi_file(&env.server, &name, &bytes);
    let (old_name, old_bytes) = runtime_wheel("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2);
    let old = pypi_file(&env.server, &old_name, &old_bytes);
    env.server
        .ok("/pypi/nvidia-cublas-cu12/json", json!({"info": {"name": "nvidia-cublas-cu12"}, "releases": {"12.6.9.9": [f], "12.6.4.1": [old]}}).to_string());
    env.server.ok(&format!("/files/{name}"), bytes);
    let fourth = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = fourth.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(env.server.hits(&format!("/files/{name}")), 0, "the pinned cuBLAS 12.6.4.1 was used");

    // The index now serves other bytes for 9.5.0.50: a third home refuses them.
    let (name, mut bytes) = linux_wheel("9.5.0.50", 12);
    bytes.extend_from_slice(b"trailing junk changes the digest");
    let f = pypi_file(&env.server, &name, &bytes);
    env.server.ok("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", json!({"info": {"version": "9.5.0.50"}, "urls": [f]}).to_string());
    env.server.ok(&format!("/files/{name}"), bytes);
    let third = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = third.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert_fails(&out, 2, &["lab.lock pins", "hint:"]);
    assert!(!third.home.path().join("generations").exists());
    third.assert_no_leftovers();
}

/// A server with cuDNN 9.5.0.50 and 8.9.4.25 wheels and the CUDA 12.6 runtime, and a lab file
/// whose two profiles take one each.
struct TwoCudnn {
    env: Env,
    w95: String,
    b95: Vec<u8>,
    w89: String,
    b89: Vec<u8>,
    dir: TempDir,
    lab: std::path::PathBuf,
}

fn two_cudnn_lab() -> TwoCudnn {
    let env = Env::new();
    let (w95, b95) = serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    let (w89, b89) = linux_wheel("8.9.4.25", 12);
    let f = pypi_file(&env.server, &w89, &b89);
    env.server.ok("/pypi/nvidia-cudnn-cu12/8.9.4.25/json", json!({"info": {"version": "8.9.4.25"}, "urls": [f]}).to_string());
    env.server.ok(&format!("/files/{w89}"), b89.clone());
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        "[profiles.torch]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"9.5.0.50\", from = \"pypi\" }\n\
         [profiles.legacy]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"8.9.4.25\", from = \"pypi\" }\n",
    )
    .unwrap();
    TwoCudnn { env, w95, b95, w89, b89, dir, lab }
}

/// `apply` looks every pinned download up first and starts them together (at most
/// 3 at once), importing each while the next ones download; each file is fetched once, and a
/// download that breaks off fails the apply with nothing half-imported or left behind.
#[test]
fn apply_downloads_ahead_and_a_broken_download_leaves_nothing_half_done() {
    let TwoCudnn { env, w95, w89, b89, dir: _dir, lab, .. } = two_cudnn_lab();
    let apply = |e: &Env| e.cuenv().args(["apply", "--no-check", "--locked"]).arg(&lab).output().unwrap();
    // The first apply writes the pins.
    let out = env.cuenv().args(["apply", "--no-check"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A fresh home with the pins: the legacy cuDNN is looked up before torch's is downloaded,
    // and every file is downloaded once (the shared CUDA 12.6 runtime too).
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let before = env.server.log().len();
    let out = apply(&fresh);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("+ cuDNN 9.5.0.50 for CUDA 12 from") && said.contains("+ cuDNN 8.9.4.25 for CUDA 12 from"), "{said}");
    let log = env.server.log()[before..].to_vec();
    let at = |t: &str| log.iter().position(|l| l == t).unwrap_or_else(|| panic!("no {t} in {log:?}"));
    assert!(at("GET /pypi/nvidia-cudnn-cu12/8.9.4.25/json") < at(&format!("GET /files/{w95}")), "{log:?}");
    // Whole GETs (a range request that starts a streamed import is logged with its range).
    let files: Vec<&String> = log.iter().filter(|l| l.starts_with("GET /files/") && !l.contains(" (bytes=")).collect();
    assert_eq!(files.len(), 5, "{files:?}");
    let mut unique = files.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "{files:?}");
    fresh.assert_no_leftovers();

    // The 8.9.4.25 download breaks off (both tries) while the others download and import.
    env.server.route(&format!("/files/{w89}"), Route::Drop { body: Arc::new(b89.clone()), after: b89.len() / 2 });
    an_apply_whose_89_download_breaks_off_leaves_nothing(&env, &w89, &b89, &lab);
}

/// `apply` imports each cuDNN wheel while it downloads (the server serves ranges), and extracts
/// the CUDA runtime wheels while they download too: no download is written whole, and the
/// entries and the runtime root are those whole downloads make. A stream that breaks off
/// falls back to a whole download, and its failure leaves nothing.
#[test]
fn apply_imports_the_cudnn_wheels_while_they_download() {
    let TwoCudnn { env, w95, b95, w89, b89, dir: _dir, lab } = two_cudnn_lab();
    // Pins, entries and the runtime root from whole downloads (this server serves no ranges yet).
    let out = env.cuenv().args(["apply", "--no-check"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let whole: Vec<Value> = env.entries().into_iter().map(|e| e["id"].clone()).collect();
    let roots = |e: &Env| {
        let mut names: Vec<String> =
            std::fs::read_dir(e.home.path().join("toolkits")).unwrap().map(|d| d.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    };
    let whole_roots = roots(&env);
    assert_eq!(whole_roots.len(), 1, "{whole_roots:?}");

    let ranged = |name: &str, bytes: &[u8], cut: Option<usize>| {
        let body = Arc::new(bytes.to_vec());
        env.server.route(&format!("/files/{name}"), Route::Ranged { body: body.clone(), full: body, cut, stall: 0 });
    };
    ranged(&w95, &b95, None);
    ranged(&w89, &b89, None);
    let mut runtime = Vec::new();
    for (project, pkg, version, lib, seed) in [
        ("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1),
        ("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2),
        ("nvidia-cuda-nvrtc-cu12", "cuda_nvrtc", "12.6.85", "libnvrtc.so.12", 3),
    ] {
        let (name, bytes) = runtime_wheel(project, pkg, version, lib, seed);
        ranged(&name, &bytes, None);
        runtime.push(name);
    }
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let before = env.server.log().len();
    let out = fresh.cuenv().args(["apply", "--no-check", "--locked"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = env.server.log()[before..].to_vec();
    for w in [&w95, &w89].into_iter().chain(&runtime) {
        let whole_gets = log.iter().filter(|l| **l == format!("GET /files/{w}")).count();
        let range_gets = log.iter().filter(|l| l.starts_with(&format!("GET /files/{w} (bytes="))).count();
        assert_eq!((whole_gets, range_gets > 0), (1, true), "{w}: {log:?}");
    }
    let streamed: Vec<Value> = fresh.entries().into_iter().map(|e| e["id"].clone()).collect();
    assert_eq!(streamed, whole, "the same entries as whole downloads make");
    assert_eq!(roots(&fresh), whole_roots, "the same runtime root as whole downloads make");
    let view = fresh.home.path().join("profiles/torch");
    for lib in ["libcudart.so.12", "libcublas.so.12", "libnvrtc.so.12"] {
        assert_eq!(
            std::fs::read(view.join("cuda-lib").join(lib)).unwrap(),
            std::fs::read(env.home.path().join("profiles/torch/cuda-lib").join(lib)).unwrap(),
            "{lib}"
        );
    }
    fresh.assert_no_leftovers();
    let out = fresh.cuenv().args(["store", "verify"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // 8.9.4.25's stream breaks off, then its whole download too (both tries): apply fails, and
    // what the store holds is whole.
    ranged(&w89, &b89, Some(b89.len() / 2));
    an_apply_whose_89_download_breaks_off_leaves_nothing(&env, &w89, &b89, &lab);
}

/// A CUDA runtime wheel extracted while it downloads proves what its whole download proves:
/// bytes other than the published ones fail the apply naming them, a stream that breaks off
/// (and the whole download after it) fails it naming the URL, and neither leaves a runtime
/// root, a generation or a download folder behind.
#[test]
fn a_runtime_wheel_streamed_with_other_bytes_or_cut_off_leaves_nothing() {
    let TwoCudnn { env, dir: _dir, lab, .. } = two_cudnn_lab();
    let out = env.cuenv().args(["apply", "--no-check"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (name, bytes) = runtime_wheel("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2);
    let path = format!("/files/{name}");
    // One byte of the library's data changed in the body; the central directory (fetched by
    // range) is the published one.
    let mut flipped = bytes.clone();
    flipped[200] ^= 0x40;
    env.server.route(&path, Route::Ranged { body: Arc::new(bytes.clone()), full: Arc::new(flipped.clone()), cut: None, stall: 0 });
    let no_root = |e: &Env| {
        let left: Vec<_> = std::fs::read_dir(e.home.path().join("toolkits")).map(|rd| rd.flatten().map(|d| d.path()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "left in toolkits: {left:?}");
        assert!(!e.home.path().join("generations").exists());
        e.assert_no_leftovers();
    };
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let before = env.server.log().len();
    let out = fresh.cuenv().args(["apply", "--no-check", "--locked"]).arg(&lab).output().unwrap();
    assert_fails(&out, 2, &[&format!("{}{path}: SHA-256 is {}, but {} was expected", env.server.base, sha256_hex(&flipped), sha256_hex(&bytes))]);
    let log = env.server.log()[before..].to_vec();
    assert!(log.iter().any(|l| l.starts_with(&format!("GET {path} (bytes="))), "streamed: {log:?}");
    no_root(&fresh);

    // The stream breaks off halfway, and so does the whole download that follows (twice).
    env.server.route(&path, Route::Ranged { body: Arc::new(bytes.clone()), full: Arc::new(bytes.clone()), cut: Some(bytes.len() / 2), stall: 0 });
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = fresh.cuenv().args(["apply", "--no-check", "--locked"]).arg(&lab).output().unwrap();
    assert_fails(&out, 1, &[&format!("download of {}{path} broke off after {} bytes of {} (tried 2 times)", env.server.base, bytes.len() / 2, bytes.len())]);
    no_root(&fresh);
}

/// Applies `lab` (pinned) on a fresh home while the server breaks off the download of the
/// 8.9.4.25 wheel `w89` (bytes `b89`) halfway, every try: the apply fails naming the URL, makes
/// no generation and leaves nothing behind, and what the store holds is whole (the 9.5.0.50
/// entry at most) and verifies.
fn an_apply_whose_89_download_breaks_off_leaves_nothing(env: &Env, w89: &str, b89: &[u8], lab: &Path) {
    let third = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = third.cuenv().args(["apply", "--no-check", "--locked"]).arg(lab).output().unwrap();
    assert_fails(&out, 1, &[&format!("download of {}/files/{w89} broke off after {} bytes of {} (tried 2 times)", env.server.base, b89.len() / 2, b89.len())]);
    assert!(!third.home.path().join("generations").exists());
    third.assert_no_leftovers();
    let entries = third.entries();
    assert!(entries.len() <= 1 && entries.iter().all(|e| e["version"] == "9.5.0.50"), "{entries:?}");
    let out = third.cuenv().args(["store", "verify"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A file that lists `[toolkits]` chooses only among them, even when a CUDA
/// runtime fetched from PyPI for another lab is newer; `plan` says which root won and why.
#[test]
fn declared_toolkits_are_exclusive_and_plan_says_why() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let first = pypi_lab(dir.path());
    let out = env.cuenv().args(["apply", "--no-check", first.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A second lab on a hand-installed CUDA 12.2, declared under [toolkits].
    let other = tempfile::tempdir().unwrap();
    let tk = crate::support::lab::toolkit(other.path(), "12.2.0", 12);
    let lab = other.path().join("lab.toml");
    std::fs::write(&lab, format!("[toolkits]\n\"12.2\" = '{}'\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let out = env.cuenv().args(["plan", lab.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(plan.contains("+ profile a: cuDNN 9.5.0.50 (cudnn-9.5.0.50-cuda12-linux-x86_64-"), "{plan}");
    assert!(plan.contains(&format!("on CUDA 12.2.0 ({})", tk.display())), "{plan}");
    assert!(
        plan.contains(&format!(
            "    why: CUDA 12.2.0 at {}: the newest match for `cuda = \"12\"` among roots under [toolkits] (a file that lists [toolkits] chooses only among them); matching but not candidates: 12.6.77 at {}",
            tk.display(),
            env.home.path().join("toolkits").display()
        )),
        "{plan}"
    );
}

/// An air-gapped lab applies the shipped `profiles/lab.toml` from wheels
/// copied in by hand: `CUENV_FIND_LINKS` names the folder, `--offline` keeps cuenv off the
/// network, and the lock pins the bytes of those files (the same bytes PyPI serves).
#[test]
fn an_air_gapped_lab_applies_the_shipped_file_from_a_wheel_folder() {
    let env = Env::new();
    let wheels = tempfile::tempdir().unwrap();
    let put = |(name, bytes): (String, Vec<u8>)| {
        std::fs::write(wheels.path().join(&name), &bytes).unwrap();
        sha256_hex(&bytes)
    };
    let cudnn95 = put(linux_wheel("9.5.0.50", 12));
    put(linux_wheel("8.9.4.25", 12));
    put(linux_wheel("8.8.0.121", 11));
    for (project, pkg, version, lib, seed) in [
        ("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1),
        ("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2),
        ("nvidia-cuda-nvrtc-cu12", "cuda_nvrtc", "12.6.85", "libnvrtc.so.12", 3),
        ("nvidia-cuda-runtime-cu11", "cuda_runtime", "11.8.89", "libcudart.so.11.0", 4),
        // cuBLAS for CUDA 11.8 is 11.11.x: found by the CUDA major, as on PyPI.
        ("nvidia-cublas-cu11", "cublas", "11.11.3.6", "libcublas.so.11", 5),
        ("nvidia-cuda-nvrtc-cu11", "cuda_nvrtc", "11.8.89", "libnvrtc.so.11.2", 6),
    ] {
        put(runtime_wheel(project, pkg, version, lib, seed));
    }
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/lab.toml"), &lab).unwrap();
    let run = |args: &[&str]| env.cuenv().env("CUENV_FIND_LINKS", wheels.path()).env("CUENV_OFFLINE", "1").args(args).arg(&lab).output().unwrap();
    // Without the folder, --offline says how to bring the files in.
    let out = env.cuenv().args(["apply", "--offline", "--no-check"]).arg(&lab).output().unwrap();
    assert_fails(&out, 1, &["offline: cannot get", "CUENV_FIND_LINKS=DIR"]);
    let out = run(&["plan"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("+ fetch cuDNN 8.8.0.121 from PyPI, else NVIDIA; not checked (offline) for profile tf28"), "{}", text(&out.stdout));
    // `plan --locked` with no lock says so, although the views wait for the fetches.
    let out = run(&["plan", "--locked"]);
    assert_fails(&out, 2, &["the lock file does not exist"]);
    let out = run(&["apply", "--offline", "--no-check"]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("generation 1 is current (3 profiles)"), "{}", text(&out.stdout));
    assert!(env.server.log().is_empty(), "offline touched the network: {:?}", env.server.log());
    let lock = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    assert!(lock.contains(&format!("cudnn-sha256 = \"{cudnn95}\"")), "{lock}");
    assert!(lock.contains("nvidia-cublas-cu11==11.11.3.6 sha256:"), "{lock}");
    for p in ["torch", "legacy", "tf28"] {
        assert!(env.home.path().join("profiles").join(p).join("cudnn-lib").exists(), "{p}");
    }
    // Another air-gapped machine with the lock: --locked takes exactly these bytes again.
    let other = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = other.cuenv().env("CUENV_FIND_LINKS", wheels.path()).args(["apply", "--offline", "--no-check", "--locked"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(env.server.log().is_empty());
}

/// A profile names local files itself: its CUDA runtime from a folder of
/// the runtime's wheels (`cuda.from = "./wheels"`) and its cuDNN from a wheel path; applied
/// offline, nothing else configured.
#[test]
fn a_cuda_runtime_from_a_folder_of_wheels() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let wheels = dir.path().join("wheels");
    std::fs::create_dir(&wheels).unwrap();
    for (project, pkg, version, lib, seed) in [
        ("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1),
        ("nvidia-cublas-cu12", "cublas", "12.6.4.1", "libcublas.so.12", 2),
        ("nvidia-cuda-nvrtc-cu12", "cuda_nvrtc", "12.6.85", "libnvrtc.so.12", 3),
    ] {
        let (name, bytes) = runtime_wheel(project, pkg, version, lib, seed);
        std::fs::write(wheels.join(name), bytes).unwrap();
    }
    let (cudnn, bytes) = linux_wheel("9.5.0.50", 12);
    std::fs::write(wheels.join(&cudnn), bytes).unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::write(
        &lab,
        format!("[profiles.t]\ncuda = {{ version = \"12.6\", from = \"./wheels\" }}\ncudnn = {{ version = \"9.5.0.50\", from = \"wheels/{cudnn}\" }}\n"),
    )
    .unwrap();
    let out = env.cuenv().env("CUENV_OFFLINE", "1").args(["plan"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("CUDA runtime 12.6 (cudart, cuBLAS, NVRTC) from "), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("; the folder has 12.6.77"), "{}", text(&out.stdout));
    let out = env.cuenv().args(["apply", "--offline", "--no-check"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("+ CUDA runtime 12.6 from "), "{}", text(&out.stdout));
    let lock = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    assert!(lock.contains("nvidia-cuda-runtime-cu12==12.6.77 sha256:"), "{lock}");
    assert!(env.server.log().is_empty(), "{:?}", env.server.log());
    // A folder that is not there is an error of its own, at its line.
    std::fs::write(&lab, "[profiles.t]\ncuda = { version = \"12.6\", from = \"./nowhere\" }\ncudnn = \"9.5\"\n").unwrap();
    let out = env.cuenv().args(["plan"]).arg(&lab).output().unwrap();
    assert_fails(&out, 2, &["lab.toml:2:35: `from = \"./nowhere\"` is not a folder (of the CUDA runtime's wheels"]);
}

// ---------------------------------------------------------------------------------------
// `cuenv lock --platform`: another platform's section of lab.lock, filled from Linux.

/// A Windows runtime-style wheel `nvidia_<pkg>_cu12-<version>-py3-none-win_amd64.whl`
/// holding `nvidia/<pkg>/bin/<dll>` (a PE32+ DLL built at test time).
fn windows_runtime_wheel(project: &str, pkg: &str, version: &str, dll: &str) -> (String, Vec<u8>) {
    let name = format!("{}-{version}-py3-none-win_amd64.whl", project.replace('-', "_"));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file(format!("nvidia/{pkg}/bin/{dll}"), opts).unwrap();
    zip.write_all(&support::pe_dll(support::PeArch::Amd64, None, dll)).unwrap();
    zip.start_file(format!("nvidia/{pkg}/__init__.py"), opts).unwrap();
    (name, zip.finish().unwrap().into_inner())
}

/// Adds the win_amd64 wheels of cuDNN 9.5.0.50 and of the three CUDA 12 runtime projects to
/// what [`serve_pypi`] and [`serve_runtime`] serve. Returns the SHA-256 of the cuDNN wheel and
/// of the cudart wheel.
fn serve_windows_wheels(s: &Server) -> (String, String) {
    let json_at = |path: &str| -> Value {
        let Some(Route::Ok(doc)) = s.routes.lock().unwrap().get(path).cloned() else { panic!("{path} is not served") };
        serde_json::from_slice(&doc).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let r = support::Release { version: [9, 5, 0, 50], cuda: 12 };
    let path = support::wheel(dir.path(), &r, support::WheelOs::Windows);
    let (name, bytes) = (path.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read(&path).unwrap());
    let f = pypi_file(s, &name, &bytes);
    s.ok(&format!("/files/{name}"), bytes.clone());
    let mut version_doc = json_at("/pypi/nvidia-cudnn-cu12/9.5.0.50/json");
    version_doc["urls"][1] = f.clone();
    s.ok("/pypi/nvidia-cudnn-cu12/9.5.0.50/json", version_doc.to_string());
    let mut project_doc = json_at("/pypi/nvidia-cudnn-cu12/json");
    project_doc["releases"]["9.5.0.50"][1] = f;
    s.ok("/pypi/nvidia-cudnn-cu12/json", project_doc.to_string());
    let mut cudart = String::new();
    for (project, pkg, version, dll) in [
        ("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "cudart64_12.dll"),
        ("nvidia-cublas-cu12", "cublas", "12.6.4.1", "cublas64_12.dll"),
        ("nvidia-cuda-nvrtc-cu12", "cuda_nvrtc", "12.6.85", "nvrtc64_120_0.dll"),
    ] {
        let (wname, wbytes) = windows_runtime_wheel(project, pkg, version, dll);
        if cudart.is_empty() {
            cudart = sha256_hex(&wbytes);
        }
        let mut doc = json_at(&format!("/pypi/{project}/json"));
        doc["releases"][version].as_array_mut().unwrap().push(pypi_file(s, &wname, &wbytes));
        s.ok(&format!("/pypi/{project}/json"), doc.to_string());
        s.ok(&format!("/files/{wname}"), wbytes);
    }
    (sha256_hex(&bytes), cudart)
}

/// Serves every CUDA runtime wheel of `s` (both platforms) with byte ranges, so `apply` and
/// `lock` extract them while they download.
fn serve_runtime_ranged(s: &Server) {
    let mut routes = s.routes.lock().unwrap();
    for (path, route) in routes.iter_mut() {
        let runtime = ["nvidia_cuda_runtime_", "nvidia_cublas_", "nvidia_cuda_nvrtc_"].iter().any(|p| path.starts_with(&format!("/files/{p}")));
        if let (true, Route::Ok(body)) = (runtime, route.clone()) {
            *route = Route::Ranged { body: body.clone(), full: body, cut: None, stall: 0 };
        }
    }
}

/// This host's platform name and the other one's (Linux <-> Windows).
fn host_and_other() -> (&'static str, &'static str) {
    if cfg!(windows) { ("windows-x86_64", "linux-x86_64") } else { ("linux-x86_64", "windows-x86_64") }
}

/// A lab whose one profile takes cuDNN 9.5.0.50 and the CUDA 12.6 runtime from PyPI.
fn pypi_lab(dir: &Path) -> std::path::PathBuf {
    let lab = dir.join("lab.toml");
    std::fs::write(&lab, "[profiles.torch]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"9.5.0.50\", from = \"pypi\" }\n").unwrap();
    lab
}

#[test]
fn lock_fills_another_platforms_section_and_keeps_this_ones() {
    let env = Env::new();
    let (_, linux_cudnn) = serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    let (windows_cudnn_sha, windows_cudart_sha) = serve_windows_wheels(&env.server);
    // The runtime wheels of both platforms are extracted while they download (the same
    // code on either host: this runs under Wine too).
    serve_runtime_ranged(&env.server);
    let linux_cudart_sha = sha256_hex(&runtime_wheel("nvidia-cuda-runtime-cu12", "cuda_runtime", "12.6.77", "libcudart.so.12", 1).1);
    let (host, other) = host_and_other();
    let (other_cudnn_sha, other_cudart_sha) =
        if cfg!(windows) { (sha256_hex(&linux_cudnn), linux_cudart_sha) } else { (windows_cudnn_sha, windows_cudart_sha) };
    let dir = tempfile::tempdir().unwrap();
    let lab = pypi_lab(dir.path());
    let lab_s = lab.to_str().unwrap();
    let lock_path = dir.path().join("lab.lock");

    // This host's section first (`lock` without --platform).
    let out = env.cuenv().args(["lock", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let host_only = std::fs::read_to_string(&lock_path).unwrap();
    assert!(host_only.contains(&format!("[platforms.{host}.profiles.torch]")) && !host_only.contains(other), "{host_only}");

    // `lock --platform <other>` fetches the other platform's wheels and adds its section.
    let out = env.cuenv().args(["lock", lab_s, "--platform", other]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("+ CUDA runtime 12.6 from PyPI") && said.contains("+ cuDNN 9.5.0.50 for CUDA 12 from"), "{said}");
    assert!(said.contains(&format!("{other}: 1 profile locked, written to")), "{said}");
    let both = std::fs::read_to_string(&lock_path).unwrap();
    assert!(both.starts_with(&host_only), "this host's section is kept byte for byte:\n{both}");
    let added = &both[host_only.len()..];
    assert!(added.contains(&format!("[platforms.{other}.profiles.torch]")), "{added}");
    assert!(added.contains(&format!("toolkit-root = \"${{CUENV_HOME}}/toolkits/cuda-12.6.77-{other}-")), "{added}");
    assert!(added.contains(&format!("cudnn-name = \"cudnn-9.5.0.50-cuda12-{other}-")), "{added}");
    assert!(added.contains(&format!("cudnn-sha256 = \"{other_cudnn_sha}\"")), "{added}");
    assert!(added.contains(&format!("\"nvidia-cuda-runtime-cu12==12.6.77 sha256:{other_cudart_sha}\"")), "{added}");
    let other_tag = if other.starts_with("windows") { "win_amd64" } else { "manylinux2014_x86_64" };
    let streamed =
        env.server.log().iter().any(|l| l.starts_with("GET /files/nvidia_cublas_cu12-12.6.4.1-py3-none-") && l.contains(other_tag) && l.contains(" (bytes="));
    assert!(streamed, "the other platform's cuBLAS wheel was extracted while it downloaded: {:?}", env.server.log());

    // Locking both again changes nothing.
    let out = env.cuenv().args(["lock", lab_s, "--platform", other, "--platform", host]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("{other}: 1 profile locked, unchanged in")), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), both);

    // Another machine: `lock --locked` for the other platform gets exactly the pinned bytes.
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = fresh.cuenv().args(["lock", "--locked", lab_s, "--platform", other]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), both);
    // A missing section is drift for --locked, said before anything is fetched.
    let out = fresh.cuenv().args(["lock", "--locked", lab_s, "--platform", "linux-sbsa"]).output().unwrap();
    assert_fails(
        &out,
        2,
        &[
            "does not match",
            "for linux-sbsa",
            "the lock file has no linux-sbsa section",
            &format!("hint: run `cuenv lock {lab_s} --platform linux-sbsa` to write it"),
        ],
    );
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), both, "nothing written");

    // A profile on an installed toolkit cannot be locked for another platform.
    let tk = dir.path().join("lab2.toml");
    std::fs::write(&tk, "[profiles.torch]\ncuda = \"12\"\ncudnn = { version = \"9.5.0.50\", from = \"pypi\" }\n").unwrap();
    let out = env.cuenv().args(["lock", tk.to_str().unwrap(), "--platform", other]).output().unwrap();
    let msg = format!("which only a {other} machine can see");
    let hint = format!("hint: run `cuenv lock` on a {other} machine");
    assert_fails(&out, 2, &["lab2.toml:2:8", &msg, &hint]);
    assert!(!dir.path().join("lab2.lock").exists());
}

/// `apply` rewrites only its host's section; `gc` keeps the store entries other sections name.
#[test]
fn apply_keeps_other_platforms_sections_and_gc_their_entries() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    serve_windows_wheels(&env.server);
    let (_, other) = host_and_other();
    let dir = tempfile::tempdir().unwrap();
    let lab = pypi_lab(dir.path());
    let lab_s = lab.to_str().unwrap();
    let out = env.cuenv().args(["lock", lab_s, "--platform", other]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let other_only = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    let out = env.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let both = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    assert!(both.starts_with(&other_only) && both.len() > other_only.len(), "{both}");
    let out = env.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = env.cuenv().args(["gc"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("deleted store entry"), "{}", text(&out.stdout));
    assert_eq!(env.entries().len(), 2, "this host's entry and the other platform's");
    assert_eq!(std::fs::read_to_string(dir.path().join("lab.lock")).unwrap(), both);
}

/// `store fetch` records its entry as added by hand (a gc root until
/// `store remove`); an entry `apply` fetched for a profile is no root, until `store fetch`
/// asks for the same bytes by hand.
#[test]
fn store_fetch_records_a_root_and_apply_fetches_none() {
    let roots = |env: &Env| {
        let layout = cuenv::home::layout::Layout::new(env.home.path());
        cuenv::store::Store::new(&layout).hand_added_ids()
    };
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = env.entries()[0]["id"].as_str().unwrap().to_string();
    assert_eq!(roots(&env), [id].into_iter().collect());

    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let lab = pypi_lab(dir.path());
    let out = env.cuenv().args(["apply", "--no-check", lab.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = env.entries();
    assert_eq!(entries.len(), 1);
    assert!(roots(&env).is_empty(), "apply's import is no root: {:?}", roots(&env));
    let out = env.fetch(&["cudnn@9.5.0.50", "--cuda", "12"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("already in store: "), "{}", text(&out.stdout));
    assert_eq!(roots(&env), [entries[0]["id"].as_str().unwrap().to_string()].into_iter().collect());
}

// ---------------------------------------------------------------------------------------
// CUDA 13 from PyPI: the runtime projects are unsuffixed (`nvidia-cuda-runtime`
// 13.x; the `-cu13` names are empty placeholders) and put their libraries under a shared
// `nvidia/cu13/`: `lib/*.so.13` on Linux, `bin/x86_64/*.dll` on Windows (next to
// `lib/x64/*.lib` import libraries), as the real 13.0 wheels do (docs/facts.md §2).

/// A CUDA 13 runtime-style wheel of `project` holding `files` (paths inside the wheel) for
/// `tag` (`manylinux_2_27_x86_64`, `win_amd64`).
fn cu13_wheel(project: &str, version: &str, tag: &str, files: &[&str]) -> (String, Vec<u8>) {
    let name = format!("{}-{version}-py3-none-{tag}.whl", project.replace('-', "_"));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (i, f) in files.iter().enumerate() {
        zip.start_file(*f, opts).unwrap();
        let file = f.rsplit('/').next().unwrap();
        let bytes = if file.ends_with(".dll") { support::pe_dll(support::PeArch::Amd64, None, file) } else { elf_so(40 + i as u8) };
        zip.write_all(&bytes).unwrap();
    }
    zip.start_file(format!("{}-{version}.dist-info/METADATA", project.replace('-', "_")), opts).unwrap();
    zip.write_all(format!("Metadata-Version: 2.4\nName: {project}\nVersion: {version}\n").as_bytes()).unwrap();
    (name, zip.finish().unwrap().into_inner())
}

/// Serves `nvidia-cudnn-cu13` 9.14.0.64 (Linux and Windows wheels) and the unsuffixed CUDA 13.0
/// runtime projects, each for both platforms, as project documents.
fn serve_cuda13(s: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let (lname, lbytes) = linux_wheel("9.14.0.64", 13);
    let wpath = support::wheel(dir.path(), &support::Release { version: [9, 14, 0, 64], cuda: 13 }, support::WheelOs::Windows);
    let (wname, wbytes) = (wpath.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read(&wpath).unwrap());
    let files = [pypi_file(s, &lname, &lbytes), pypi_file(s, &wname, &wbytes)];
    s.ok("/pypi/nvidia-cudnn-cu13/9.14.0.64/json", json!({"info": {"name": "nvidia-cudnn-cu13", "version": "9.14.0.64"}, "urls": files}).to_string());
    s.ok("/pypi/nvidia-cudnn-cu13/json", json!({"info": {"name": "nvidia-cudnn-cu13"}, "releases": {"9.14.0.64": files}}).to_string());
    s.ok(&format!("/files/{lname}"), lbytes);
    s.ok(&format!("/files/{wname}"), wbytes);
    let linux = "manylinux_2_27_x86_64";
    for (project, version, lin, win) in [
        (
            "nvidia-cuda-runtime",
            "13.0.96",
            vec!["nvidia/cu13/lib/libcudart.so.13", "nvidia/cu13/lib/libcudart_static.a"],
            vec!["nvidia/cu13/bin/x86_64/cudart64_13.dll", "nvidia/cu13/lib/x64/cudart.lib"],
        ),
        (
            "nvidia-cublas",
            "13.0.2.14",
            vec!["nvidia/cu13/lib/libcublas.so.13", "nvidia/cu13/lib/libcublasLt.so.13"],
            vec!["nvidia/cu13/bin/x86_64/cublas64_13.dll", "nvidia/cu13/bin/x86_64/cublasLt64_13.dll"],
        ),
        ("nvidia-cuda-nvrtc", "13.0.88", vec!["nvidia/cu13/lib/libnvrtc.so.13"], vec!["nvidia/cu13/bin/x86_64/nvrtc64_130_0.dll"]),
    ] {
        let (ln, lb) = cu13_wheel(project, version, linux, &lin);
        let (wn, wb) = cu13_wheel(project, version, "win_amd64", &win);
        let files = [pypi_file(s, &ln, &lb), pypi_file(s, &wn, &wb)];
        s.ok(&format!("/pypi/{project}/json"), json!({"info": {"name": project}, "releases": {version: files}}).to_string());
        s.ok(&format!("/files/{ln}"), lb);
        s.ok(&format!("/files/{wn}"), wb);
    }
}

#[test]
fn cuda13_runtime_and_cudnn_from_pypi_for_both_platforms() {
    let env = Env::new();
    serve_cuda13(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.toml");
    std::fs::write(&lab, "[profiles.cu13]\ncuda = { version = \"13.0\", from = \"pypi\" }\ncudnn = { version = \"9.14.0.64\", from = \"pypi\" }\n").unwrap();
    let out = env.cuenv().args(["lock", lab.to_str().unwrap(), "--platform", "linux-x86_64", "--platform", "windows-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let lock = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    for platform in ["linux-x86_64", "windows-x86_64"] {
        assert!(lock.contains(&format!("cudnn-name = \"cudnn-9.14.0.64-cuda13-{platform}-")), "{lock}");
        assert!(lock.contains(&format!("toolkit-root = \"${{CUENV_HOME}}/toolkits/cuda-13.0.96-{platform}-")), "{lock}");
    }
    for pin in ["\"nvidia-cuda-runtime==13.0.96 sha256:", "\"nvidia-cublas==13.0.2.14 sha256:", "\"nvidia-cuda-nvrtc==13.0.88 sha256:"] {
        assert_eq!(lock.matches(pin).count(), 2, "{pin} once per platform:\n{lock}");
    }
    // The runtime roots hold the libraries of the shared nvidia/cu13/ folder, and nothing else.
    let roots: Vec<std::path::PathBuf> =
        std::fs::read_dir(env.home.path().join("toolkits")).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("runtime.toml").exists()).collect();
    let files = |platform: &str, folder: &str| -> Vec<String> {
        let root = roots.iter().find(|r| r.file_name().unwrap().to_string_lossy().starts_with(&format!("cuda-13.0.96-{platform}-"))).expect(platform);
        let mut v: Vec<String> = std::fs::read_dir(root.join(folder)).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(files("linux-x86_64", "lib"), ["libcublas.so.13", "libcublasLt.so.13", "libcudart.so.13", "libnvrtc.so.13"]);
    assert_eq!(files("windows-x86_64", "bin"), ["cublas64_13.dll", "cublasLt64_13.dll", "cudart64_13.dll", "nvrtc64_130_0.dll"]);
    env.assert_no_leftovers();
}

/// NVIDIA's 9.11+ manifests offer `cuda12` and `cuda13` variants; a cuda13 Windows archive puts
/// its DLLs in `bin/x64/`.
#[test]
fn nvidia_cuda13_variant_for_linux_and_windows_bin_x64() {
    let env = Env::new();
    let (lname, lbytes) = linux_archive("9.14.0.64", "13");
    let (l12name, l12bytes) = linux_archive("9.14.0.64", "12");
    let dir = tempfile::tempdir().unwrap();
    let wpath = support::windows_zip(dir.path(), &support::Release { version: [9, 14, 0, 64], cuda: 13 }, support::BinDir::BinX64);
    let (wname, wbytes) = (wpath.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read(&wpath).unwrap());
    let put = |platform: &str, name: &str, bytes: Vec<u8>| {
        let rel = format!("cudnn/{platform}/{name}");
        let a = artifact(&rel, &bytes);
        env.server.ok(&format!("/redist/{rel}"), bytes);
        a
    };
    let (l13, l12, w13) = (put("linux-x86_64", &lname, lbytes), put("linux-x86_64", &l12name, l12bytes), put("windows-x86_64", &wname, wbytes));
    let manifest = json!({"release_date": "2025-10-08", "release_label": "9.14.0", "release_product": "cudnn",
        "cudnn": {"name": "x", "version": "9.14.0.64", "cuda_variant": ["12", "13"],
                  "linux-x86_64": {"cuda12": l12, "cuda13": l13}, "windows-x86_64": {"cuda13": w13}}});
    env.server.ok("/redist/redistrib_9.14.0.json", manifest.to_string());
    let out = env.fetch(&["cudnn@9.14.0", "--cuda", "13", "--from", "nvidia"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("added cudnn-9.14.0.64-cuda13-linux-x86_64-"), "{}", text(&out.stdout));
    let out = env.cuenv().args(["store", "fetch", "cudnn@9.14.0.64", "--cuda", "13", "--from", "nvidia", "--platform", "windows-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("added cudnn-9.14.0.64-cuda13-windows-x86_64-"), "{}", text(&out.stdout));
    let win = env.entries().into_iter().find(|e| e["platform"] == "windows-x86_64").unwrap();
    let meta: toml::Table = std::fs::read_to_string(Path::new(win["path"].as_str().unwrap()).join("entry.toml")).unwrap().parse().unwrap();
    assert_eq!(meta["layout"]["bin"].as_str(), Some("bin/x64"));
    assert_eq!(meta["cuda_major"].as_integer(), Some(13));
    // Asking for a variant the manifest lacks lists the cuda13 ones it has.
    let out = env.cuenv().args(["store", "fetch", "cudnn@9.14.0.64", "--cuda", "12", "--from", "nvidia", "--platform", "windows-x86_64"]).output().unwrap();
    assert_fails(&out, 2, &["offered: linux-x86_64/cuda12, linux-x86_64/cuda13, windows-x86_64/cuda13"]);
    env.assert_no_leftovers();
}

// ---------------------------------------------------------------------------------------
// A source list `from = ["pypi", "nvidia"]` tried in order; `lock --allow-unreachable`.

/// A lab of two profiles on the CUDA 12.6 runtime from PyPI whose cuDNN comes from PyPI,
/// else NVIDIA: `torch` (9.5.0.50, which the local PyPI has a Linux wheel of) and `legacy`
/// (8.9.4.25, which it lists without a wheel; the local NVIDIA redist has its archive).
fn fallback_lab(dir: &Path) -> std::path::PathBuf {
    let lab = dir.join("lab.toml");
    std::fs::write(
        &lab,
        "[profiles.torch]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"9.5.0.50\", from = [\"pypi\", \"nvidia\"] }\n\n\
         [profiles.legacy]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = { version = \"8.9.4.25\", from = [\"pypi\", \"nvidia\"] }\n",
    )
    .unwrap();
    lab
}

/// The profile tables of `section` (`[platforms.<section>.profiles.<name>]`) in `lock`, by name.
fn lock_tables(lock: &str, platform: &str) -> toml::Table {
    let t: toml::Table = lock.parse().unwrap();
    t["platforms"][platform]["profiles"].as_table().unwrap().clone()
}

#[test]
fn a_source_list_falls_through_to_nvidia_and_the_lock_records_who_served() {
    let env = Env::new();
    let (pypi_wheel, _) = serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    serve_nvidia(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let lab = fallback_lab(dir.path());
    let lab_s = lab.to_str().unwrap();
    let archive = linux_archive("8.9.4.25", "12").0;

    let out = env.cuenv().args(["plan", lab_s]).output().unwrap();
    assert!(text(&out.stdout).contains("+ fetch cuDNN 8.9.4.25 from PyPI, else NVIDIA"), "{}", text(&out.stdout));
    let out = env.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains(&format!("+ cuDNN 9.5.0.50 for CUDA 12 from {}/files/{pypi_wheel}", env.server.base)), "{said}");
    assert!(said.contains(&format!("+ cuDNN 8.9.4.25 for CUDA 12 from {}/redist/cudnn/linux-x86_64/{archive}", env.server.base)), "{said}");
    let lock = std::fs::read_to_string(dir.path().join("lab.lock")).unwrap();
    assert!(lock.contains("\nversion = 3\n"), "{lock}");
    let tables = lock_tables(&lock, "linux-x86_64");
    assert_eq!(tables["torch"]["cudnn-source"].as_str(), Some("pypi"), "{lock}");
    assert_eq!(tables["legacy"]["cudnn-source"].as_str(), Some("nvidia"), "{lock}");
    assert_eq!(tables["legacy"]["cudnn-sha256"].as_str(), Some(sha256_hex(&linux_archive("8.9.4.25", "12").1).as_str()));

    // PyPI now has a Linux wheel of 8.9.4.25 too: another machine with this lock still gets
    // the NVIDIA archive the lock pins (the recorded source alone is asked).
    let (name, bytes) = linux_wheel("8.9.4.25", 12);
    let f = pypi_file(&env.server, &name, &bytes);
    env.server.ok("/pypi/nvidia-cudnn-cu12/8.9.4.25/json", json!({"info": {"version": "8.9.4.25"}, "urls": [f]}).to_string());
    env.server.ok(&format!("/files/{name}"), bytes);
    let other = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = other.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(env.server.hits(&format!("/files/{name}")), 0, "the PyPI wheel was not fetched");
    assert_eq!(env.server.hits(&format!("/redist/cudnn/linux-x86_64/{archive}")), 2);
    assert_eq!(std::fs::read_to_string(dir.path().join("lab.lock")).unwrap(), lock);
}

#[test]
fn lock_allow_unreachable_writes_an_unpinned_profile_that_apply_pins() {
    let env = Env::new();
    serve_pypi(&env.server, |_| {});
    serve_runtime(&env.server);
    serve_nvidia(&env.server);
    let dir = tempfile::tempdir().unwrap();
    let lab = fallback_lab(dir.path());
    let lab_s = lab.to_str().unwrap();
    let lock_path = dir.path().join("lab.lock");
    // NVIDIA's server cannot be reached (nothing listens on port 1).
    let cut = |env: &Env| {
        let mut c = env.cuenv();
        c.env("CUENV_NVIDIA_MIRROR", "http://127.0.0.1:1/redist/");
        c
    };

    // Without the flag `lock --platform` stays all or nothing.
    let out = cut(&env).args(["lock", lab_s, "--platform", "linux-x86_64"]).output().unwrap();
    assert_fails(&out, 1, &["cannot reach http://127.0.0.1:1/redist/redistrib_8.9.4.25.json"]);
    assert!(!lock_path.exists());

    let out = cut(&env).args(["lock", lab_s, "--platform", "linux-x86_64", "--allow-unreachable"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let reason = "cuDNN 8.9.4.25 for CUDA 12 (linux-x86_64): PyPI has no linux-x86_64 wheel; NVIDIA could not be reached";
    assert!(said.contains(&format!("? legacy: unpinned: {reason}\n")), "{said}");
    assert!(said.contains("linux-x86_64: 1 profile locked, 1 unpinned, written to"), "{said}");
    let unpinned = std::fs::read_to_string(&lock_path).unwrap();
    assert!(unpinned.ends_with(&format!("[platforms.linux-x86_64.profiles.legacy]\nunpinned = \"{reason}\"\n")), "{unpinned}");
    assert!(lock_tables(&unpinned, "linux-x86_64")["torch"].get("cudnn-sha256").is_some());

    // Still unreachable: `--locked --allow-unreachable` holds; `--locked` alone does not.
    let out = cut(&env).args(["lock", "--locked", "--allow-unreachable", lab_s, "--platform", "linux-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), unpinned);
    let out = cut(&env).args(["lock", "--locked", lab_s, "--platform", "linux-x86_64"]).output().unwrap();
    assert_fails(&out, 2, &["profile legacy is unpinned for linux-x86_64", reason]);

    // `apply --locked` on that section fails with the explanation, before fetching anything.
    let fresh = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let before = env.server.log().len();
    let out = fresh.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert_fails(
        &out,
        2,
        &[
            "does not match",
            "profile legacy is unpinned for linux-x86_64 (its sources could not be reached when the lock was written)",
            &format!("hint: the first `cuenv apply {lab_s}` without --locked on a linux-x86_64 machine pins profile legacy"),
        ],
    );
    assert_eq!(env.server.log().len(), before, "nothing was fetched");
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), unpinned);

    // NVIDIA reachable again: `lock --locked --allow-unreachable` now has something to pin.
    let out = env.cuenv().args(["lock", "--locked", "--allow-unreachable", lab_s, "--platform", "linux-x86_64"]).output().unwrap();
    assert_fails(&out, 2, &["profile legacy is unpinned"]);

    // The first apply on that platform pins it.
    let out = fresh.cuenv().args(["apply", "--no-check", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let pinned = std::fs::read_to_string(&lock_path).unwrap();
    assert!(!pinned.contains("unpinned"), "{pinned}");
    let tables = lock_tables(&pinned, "linux-x86_64");
    assert_eq!(tables["legacy"]["cudnn-source"].as_str(), Some("nvidia"), "{pinned}");
    assert!(pinned.starts_with(&unpinned[..unpinned.find("[platforms.linux-x86_64.profiles.legacy]").unwrap()]), "torch's table is kept:\n{pinned}");
    let out = fresh.cuenv().args(["apply", "--no-check", "--locked", lab_s]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A pin is never dropped for a source that cannot be reached: another machine keeps it.
    let third = Env { home: tempfile::tempdir().unwrap(), server: env.server.clone() };
    let out = cut(&third).args(["lock", "--allow-unreachable", lab_s, "--platform", "linux-x86_64"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("? legacy: its pin is kept: "), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("linux-x86_64: 2 profiles locked, unchanged in"), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), pinned);
}
