//! Any bytes as an `--exportTimes`, `--exportProfile` or `--exportOutput` file: an error or a value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(times) = trtmc_trtexec::parse_times(&text, "fuzz input") {
        for query in &times {
            assert!(query.compute_ms.is_finite() && query.compute_ms >= 0.0);
        }
    }
    let _ = trtmc_trtexec::parse_profile(&text, "fuzz input");
    if let Ok(outputs) = trtmc_trtexec::parse_outputs(&text, "fuzz input") {
        for t in &outputs {
            assert_eq!(t.dims.iter().product::<u64>(), t.values.len() as u64);
        }
    }
});
