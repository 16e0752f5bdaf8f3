//! Any text as a route expression (or --routes-file) against the real TensorRT 11.1 knob excerpt: an
//! error or an expression, never a panic; a parsed expression renders back to one that parses the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use trtmc_tune::KnobSet;

const KNOBS: &str = include_str!(
    "../../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json"
);

fn knobs() -> &'static KnobSet {
    static SET: OnceLock<KnobSet> = OnceLock::new();
    SET.get_or_init(|| KnobSet::from_json(KNOBS, "fixture").expect("the fixture parses"))
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(expr) = trtmc_tune::expr::parse(&text, knobs()) {
        let again =
            trtmc_tune::expr::parse(&expr.to_string(), knobs()).expect("canonical form parses");
        assert_eq!(again, expr);
        let _ = trtmc_tune::search::fast_routes(&expr, knobs());
        let _ = trtmc_tune::search::FullSpace::new(&expr).take(Some(64));
    }
    let _ = knobs().help_text(Some(&text));
});
