//! Value parsers of the numeric flags. A count's flag takes a whole number: `--warmup -1` says that
//! negative values are not allowed (clap alone would read `-1` as a flag and advise `-- -1`), and a
//! number too large for any count says so. Each limit (calls, rounds, seconds) is checked where the
//! value is resolved, with a message naming it (docs/run.md, "Limits").

/// Why a numeric flag's value is refused (clap prints the message after the flag and its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    /// The value starts with `-`.
    #[error("negative values are not allowed: give a whole number, 0 or more")]
    Negative,
    /// Empty, or not made of decimal digits only (`1e5`, `2.5`).
    #[error("expected a whole number such as 10")]
    NotWhole,
    /// Too large for a `u64`.
    #[error("far larger than any limit (see docs/run.md, \"Limits\")")]
    PastAnyLimit,
    /// Fits a `u64` but not this machine's `usize`.
    #[error("far larger than any limit on this machine")]
    PastThisMachine,
    /// Not a finite number above 0 (a GiB amount).
    #[error("expected GiB above 0, such as 32 or 0.5")]
    NotGib,
}

/// A count (`--warmup`, `--iterations`, `--rounds`, …): a whole number, 0 or more.
pub fn count(text: &str) -> Result<u64, NumberError> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(NumberError::Negative);
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NumberError::NotWhole);
    }
    t.parse::<u64>().map_err(|_| NumberError::PastAnyLimit)
}

/// [`count`] as a `usize`.
pub fn count_usize(text: &str) -> Result<usize, NumberError> {
    count(text).and_then(|n| usize::try_from(n).map_err(|_| NumberError::PastThisMachine))
}

/// An amount of memory in GiB (`--max-tensor-memory-gib`): a finite number above 0.
pub fn positive_gib(text: &str) -> Result<f64, NumberError> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(NumberError::NotGib),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_say_what_is_wrong_with_them() {
        assert_eq!(count("12"), Ok(12));
        assert_eq!(count(" 0 "), Ok(0));
        assert!(
            count("-1")
                .expect_err("negative")
                .to_string()
                .contains("negative")
        );
        assert!(
            count("1e5")
                .expect_err("exponent")
                .to_string()
                .contains("whole number")
        );
        assert!(count("").is_err());
        assert!(
            count("99999999999999999999999")
                .expect_err("huge")
                .to_string()
                .contains("larger than any limit")
        );
    }
}
