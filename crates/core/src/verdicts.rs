//! What an interval decides, for every verb: the matrix light, `run`'s verdict between cases and the
//! tuner's head-to-head all ask the same question of a [`crate::intervals`] interval, and all keep
//! adding rounds until it is answered or their budget is spent (docs/statistics.md, *Sequential
//! rounds*). The VALID/INVALID policy of one measured case is [`crate::validity`], beside this.

use crate::artifacts::matrix::{Light, Thresholds};
use crate::stats::Interval;

/// The light an interval of the candidate/reference ratio backs (docs/matrix.md#lights).
///
/// Decided: the whole interval at most `green_max` (green: within tolerance, shown), or the whole
/// interval above `green_max` (red when the estimate is above `yellow_max`, yellow when it is in the
/// yellow band: a slowdown shown). Undecided (the interval straddles `green_max`): yellow, never red,
/// and a comparison that may add rounds adds them. An untrusted interval (too few rounds for its
/// confidence) decides nothing: green or yellow by the estimate's side of `green_max`, never red.
pub fn light(interval: &Interval, trusted: bool, t: &Thresholds) -> (Light, bool) {
    if !trusted {
        let light = if interval.estimate <= t.green_max {
            Light::Green
        } else {
            Light::Yellow
        };
        return (light, false);
    }
    if interval.high <= t.green_max {
        (Light::Green, true)
    } else if interval.low > t.green_max {
        let light = if interval.estimate > t.yellow_max {
            Light::Red
        } else {
            Light::Yellow
        };
        (light, true)
    } else {
        (Light::Yellow, false)
    }
}

/// How one case compares with the baseline case of a `run` (A's p50 over B's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Difference {
    /// The whole interval below 1.
    Faster,
    /// The whole interval above 1.
    Slower,
    /// The whole interval within [`SAME_WITHIN`] of 1: the cases are shown to be equally fast.
    Same,
    /// The interval holds 1 and reaches past [`SAME_WITHIN`]: neither shown.
    NotShown,
    /// Too few rounds for the interval to reach its confidence.
    TooFewRounds,
}

/// A ratio interval within this fraction of 1 on both sides shows two cases equally fast.
pub const SAME_WITHIN: f64 = 0.02;

impl Difference {
    /// The difference an interval shows.
    pub fn of(interval: &Interval, trusted: bool) -> Difference {
        if !trusted {
            Difference::TooFewRounds
        } else if interval.high < 1.0 {
            Difference::Faster
        } else if interval.low > 1.0 {
            Difference::Slower
        } else if interval.low >= 1.0 - SAME_WITHIN && interval.high <= 1.0 + SAME_WITHIN {
            Difference::Same
        } else {
            Difference::NotShown
        }
    }

    /// Whether more rounds could not change the answer's kind: faster, slower or the same.
    pub fn decided(self) -> bool {
        matches!(
            self,
            Difference::Faster | Difference::Slower | Difference::Same
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(low: f64, estimate: f64, high: f64) -> Interval {
        Interval {
            estimate,
            low,
            high,
            confidence: 0.95,
        }
    }

    #[test]
    fn a_light_is_decided_once_the_interval_leaves_the_green_edge() {
        let t = Thresholds::default();
        assert_eq!(light(&i(0.97, 1.0, 1.04), true, &t), (Light::Green, true));
        assert_eq!(light(&i(1.12, 1.3, 1.5), true, &t), (Light::Red, true));
        assert_eq!(light(&i(1.11, 1.15, 1.2), true, &t), (Light::Yellow, true));
        // Straddles green_max: undecided, yellow, even with an estimate far above yellow_max.
        assert_eq!(light(&i(1.05, 1.4, 1.8), true, &t), (Light::Yellow, false));
        assert_eq!(light(&i(0.9, 1.0, 1.2), true, &t), (Light::Yellow, false));
        // Untrusted: never red, never decided.
        assert_eq!(light(&i(1.5, 2.0, 2.5), false, &t), (Light::Yellow, false));
        assert_eq!(light(&i(0.9, 1.0, 1.05), false, &t), (Light::Green, false));
    }

    #[test]
    fn a_run_difference_is_decided_when_shown_either_way() {
        assert_eq!(Difference::of(&i(0.4, 0.5, 0.6), true), Difference::Faster);
        assert_eq!(Difference::of(&i(1.1, 1.2, 1.3), true), Difference::Slower);
        assert_eq!(Difference::of(&i(0.99, 1.0, 1.01), true), Difference::Same);
        assert_eq!(
            Difference::of(&i(0.95, 1.0, 1.05), true),
            Difference::NotShown
        );
        assert_eq!(
            Difference::of(&i(0.4, 0.5, 0.6), false),
            Difference::TooFewRounds
        );
        assert!(Difference::Same.decided() && !Difference::NotShown.decided());
    }
}
