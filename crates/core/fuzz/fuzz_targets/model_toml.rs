//! MODEL.toml and its test manifest from arbitrary bytes: the loader must never panic; every problem
//! becomes the profile's status.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // The first NUL splits MODEL.toml from the test manifest it may reference.
    let (model, cases) = text.split_once('\0').unwrap_or((&text, ""));
    let cases = cases.to_string();
    let profile = trtmc_core::catalog::profile_from_text(Path::new("fuzz/MODEL.toml"), model, &|_| Ok(cases.clone()));
    let _ = profile.status.label();
    if profile.status.is_ready() {
        // No runtime declares settings here: every `build.*`/`runtime.*` key is unknown, which must
        // be an error, never a panic.
        let _ = trtmc_core::case::resolve(&profile, &Default::default(), &[]);
    }
});
