//! Stable-toolchain companion of the fuzz target in crates/matrix/fuzz: seeded mutations of valid
//! suites, environments and receipts (every prefix, byte flips, inserted YAML/JSON punctuation) must
//! never panic.

const SEEDS: &[&str] = &[
    include_str!("../../../benchmarks/performance/release.yaml"),
    include_str!("../../../benchmarks/performance/release-full.yaml"),
    include_str!("../../../benchmarks/performance/environments/cpu.yaml"),
    r#"{"schema": "trtmc.perf-bundle-preparation/v1", "scope": "test_task", "revision": "abc",
        "records": [{"model": "/m.onnx", "bundle": "/b", "action": "built", "build_seconds": 1.5}]}"#,
    "name: x\nrows:\n  - {entry: a.b, model: m, testcase: c, candidate: {runtime: tract}, reference: {backend: \"trtmc:tract\"}}\nthresholds: {green_max: 1e308, yellow_max: .nan}\n",
    "name: e\nbundle_cache: ${A:-${B:-${C}}}\nresults_root: ${\nvariables: [{name: A, default: ${A}}]\n",
];

/// xorshift: deterministic, no dependencies.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn mutated_inputs_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let punct = b":{}[]-\"'$\n #&*!|>%@`\\,\0";
    for seed in SEEDS {
        let bytes = seed.as_bytes();
        for end in (0..=bytes.len()).step_by(7) {
            trtmc_matrix::fuzzing::all(&bytes[..end]);
        }
        for _ in 0..400 {
            let mut m = bytes.to_vec();
            for _ in 0..1 + next(&mut state) % 6 {
                let at = (next(&mut state) as usize) % m.len().max(1);
                match next(&mut state) % 3 {
                    0 if !m.is_empty() => m[at] = punct[(next(&mut state) as usize) % punct.len()],
                    1 => m.insert(
                        at.min(m.len()),
                        punct[(next(&mut state) as usize) % punct.len()],
                    ),
                    _ if !m.is_empty() => {
                        m.remove(at);
                    }
                    _ => {}
                }
            }
            trtmc_matrix::fuzzing::all(&m);
        }
    }
}
