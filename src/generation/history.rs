//! `history.jsonl`: one line per switch (apply, rollback, revert), appended after the commit
//! point.

use super::*;

/// One history line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// RFC 3339 time of the switch.
    pub time: String,
    /// What the switch was for.
    pub op: SwitchOp,
    /// Generation current before (none for the first apply).
    pub from: Option<u64>,
    /// Generation current after.
    pub to: u64,
}

/// All history records, oldest first. Unreadable lines are skipped.
pub fn history(layout: &Layout) -> Vec<HistoryRecord> {
    // Only a regular file is read: a FIFO planted there would block the reader forever.
    if !fs::symlink_metadata(layout.history()).is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    fs::read_to_string(layout.history()).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Appends one record as one `write` of the whole line (record and newline together), so a
/// kill leaves either the whole line or a prefix of it, never a record whose newline comes
/// with the next one. A last line left unterminated by such a kill is ended first, so the
/// next record starts a line of its own (the cut line alone is lost; [`history`] skips it).
pub(super) fn append_history(layout: &Layout, rec: &HistoryRecord) -> Result<(), Error> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let path = layout.history();
    // Not a regular file (a planted folder, FIFO or link): no history cuenv wrote. Removed
    // (a link as a link), so the switch goes on and nothing blocks or is written through a link.
    if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
        crate::sys::fsutil::remove_tree(&path).map_err(io_at("remove", &path))?;
    }
    let mut f = fs::OpenOptions::new().create(true).read(true).append(true).open(&path).map_err(io_at("open the history", &path))?;
    let len = f.metadata().map_err(io_at("read the history", &path))?.len();
    let mut line = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1)).and_then(|_| f.read_exact(&mut last)).map_err(io_at("read the history", &path))?;
        if last[0] != b'\n' {
            line.push('\n');
        }
    }
    line.push_str(&serde_json::to_string(rec).map_err(crate::error::unserializable).map_err(io_at("append to the history", &path))?);
    line.push('\n');
    f.write_all(line.as_bytes()).map_err(io_at("append to the history", &path))?;
    f.sync_all().map_err(io_at("append to the history", &path))
}
