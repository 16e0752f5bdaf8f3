//! Any bytes as `trtexec --helpBuildRoute` output: an error or a database whose knobs can all be
//! interpreted, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(database) = trtmc_trtexec::parse_knob_database(&text) {
        for knob in &database.tuner_options {
            if let Ok(values) = knob.values() {
                let _ = values.accepts(&knob.default_value);
            }
            assert!(database.knob(&knob.option).is_some());
        }
        let _ = database.default_route();
    }
});
