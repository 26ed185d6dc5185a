//! What an import proves (docs/performance.md "What an import proves", docs/decisions.md 11):
//! a wheel whose archive digest is authenticated (`store add --sha256`, a lab.lock pin, the
//! index's digest) takes its files' SHA-256 from RECORD instead of hashing them again; every
//! member is still CRC-checked, the archive digest is still compared, and `store verify`
//! always re-hashes. Members larger than 8 MiB are inflated whole into their mapped file.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use crate::support::*;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SHA-256 of a file, as 64 hex digits.
fn sha_hex(path: &Path) -> String {
    hex::encode(sha2::Sha256::digest(fs::read(path).unwrap()))
}

/// The recorded SHA-256 of `rel` in the only entry's `entry.toml`.
fn recorded(ctx: &TestContext, rel: &str) -> String {
    let meta = ctx.entry_toml(&ctx.only_entry());
    let files = meta["files"].as_array().unwrap();
    let f = files.iter().find(|f| f["path"].as_str() == Some(rel)).unwrap_or_else(|| panic!("{rel} not recorded"));
    f["sha256"].as_str().unwrap().to_string()
}

/// 12 MiB that deflate compresses but not to nothing (a counter's bytes), so the member takes
/// the mapped path (over 8 MiB) and its inflate does real work.
fn big_payload() -> Vec<u8> {
    (0u32..3 << 20).flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 7).to_le_bytes()).map(|b| b & 0x3f).collect()
}

/// A Windows cuDNN 9 wheel with one extra 12 MiB library beside the set, RECORD right.
pub(crate) fn wheel_with_big_member(dir: &Path) -> PathBuf {
    let r = Release::V9;
    let mut t = wheel_payload(&r, WheelOs::Windows);
    t.file("nvidia/cudnn/bin/cudnn_big_extra.dat", big_payload());
    let di = dist_info(&r);
    t.file(format!("{di}/METADATA"), r.metadata());
    t.file(format!("{di}/WHEEL"), "Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\nTag: py3-none-win_amd64\n");
    add_record(&mut t, &di);
    let path = dir.join(r.wheel_name(WheelOs::Windows.tag()));
    t.write_zip(&path);
    path
}

/// The pinned and the unpinned import give the same entry, byte for byte of `entry.toml`'s
/// file records: RECORD's digests are the content's, and the 12 MiB member inflated into its
/// mapped file is what was packed.
#[test]
fn a_pinned_and_an_unpinned_import_record_the_same_digests() {
    let ctx = TestContext::new();
    let wheel = wheel_with_big_member(&ctx.work);
    let pinned = ctx.add_ok(&wheel, &["--sha256", &sha_hex(&wheel)]);
    let entry = ctx.only_entry();
    assert_eq!(fs::read(entry.join("bin/cudnn_big_extra.dat")).unwrap(), big_payload());
    let files_pinned = ctx.entry_toml(&entry)["files"].clone();
    let other = TestContext::new();
    let unpinned = other.add_ok(&wheel, &[]);
    assert_eq!(pinned["id"], unpinned["id"], "{pinned}\n{unpinned}");
    assert_eq!(files_pinned, other.entry_toml(&other.only_entry())["files"]);
    let out = ctx.cmd().args(["store", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// A wheel whose RECORD lies about one DLL: unpinned, the RECORD check refuses it (rule 2);
/// pinned, the digest RECORD gives is recorded without hashing the file again (the entry shows
/// RECORD's value, not the content's), and `store verify`, which always re-hashes, names the
/// file at once. The lie is never hidden.
#[test]
fn a_pinned_wheel_takes_record_digests_and_verify_still_finds_a_lying_record() {
    let ctx = TestContext::new();
    let wheel = hostile::wheel_with_wrong_record_hash(&ctx.work, "cudnn_adv64_9.dll");
    let err = ctx.add_refused(&wheel, &[]);
    assert!(err.contains("its SHA-256 differs from RECORD's"), "{err}");
    ctx.add_ok(&wheel, &["--sha256", &sha_hex(&wheel)]);
    let entry = ctx.only_entry();
    let content = sha_hex(&entry.join("bin/cudnn_adv64_9.dll"));
    assert_ne!(recorded(&ctx, "bin/cudnn_adv64_9.dll"), content, "the pinned import hashed the file instead of taking RECORD's digest");
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["modified"], serde_json::json!(["bin/cudnn_adv64_9.dll"]));
}

/// One byte flipped inside a deflated member, and the flipped archive's own digest given: the
/// digest matches, so only the member's CRC-32 (or its deflate data) can catch it, and it does,
/// on the small path and on the mapped one; nothing reaches the store.
#[test]
fn a_flipped_byte_in_a_pinned_wheel_is_caught_by_the_crc() {
    let ctx = TestContext::new();
    for member in ["nvidia/cudnn/bin/cudnn_ops64_9.dll", "nvidia/cudnn/bin/cudnn_big_extra.dat"] {
        let wheel = wheel_with_big_member(&ctx.work);
        let (start, len) = {
            let mut z = zip::ZipArchive::new(fs::File::open(&wheel).unwrap()).unwrap();
            let f = z.by_name(member).unwrap();
            (f.data_start().unwrap(), f.compressed_size())
        };
        let mut bytes = fs::read(&wheel).unwrap();
        bytes[(start + len / 2) as usize] ^= 0x01;
        fs::write(&wheel, &bytes).unwrap();
        let err = ctx.add_refused(&wheel, &["--sha256", &sha_hex(&wheel)]);
        assert!(err.contains("is damaged") && err.contains(member), "{member}: {err}");
    }
}

/// A pinned digest that is not the archive's is refused after the extraction that took
/// RECORD's digests, with nothing kept.
#[test]
fn a_pinned_wheel_with_another_digest_is_refused() {
    let ctx = TestContext::new();
    let wheel = wheel_with_big_member(&ctx.work);
    let err = ctx.add_refused(&wheel, &["--sha256", &"ab".repeat(32)]);
    assert!(err.contains("SHA-256") || err.contains("sha256"), "{err}");
}
