//! Any bytes as a trtexec log: parsing never panics and the result always serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let log = trtmc_trtexec::parse_log(&text);
    let _ = log.outcome();
    let _ = log.last_errors(5);
    for line in text.lines() {
        let _ = trtmc_trtexec::parse_status_line(line);
    }
    // NaN and infinities serialize as null; nothing here may fail.
    serde_json::to_string(&log).expect("a parsed log always serializes");
});
