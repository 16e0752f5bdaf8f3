//! What the simulator prints: trtexec's `[MM/DD/YYYY-HH:MM:SS] [I] message` lines (warnings and
//! errors on stderr, info and verbose on stdout, as trtexec's logger does), the `&&&&` status lines, and
//! numbers in C++ stream notation.

use std::io::{BufWriter, Stdout, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// Line-oriented writer for one run. Stdout is buffered and flushed before anything goes to
/// stderr, so both streams stay in order when they share a file.
pub struct Log {
    out: BufWriter<Stdout>,
    verbose: bool,
}

impl Log {
    pub fn new() -> Self {
        Self {
            out: BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            verbose: false,
        }
    }

    /// Print `[V]` lines from now on (`--verbose`).
    pub fn set_verbose(&mut self, verbose: bool) {
        self.verbose = verbose;
    }

    pub fn info(&mut self, message: &str) {
        self.line('I', message);
    }

    pub fn warn(&mut self, message: &str) {
        self.line('W', message);
    }

    pub fn error(&mut self, message: &str) {
        self.line('E', message);
    }

    pub fn verbose(&mut self, message: &str) {
        if self.verbose {
            self.line('V', message);
        }
    }

    /// A line without the timestamp and severity prefix (status lines, JSON).
    pub fn raw(&mut self, text: &str) {
        // A closed stdout (e.g. `| head`) must not turn into a panic; trtexec ignores it too.
        let _ = writeln!(self.out, "{text}");
    }

    /// One prefixed line. An empty message gives `[..] [I]` with no trailing space, as trtexec.
    pub fn line(&mut self, severity: char, message: &str) {
        let stamp = timestamp(SystemTime::now());
        let text = if message.is_empty() {
            format!("[{stamp}] [{severity}]")
        } else {
            format!("[{stamp}] [{severity}] {message}")
        };
        // samples/common/logging.h: severities above kINFO (warning, error, internal error) go to
        // std::cerr.
        if matches!(severity, 'W' | 'E' | 'F') {
            let _ = self.out.flush();
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
            let _ = err.flush();
        } else {
            let _ = writeln!(self.out, "{text}");
        }
    }

    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.flush();
    }
}

/// `&&&& <STATUS> TensorRT.trtexec [TensorRT v110100] [b106] # trtexec <args>`.
pub fn status_line(status: &str, encoded: u64, build: Option<u64>, args: &[String]) -> String {
    let build = build.map(|b| format!(" [b{b}]")).unwrap_or_default();
    let mut line = format!("&&&& {status} TensorRT.trtexec [TensorRT v{encoded}]{build} # trtexec");
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

/// `MM/DD/YYYY-HH:MM:SS` in UTC (trtexec prints local time; the simulator has no time zone data).
pub fn timestamp(now: SystemTime) -> String {
    let secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{month:02}/{day:02}/{year:04}-{:02}:{:02}:{:02}",
        rest / 3600,
        (rest / 60) % 60,
        rest % 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's civil-from-days algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

/// A number as a default-formatted C++ stream prints it (`%g` with 6 significant digits,
/// exponent notation below 1e-4 and from 1e6):
/// `0.0627762`, `15374.3`, `3.00013`, `0`, `1.23457e+06`, `1e-07`.
pub fn g6(value: f64) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Round to 6 significant digits first: the exponent after rounding decides the notation.
    let scientific = format!("{value:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        let decimals = usize::try_from(5 - exponent).unwrap_or(0);
        trim_fraction(&format!("{value:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            exponent.unsigned_abs()
        )
    }
}

fn trim_fraction(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// Dimensions as trtexec prints them: `1x3x224x224` (a 0-D tensor prints as an empty string).
pub fn dims_text<T: std::fmt::Display>(dims: &[T]) -> String {
    let parts: Vec<String> = dims.iter().map(ToString::to_string).collect();
    parts.join("x")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn g6_matches_cpp_default_formatting() {
        let cases = [
            (0.0, "0"),
            (0.0627762, "0.0627762"),
            (15374.3, "15374.3"),
            (3.000130004, "3.00013"),
            (1.6586, "1.6586"),
            (6.587512, "6.58751"),
            (2.0, "2"),
            (100.0, "100"),
            (123456.4, "123456"),
            (1234567.0, "1.23457e+06"),
            (999999.6, "1e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (-0.5, "-0.5"),
            (0.1 + 0.2, "0.3"),
        ];
        for (value, text) in cases {
            assert_eq!(g6(value), text, "{value}");
        }
    }

    #[test]
    fn timestamps_are_trtexec_shaped() {
        // 2026-08-27 12:20:33 UTC
        let t = UNIX_EPOCH + Duration::from_secs(1_787_833_233);
        assert_eq!(timestamp(t), "08/27/2026-12:20:33");
        assert_eq!(timestamp(UNIX_EPOCH), "01/01/1970-00:00:00");
        // Leap day.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "02/29/2000-00:00:00");
    }

    #[test]
    fn status_line_shape() {
        let args = vec!["--onnx=m.onnx".to_string(), "--fp16".to_string()];
        assert_eq!(
            status_line("PASSED", 101601, Some(11), &args),
            "&&&& PASSED TensorRT.trtexec [TensorRT v101601] [b11] # trtexec --onnx=m.onnx --fp16"
        );
        assert_eq!(
            status_line("RUNNING", 100300, None, &[]),
            "&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # trtexec"
        );
        assert_eq!(dims_text(&[1, 3, 28, 28]), "1x3x28x28");
        assert_eq!(dims_text::<u64>(&[]), "");
    }
}
