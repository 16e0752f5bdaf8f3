//! The text of an error together with its causes.
//!
//! Library error enums keep their cause in `source()` instead of repeating it in their own message, so
//! the one line a user reads is built here: the message, then each cause, joined by `: `.

use std::error::Error;

/// `err`'s message followed by every cause in its `source()` chain, `: `-separated. A cause whose text
/// the line already holds (an error type that also prints its source) is not repeated.
pub fn with_causes(err: &dyn Error) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(c) = cause {
        let part = c.to_string();
        if !part.is_empty() && !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write {path}")]
    struct Write {
        path: String,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the run failed: {0}")]
    struct Repeats(#[source] Write);

    fn denied() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied")
    }

    #[test]
    fn the_causes_follow_the_message() {
        let e = Write {
            path: "out/result.json".into(),
            source: denied(),
        };
        assert_eq!(
            with_causes(&e),
            "cannot write out/result.json: permission denied"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let e = Repeats(Write {
            path: "x".into(),
            source: denied(),
        });
        assert_eq!(
            with_causes(&e),
            "the run failed: cannot write x: permission denied"
        );
    }
}
