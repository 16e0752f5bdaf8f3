//! Search orders: which routes an expression expands to, and in which order (TensorRT 11.1 §1.5).
//!
//! * `full`: the Cartesian product, last knob varying fastest; index → route is computed lazily, so a huge
//!   space costs nothing until routes are taken from it.
//! * `fast`: the baseline (every variable knob at its database default, fixed knobs at their pinned value),
//!   then one-off variations, iterating from the last variable knob to the first and, within a knob, over
//!   its listed values in order, skipping the default. When a knob's default is not among its listed values
//!   the baseline still uses the default (as trtexec does: the baseline is what the runtime does untuned)
//!   and every listed value is a one-off variation.
//! * `mixed`: `fast` first, then (when more than one knob was positive) the product over the positive
//!   knobs' listed values with every other knob at its baseline value; see [`product_over`].
//! * `racing`: the `full` routes, measured in interleaved rounds with statistically slower routes dropped.

use crate::expr::{Expression, Route, TermValues};
use crate::knobs::KnobSet;

/// Declared with the tuning summary, which records it.
pub use trtmc_core::artifacts::tune_summary::SearchOrder;

/// The value each term of the expression takes in the baseline route.
fn baseline_values(expr: &Expression, knobs: &KnobSet) -> Vec<String> {
    expr.terms
        .iter()
        .map(|t| match &t.values {
            TermValues::Fixed(v) => v.clone(),
            TermValues::Variable(vs) => match knobs.get(&t.knob) {
                Some(k) => k.default.clone(),
                None => vs.first().cloned().unwrap_or_default(),
            },
        })
        .collect()
}

fn route_from(expr: &Expression, values: &[String]) -> Route {
    Route {
        settings: expr
            .terms
            .iter()
            .zip(values)
            .map(|(t, v)| (t.knob.clone(), v.clone()))
            .collect(),
    }
}

/// The baseline route of `fast` and `mixed`.
pub fn baseline(expr: &Expression, knobs: &KnobSet) -> Route {
    route_from(expr, &baseline_values(expr, knobs))
}

/// The route with every knob of the expression at its database default, fixed ones included: what the
/// runtime builds untuned (the default build route restricted to the expression's knobs).
pub fn default_route(expr: &Expression, knobs: &KnobSet) -> Route {
    let values: Vec<String> = expr
        .terms
        .iter()
        .map(|t| {
            knobs
                .get(&t.knob)
                .map(|k| k.default.clone())
                .unwrap_or_else(|| t.values()[0].clone())
        })
        .collect();
    route_from(expr, &values)
}

/// `fast`: the baseline, then one-off variations from the last knob to the first, defaults skipped.
pub fn fast_routes(expr: &Expression, knobs: &KnobSet) -> Vec<Route> {
    let base = baseline_values(expr, knobs);
    let mut routes = vec![route_from(expr, &base)];
    for (i, term) in expr.terms.iter().enumerate().rev() {
        let TermValues::Variable(values) = &term.values else {
            continue;
        };
        for v in values {
            if *v == base[i] {
                continue;
            }
            let mut vals = base.clone();
            vals[i] = v.clone();
            routes.push(route_from(expr, &vals));
        }
    }
    routes
}

/// The `full` space: a lazy mixed-radix enumeration, last knob varying fastest.
#[derive(Debug, Clone)]
pub struct FullSpace {
    knobs: Vec<String>,
    values: Vec<Vec<String>>,
}

impl FullSpace {
    /// Every combination of the expression's values (a pinned knob has one).
    pub fn new(expr: &Expression) -> Self {
        Self {
            knobs: expr.terms.iter().map(|t| t.knob.clone()).collect(),
            values: expr.terms.iter().map(|t| t.values().to_vec()).collect(),
        }
    }

    /// The product of knobs restricted to `positive` (their listed values), others pinned to `base`.
    fn restricted(expr: &Expression, base: &Route, positive: &[String]) -> Self {
        let values = expr
            .terms
            .iter()
            .map(|t| {
                if positive.contains(&t.knob) {
                    t.values().to_vec()
                } else {
                    vec![base.value(&t.knob).unwrap_or(&t.values()[0]).to_string()]
                }
            })
            .collect();
        Self {
            knobs: expr.terms.iter().map(|t| t.knob.clone()).collect(),
            values,
        }
    }

    /// Number of routes; `None` when it exceeds `u128` (the space can still be walked from the start).
    pub fn len(&self) -> Option<u128> {
        self.values
            .iter()
            .try_fold(1u128, |acc, v| acc.checked_mul(v.len() as u128))
    }

    /// Whether some knob has no value, so there is no route at all.
    pub fn is_empty(&self) -> bool {
        self.values.iter().any(Vec::is_empty)
    }

    /// The route at `index` (reverse mixed radix: the last knob is the least significant digit).
    /// `None` past the end.
    pub fn route(&self, index: u128) -> Option<Route> {
        if let Some(len) = self.len()
            && index >= len
        {
            return None;
        }
        if self.is_empty() {
            return None;
        }
        let mut rest = index;
        let mut chosen = vec![String::new(); self.values.len()];
        for (i, values) in self.values.iter().enumerate().rev() {
            let radix = values.len() as u128;
            chosen[i] = values[(rest % radix) as usize].clone();
            rest /= radix;
        }
        Some(Route {
            settings: self.knobs.iter().cloned().zip(chosen).collect(),
        })
    }

    /// The first `limit` routes (all of them when `limit` is `None`).
    pub fn take(&self, limit: Option<usize>) -> Vec<Route> {
        let mut routes = Vec::new();
        let mut index = 0u128;
        while limit.is_none_or(|l| routes.len() < l) {
            match self.route(index) {
                Some(r) => routes.push(r),
                None => break,
            }
            index += 1;
        }
        routes
    }
}

/// Mixed phase 2: the product over the positive knobs' listed values, every other knob at its baseline
/// value, in full order (last knob fastest).
pub fn product_over(expr: &Expression, base: &Route, positive: &[String]) -> Vec<Route> {
    FullSpace::restricted(expr, base, positive).take(None)
}

/// The routes a search order plans before any measurement (mixed: phase 1 only), capped at `max_routes`.
pub fn planned_routes(
    order: SearchOrder,
    expr: &Expression,
    knobs: &KnobSet,
    max_routes: Option<usize>,
) -> Vec<Route> {
    let mut routes = match order {
        SearchOrder::Fast | SearchOrder::Mixed => fast_routes(expr, knobs),
        SearchOrder::Full | SearchOrder::Racing => FullSpace::new(expr).take(max_routes),
    };
    if let Some(max) = max_routes {
        routes.truncate(max);
    }
    routes
}

/// The total number of routes an order plans before measurement, as text (`full` may exceed `u128`).
pub fn planned_count(order: SearchOrder, expr: &Expression, knobs: &KnobSet) -> String {
    match order {
        SearchOrder::Fast | SearchOrder::Mixed => fast_routes(expr, knobs).len().to_string(),
        SearchOrder::Full | SearchOrder::Racing => match FullSpace::new(expr).len() {
            Some(n) => n.to_string(),
            None => "more than 2^128".to_string(),
        },
    }
}

/// A `--dry-run` listing in trtexec's words: `Expanded to N build route configurations`,
/// `--dryRun: N build routes would be tried:`, then `[i]:route` lines. Mixed lists phase 1 and says that
/// phase 2 depends on measurements (trtexec refuses `--dryRun` with mixed).
pub fn dry_run(
    order: SearchOrder,
    expr: &Expression,
    knobs: &KnobSet,
    max_routes: Option<usize>,
) -> String {
    let routes = planned_routes(order, expr, knobs, max_routes);
    let total = planned_count(order, expr, knobs);
    let mut out = format!("Expanded to {total} build route configurations\n");
    out.push_str(&format!(
        "--dryRun: {} build routes would be tried:\n",
        routes.len()
    ));
    for (i, r) in routes.iter().enumerate() {
        out.push_str(&format!("[{i}]:{r}\n"));
    }
    if routes.len().to_string() != total {
        out.push_str(&format!(
            "(--max-routes {} keeps the first {} routes)\n",
            routes.len(),
            routes.len()
        ));
    }
    if order == SearchOrder::Mixed {
        let variable = expr.terms.iter().filter(|t| t.is_variable()).count();
        out.push_str(&format!(
            "mixed: the routes above are phase 1; phase 2 (the product over the knobs whose one-off was \
             built, accurate and faster than the baseline, when more than one of the {variable} variable knobs \
             is) is decided by measurements\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse;

    /// Each route as its expression text.
    fn texts(routes: &[Route]) -> Vec<String> {
        routes.iter().map(Route::to_string).collect()
    }

    const KNOBS: &str = include_str!(
        "../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json"
    );
    const DRY_RUN: &str = include_str!(
        "../../../tests/fixtures/trtexec-logs/trt11.1_tuneBuildRoutes_dryRun_fast_and_full.log"
    );

    fn knobs() -> KnobSet {
        KnobSet::from_json(KNOBS, "fixture").expect("fixture")
    }

    /// The fixture's lines without the `[date-time] [I] ` prefix, split into the fast and full listings.
    fn fixture_listings() -> (String, String) {
        let lines: Vec<&str> = DRY_RUN
            .lines()
            .filter_map(|l| l.split_once("] [I] ").map(|(_, rest)| rest))
            .collect();
        let split = lines
            .iter()
            .skip(1)
            .position(|l| l.starts_with("Expanded to"))
            .map(|p| p + 1)
            .unwrap_or(0);
        let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
        (join(&lines[..split]), join(&lines[split..]))
    }

    #[test]
    fn dry_run_equals_trtexec_for_fast_and_full() {
        let expr = parse("-conv_lowering=[on|off] -kgen:tiling=[0|1|2]", &knobs()).expect("valid");
        let (fast, full) = fixture_listings();
        assert!(
            fast.contains("[3]:-conv_lowering=off -kgen:tiling=2"),
            "fixture parsed: {fast}"
        );
        assert_eq!(dry_run(SearchOrder::Fast, &expr, &knobs(), None), fast);
        assert_eq!(dry_run(SearchOrder::Full, &expr, &knobs(), None), full);
    }

    #[test]
    fn fast_keeps_fixed_knobs_and_uses_the_default_when_it_is_not_listed() {
        // peep:max defaults to 0, which is not listed: baseline 0, both listed values are one-offs.
        let expr = parse(
            "-kgen:tiling=[0|2] -peep:max=[1|2] -rewrite_fp_div=1",
            &knobs(),
        )
        .expect("valid");
        let routes = texts(&fast_routes(&expr, &knobs()));
        assert_eq!(
            routes,
            vec![
                "-kgen:tiling=2 -peep:max=0 -rewrite_fp_div=1",
                "-kgen:tiling=2 -peep:max=1 -rewrite_fp_div=1",
                "-kgen:tiling=2 -peep:max=2 -rewrite_fp_div=1",
                "-kgen:tiling=0 -peep:max=0 -rewrite_fp_div=1",
            ]
        );
        assert_eq!(
            default_route(&expr, &knobs()).to_string(),
            "-kgen:tiling=2 -peep:max=0 -rewrite_fp_div=2"
        );
    }

    #[test]
    fn full_space_is_lazy_and_last_knob_fastest() {
        let expr = parse(
            "-conv_lowering=[on|off] -kgen:tiling=[0|1|2] -rewrite_fp_div=[0|1]",
            &knobs(),
        )
        .expect("valid");
        let space = FullSpace::new(&expr);
        assert_eq!(space.len(), Some(12));
        assert_eq!(
            space.route(0).expect("first").to_string(),
            "-conv_lowering=on -kgen:tiling=0 -rewrite_fp_div=0"
        );
        assert_eq!(
            space.route(1).expect("second").to_string(),
            "-conv_lowering=on -kgen:tiling=0 -rewrite_fp_div=1"
        );
        assert_eq!(
            space.route(11).expect("last").to_string(),
            "-conv_lowering=off -kgen:tiling=2 -rewrite_fp_div=1"
        );
        assert_eq!(space.route(12), None);
        assert_eq!(space.take(Some(5)).len(), 5);
        let all = space.take(None);
        let unique: std::collections::BTreeSet<_> = all.iter().collect();
        assert_eq!((all.len(), unique.len()), (12, 12));
    }

    #[test]
    fn a_space_beyond_u128_still_walks_from_the_start() {
        let mut json: serde_json::Value = serde_json::from_str(KNOBS).expect("json");
        let options = json["tuner_options"].as_array_mut().expect("array");
        for i in 0..140 {
            options.push(serde_json::json!({"option": format!("-k{i}"), "allowed_values": format!("-k{i}=[on|off]"),
                "default_value": "on", "help": ""}));
        }
        let set = KnobSet::from_json(&json.to_string(), "big").expect("big db");
        let text: String = (0..140).map(|i| format!("-k{i}=[on|off] ")).collect();
        let expr = parse(&text, &set).expect("valid");
        let space = FullSpace::new(&expr);
        assert_eq!(space.len(), None);
        assert_eq!(
            planned_count(SearchOrder::Full, &expr, &set),
            "more than 2^128"
        );
        let first = space.take(Some(2));
        assert!(first[1].to_string().ends_with("-k138=on -k139=off"));
        let listing = dry_run(SearchOrder::Full, &expr, &set, Some(3));
        assert!(listing.starts_with(
            "Expanded to more than 2^128 build route configurations\n--dryRun: 3 build"
        ));
    }

    #[test]
    fn mixed_product_pins_the_other_knobs_at_baseline() {
        let expr = parse(
            "-conv_lowering=[on|off] -kgen:tiling=[0|1|2] -rewrite_fp_div=[0|1]",
            &knobs(),
        )
        .expect("valid");
        let base = baseline(&expr, &knobs());
        assert_eq!(
            base.to_string(),
            "-conv_lowering=on -kgen:tiling=2 -rewrite_fp_div=2"
        );
        let routes = texts(&product_over(
            &expr,
            &base,
            &["-conv_lowering".into(), "-rewrite_fp_div".into()],
        ));
        assert_eq!(
            routes,
            vec![
                "-conv_lowering=on -kgen:tiling=2 -rewrite_fp_div=0",
                "-conv_lowering=on -kgen:tiling=2 -rewrite_fp_div=1",
                "-conv_lowering=off -kgen:tiling=2 -rewrite_fp_div=0",
                "-conv_lowering=off -kgen:tiling=2 -rewrite_fp_div=1",
            ]
        );
        let listing = dry_run(SearchOrder::Mixed, &expr, &knobs(), None);
        assert!(listing.contains("phase 2"), "{listing}");
    }

    #[test]
    fn order_names_parse() {
        for o in SearchOrder::ALL {
            assert_eq!(o.name().parse::<SearchOrder>(), Ok(o));
        }
        assert!("exhaustive".parse::<SearchOrder>().is_err());
    }
}
