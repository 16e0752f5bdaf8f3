//! Every series with its change points, the boundaries between series of one case, and the
//! regressions `history check` fails on.

use serde::Serialize;

use crate::Error;
use crate::changes::{self, Change, Direction, Rule};
use crate::store::{Point, Series, Store};

/// A change point with what people need to act on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// Where the change is in the series and how large it is.
    #[serde(flatten)]
    pub change: Change,
    /// The commit range to bisect: the last point before the change and the first after it.
    pub last_good_commit: String,
    /// See `last_good_commit`.
    pub first_changed_commit: String,
    /// When the last point before the change was created (RFC 3339).
    pub last_good_created: String,
    /// When the first point after it was created (RFC 3339).
    pub first_changed_created: String,
    /// The result folders on both sides of the change.
    pub before_folders: Vec<String>,
    /// See `before_folders`.
    pub after_folders: Vec<String>,
}

/// One series, its points in order, and its confirmed changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analyzed {
    /// The series and its extent.
    pub series: Series,
    /// Its points, oldest first.
    pub points: Vec<Point>,
    /// Its confirmed change points, in order.
    pub changes: Vec<Found>,
}

/// Where one case's measurements continue in another series: the workload, runtime version or machine
/// changed, so the two are never drawn as one line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Boundary {
    /// The earlier series' id.
    pub from_series: i64,
    /// The id of the series the case continues in.
    pub to_series: i64,
    /// What changed: `workload`, `runtime version 1.20 → 1.21`, `machine …`.
    pub changed: Vec<String>,
}

/// Reads every series and finds its change points.
pub fn analyze(store: &mut Store, rule: &Rule) -> Result<Vec<Analyzed>, Error> {
    let series = store.series()?;
    let mut points = store.all_points()?;
    Ok(series
        .into_iter()
        .map(|s| {
            let points = points.remove(&s.id).unwrap_or_default();
            analyze_series(s, points, rule)
        })
        .collect())
}

/// One series' change points.
pub fn analyze_series(series: Series, points: Vec<Point>, rule: &Rule) -> Analyzed {
    let values: Vec<f64> = points.iter().map(|p| p.estimate).collect();
    let changes = changes::detect(&values, rule)
        .into_iter()
        .map(|c| {
            let before = &points[c.before_start..c.at];
            let after = &points[c.at..c.after_end];
            let folders = |ps: &[Point]| {
                let mut f: Vec<String> = Vec::new();
                for p in ps {
                    if !f.contains(&p.folder) {
                        f.push(p.folder.clone());
                    }
                }
                f
            };
            Found {
                last_good_commit: before.last().map(|p| p.commit.clone()).unwrap_or_default(),
                first_changed_commit: after.first().map(|p| p.commit.clone()).unwrap_or_default(),
                last_good_created: before.last().map(|p| p.created.clone()).unwrap_or_default(),
                first_changed_created: after.first().map(|p| p.created.clone()).unwrap_or_default(),
                before_folders: folders(before),
                after_folders: folders(after),
                change: c,
            }
        })
        .collect();
    Analyzed {
        series,
        points,
        changes,
    }
}

/// Boundaries between the series of one case and metric (same model, case label, operation, runtime
/// name and metric), in the order the series began.
pub fn boundaries(series: &[Series]) -> Vec<Boundary> {
    let mut out = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let previous = series[..i].iter().rev().find(|p| {
            p.key.model == s.key.model
                && p.key.label == s.key.label
                && p.key.operation == s.key.operation
                && p.key.runtime == s.key.runtime
                && p.key.metric == s.key.metric
        });
        let Some(p) = previous else { continue };
        let mut changed = Vec::new();
        if p.key.workload != s.key.workload {
            changed.push(format!(
                "workload {} → {}",
                short(&p.key.workload),
                short(&s.key.workload)
            ));
        }
        if p.key.runtime_version != s.key.runtime_version {
            changed.push(format!(
                "{} version {} → {}",
                s.key.runtime, p.key.runtime_version, s.key.runtime_version
            ));
        }
        if p.key.machine != s.key.machine {
            changed.push(format!(
                "machine {} → {}",
                p.key.machine_name, s.key.machine_name
            ));
        }
        out.push(Boundary {
            from_series: p.id,
            to_series: s.id,
            changed,
        });
    }
    out
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The confirmed slowdowns whose first changed point is newer than every result of commit `since`
/// (all confirmed slowdowns without `since`). A `since` no stored result has is an error.
pub fn regressions<'a>(
    analyzed: &'a [Analyzed],
    since: Option<&str>,
) -> Result<Vec<(&'a Analyzed, &'a Found)>, Error> {
    let after = match since {
        None => None,
        Some(commit) => {
            let newest = analyzed
                .iter()
                .flat_map(|a| &a.points)
                .filter(|p| p.commit == commit)
                .map(|p| p.created.as_str())
                .max();
            match newest {
                Some(t) => Some(t.to_string()),
                None => {
                    return Err(Error::UnknownCommit {
                        commit: commit.to_string(),
                    });
                }
            }
        }
    };
    Ok(analyzed
        .iter()
        .flat_map(|a| a.changes.iter().map(move |f| (a, f)))
        .filter(|(_, f)| f.change.direction == Direction::Slowdown)
        .filter(|(_, f)| {
            after
                .as_deref()
                .is_none_or(|t| f.first_changed_created.as_str() > t)
        })
        .collect())
}
