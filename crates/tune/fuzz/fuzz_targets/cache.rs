//! Any bytes as a tuning cache: an error or header plus records, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(content) = trtmc_tune::cache::parse(std::path::Path::new("fuzz.jsonl"), data) {
        assert!(content.valid_len as usize <= data.len());
        let _ = trtmc_tune::TunePlan::from_header(&content.header);
    }
});
