//! Any bytes as an `--exportTimes` file: an error or statistics over finite values, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (text, _) = trtmc_analyze::read::bytes_to_text(data.to_vec());
    if let Ok(times) = trtmc_analyze::read::read_times(&text) {
        let latency = times.latency_ms.expect("a times file with records has latency statistics");
        assert!(latency.min <= latency.median && latency.median <= latency.max);
    }
});
