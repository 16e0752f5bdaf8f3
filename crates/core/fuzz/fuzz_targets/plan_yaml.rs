//! plan.yaml from arbitrary bytes: parsing returns a plan or an error, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = trtmc_core::plan::parse(&String::from_utf8_lossy(data));
});
