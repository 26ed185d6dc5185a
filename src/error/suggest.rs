//! "Did you mean": the closest known word to a mistyped one, for hints.
//!
//! Pure. A suggestion is made only when the word is close enough to be a typo.

/// The entry of `choices` closest to `word` by edit distance, if close enough to be a typo:
/// at most 1 edit for words up to 4 characters, else at most a third of the length.
/// Case and `_` / `-` differences count as nothing.
pub fn did_you_mean<'c>(word: &str, choices: &[&'c str]) -> Option<&'c str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    let w = norm(word);
    let limit = (w.chars().count() / 3).max(1);
    let common_prefix = |c: &str| w.chars().zip(c.chars()).take_while(|(a, b)| a == b).count();
    choices
        .iter()
        // Optimal string alignment: a swap of two neighbours (`form` for `from`) costs 1.
        .map(|c| (strsim::osa_distance(&w, &norm(c)), *c))
        .filter(|(d, _)| *d <= limit)
        // Ties go to the longer shared start: `cudn` is `cudnn` missing a letter, not `cuda`.
        .min_by_key(|(d, c)| (*d, std::cmp::Reverse(common_prefix(&norm(c)))))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The keys of a lab.toml profile table and of a requirement table.
    const PROFILE_KEYS: [&str; 4] = ["cuda", "cudnn", "conda-env", "check"];
    const REQUIREMENT_KEYS: [&str; 3] = ["version", "from", "sha256"];

    #[test]
    fn suggestions_prefer_swaps_and_shared_starts() {
        assert_eq!(did_you_mean("cudn", &PROFILE_KEYS), Some("cudnn"));
        assert_eq!(did_you_mean("cdua", &PROFILE_KEYS), Some("cuda"));
        assert_eq!(did_you_mean("form", &REQUIREMENT_KEYS), Some("from"));
        assert_eq!(did_you_mean("conda_env", &PROFILE_KEYS), Some("conda-env"));
        assert_eq!(did_you_mean("zzz", &PROFILE_KEYS), None);
    }

    #[test]
    fn did_you_mean_is_tight() {
        assert_eq!(did_you_mean("cuddn", &PROFILE_KEYS), Some("cudnn"));
        assert_eq!(did_you_mean("CUDA", &PROFILE_KEYS), Some("cuda"));
        assert_eq!(did_you_mean("version", &PROFILE_KEYS), None);
    }
}
