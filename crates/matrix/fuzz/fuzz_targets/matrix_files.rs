//! The files `matrix` reads from outside, from arbitrary bytes: suite YAML, environment YAML (and its
//! `${VAR}` expansion) and preparation receipts must never panic; every problem is an error message.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    trtmc_matrix::fuzzing::all(data);
});
