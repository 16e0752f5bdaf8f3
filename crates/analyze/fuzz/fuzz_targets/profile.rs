//! Any bytes as an `--exportProfile` file: an error or records, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (text, _) = trtmc_analyze::read::bytes_to_text(data.to_vec());
    if let Ok(profile) = trtmc_analyze::read::read_profile(&text) {
        assert!(!profile.records.is_empty());
        for r in &profile.records {
            assert!(r.time_ms.is_none_or(f64::is_finite));
        }
    }
});
