//! Number formatting shared by tables, plots, the terminal and exports.

/// Numbers and percentages are formatted in core, for the validity verdict too.
pub use trtmc_core::text::{fmt_num, fmt_pct};

/// A tail percentile for tables: `~` in front when `count` calls do not reach that far into the tail
/// ([`trtmc_core::stats::percentile_supported`]; docs/reports.md).
pub fn fmt_percentile(value: f64, p: f64, count: usize) -> String {
    if trtmc_core::stats::percentile_supported(p, count) {
        fmt_human(value)
    } else {
        format!("~{}", fmt_human(value))
    }
}

/// [`fmt_num`] for people: thousands grouped with commas (`611043.05` → `611,043`), for summary tables
/// read rather than parsed.
pub fn fmt_human(v: f64) -> String {
    let s = fmt_num(v);
    if !v.is_finite() || s.contains('e') {
        return s;
    }
    let (sign, rest) = s.split_at(usize::from(s.starts_with('-')));
    let (int, frac) = rest.split_once('.').unwrap_or((rest, ""));
    if int.len() <= 3 {
        return s;
    }
    let dot = if frac.is_empty() { "" } else { "." };
    format!("{sign}{}{dot}{frac}", group_thousands(int))
}

/// A count with thousands grouped (`12500` → `12,500`).
pub fn fmt_count(n: u64) -> String {
    group_thousands(&n.to_string())
}

/// Commas between groups of three digits of an integer's digits.
fn group_thousands(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds in a readable unit (`0.0123` → `12.3 ms`, `75` → `75.0 s`).
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        "–".into()
    } else if s < 1.0 {
        format!("{} ms", fmt_num(s * 1000.0))
    } else {
        format!("{s:.1} s")
    }
}

/// An axis tick label: short, no trailing zeros.
pub fn fmt_tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else {
        trtmc_core::text::fmt_short(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_three_to_four_significant_digits() {
        assert_eq!(fmt_num(1234.4), "1234");
        assert_eq!(fmt_num(123.46), "123.5");
        assert_eq!(fmt_num(1.2345), "1.23");
        assert_eq!(fmt_num(0.012345), "0.0123");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(f64::NAN), "–");
        assert_eq!(fmt_pct(0.034), "3.4");
        assert_eq!(fmt_seconds(0.0123), "12.30 ms");
        assert_eq!(fmt_seconds(75.0), "75.0 s");
        assert_eq!(fmt_tick(2.50), "2.5");
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(120.0), "120");
    }

    #[test]
    fn table_numbers_group_thousands() {
        assert_eq!(fmt_human(611043.0537350003), "611,043");
        assert_eq!(fmt_human(4347.2), "4,347");
        assert_eq!(fmt_human(999.96), "1,000.0");
        assert_eq!(fmt_human(-1234567.0), "-1,234,567");
        assert_eq!(fmt_human(750.039), "750.0");
        assert_eq!(fmt_human(0.5), "0.5000");
        assert_eq!(fmt_human(f64::INFINITY), "–");
        assert_eq!(fmt_count(12500), "12,500");
        assert_eq!(fmt_count(100), "100");
    }
}
