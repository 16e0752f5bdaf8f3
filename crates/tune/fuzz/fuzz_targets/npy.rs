//! Any bytes as a .npy or .npz golden-data file: an error or tensors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = trtmc_tune::golden::read_npy(data, "fuzz", "fuzz input") {
        assert_eq!(t.shape.iter().product::<usize>(), t.values.len());
    }
    let _ = trtmc_tune::golden::read_npz(data, "fuzz input");
});
