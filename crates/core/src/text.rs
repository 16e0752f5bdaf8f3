//! Small text helpers for messages: typo suggestions and command lines people can paste.

/// The candidate closest to `word`, if it is close enough to be a plausible typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// An argument vector as one line a POSIX shell reads back into the same arguments (quoted only where
/// needed), for people to read or paste.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| shell_word(a))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_word(arg: &str) -> std::borrow::Cow<'_, str> {
    // Words of these characters read back unchanged in any POSIX shell; shlex would still quote
    // `KEY=VALUE`, which only makes the printed `--set` lines harder to read.
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=./:,@+%".contains(c));
    if plain {
        return arg.into();
    }
    // Only a NUL byte cannot be quoted, and no OS argument holds one; show such a word as it is.
    shlex::try_quote(arg).unwrap_or_else(|_| arg.into())
}

/// A value with a sensible number of significant digits for tables (`–` for non-finite values).
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

/// A finite value with three or four significant digits from 0.001 up (no decimals from 100, one
/// from 10, two from 1, three below), without trailing zeros (`5985.05` → `5985`, `1.51304` →
/// `1.51`, `3.0` → `3`), for plot ticks and messages.
pub fn fmt_short(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A fraction as a percentage with one decimal (`0.034` → `3.4`).
pub fn fmt_pct(fraction: f64) -> String {
    if fraction.is_finite() {
        format!("{:.1}", fraction * 100.0)
    } else {
        "–".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_suggestions() {
        assert_eq!(
            closest("tiny-gtp", ["tiny-gpt", "tiny-cnn"]),
            Some("tiny-gpt")
        );
        assert_eq!(closest("resnet", ["tiny-gpt"]), None);
        assert_eq!(
            closest("-precison", ["-threads", "-precision"]),
            Some("-precision")
        );
    }

    #[test]
    fn shell_lines_quote_only_what_a_shell_would_change() {
        let argv: Vec<String> = ["trtmc-bench", "tune", "--routes", "-a=[on|off]", "it's", ""]
            .map(String::from)
            .to_vec();
        assert_eq!(
            shell_line(&argv),
            r#"trtmc-bench tune --routes '-a=[on|off]' "it's" ''"#
        );
        let set: Vec<String> = ["--set", "runtime.threads=2"].map(String::from).to_vec();
        assert_eq!(shell_line(&set), "--set runtime.threads=2");
    }
}
