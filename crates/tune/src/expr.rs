//! Build-route expressions in TensorRT 11.1's grammar (`trtexec --tuneBuildRoutes`).
//!
//! * Tokens are separated by whitespace outside `[...]`; inside brackets whitespace is allowed and trimmed.
//! * Each token is `KNOB=VALUE`, split at the first `=`; the knob (trimmed) must exist in the knob database.
//! * `-knob=[a|b|c]` makes the knob variable: values split on `|`, trimmed, empty ones dropped.
//! * `-knob=value` pins the knob in every route.
//! * A `--routes-file` holds the same tokens, newline-delimited (any whitespace separates them).
//!
//! Errors, as trtexec raises them: unknown knob (here with a did-you-mean), text before `[` or after `]`,
//! `...` in a list, an empty list, a duplicate value, a value outside the knob's allowed set, a list for an
//! unbounded knob, and a type name (`int`) given as a fixed value. Beyond trtexec this also refuses a knob
//! given twice, an unbalanced bracket and a token without `=`, instead of building a wrong route.

use crate::knobs::{KnobSet, KnobValues, did_you_mean};
use std::fmt;

/// A parsed, validated expression: knobs in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    /// One term per knob, in the order written.
    pub terms: Vec<Term>,
}

/// One knob of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The knob name with its leading dash, as in the database.
    pub knob: String,
    /// The value it is pinned to, or the values it varies over.
    pub values: TermValues,
}

/// What an expression says about one knob's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermValues {
    /// `-knob=value`: pinned in every route.
    Fixed(String),
    /// `-knob=[a|b|c]`: one route per value (how many depends on the search order).
    Variable(Vec<String>),
}

impl Term {
    /// The values this term can take, in the order written.
    pub fn values(&self) -> &[String] {
        match &self.values {
            TermValues::Fixed(v) => std::slice::from_ref(v),
            TermValues::Variable(vs) => vs,
        }
    }

    /// Whether the term lists values to try (`-knob=[a|b]`) rather than pinning one.
    pub fn is_variable(&self) -> bool {
        matches!(self.values, TermValues::Variable(_))
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.values {
            TermValues::Fixed(v) => write!(f, "{}={}", self.knob, v),
            TermValues::Variable(vs) => write!(f, "{}=[{}]", self.knob, vs.join("|")),
        }
    }
}

impl fmt::Display for Expression {
    /// The canonical one-line form, e.g. `-conv_lowering=[on|off] -kgen:tiling=2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.terms.iter().map(Term::to_string).collect();
        f.write_str(&parts.join(" "))
    }
}

/// Why an expression was refused. Every message names the knob or token and says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// The expression has no tokens.
    #[error("the route expression is empty: give at least one token such as '-knob=[a|b]'")]
    Empty,
    /// A token without `=`.
    #[error("token '{token}' has no '=': write it as '-knob=value' or '-knob=[a|b|c]'")]
    MissingEquals {
        /// The token as written.
        token: String,
    },
    /// A token with nothing but spaces before `=`.
    #[error("token '{token}' has an empty knob name before '='")]
    EmptyKnobName {
        /// The token as written.
        token: String,
    },
    /// A `[` without its `]`, a `]` without its `[`, or nested lists.
    #[error(
        "unbalanced brackets in '{token}': every '[' needs one matching ']' and lists cannot nest"
    )]
    UnbalancedBracket {
        /// The token as written.
        token: String,
    },
    /// A knob the database does not have.
    #[error(
        "unknown knob: {knob}{} (ordinary build flags are not knobs; see --help-routes for the list)",
        did_you_mean(suggestion.as_deref())
    )]
    UnknownKnob {
        /// The knob as written.
        knob: String,
        /// The closest knob of the database, if one is close.
        suggestion: Option<String>,
    },
    /// A knob given in two tokens.
    #[error(
        "knob {knob} appears twice in the expression; give it once, with a list if it should vary"
    )]
    DuplicateKnob {
        /// The knob as the expression names it.
        knob: String,
    },
    /// Nothing after `=`.
    #[error("knob {knob} has no value after '='")]
    EmptyValue {
        /// The knob as the expression names it.
        knob: String,
    },
    /// Text between `=` and `[`.
    #[error("knob {knob}: unexpected text '{text}' before '['; write {knob}=[a|b]")]
    TextBeforeBracket {
        /// The knob as the expression names it.
        knob: String,
        /// The text between `=` and `[`.
        text: String,
    },
    /// Text after `]`.
    #[error("knob {knob}: unexpected text '{text}' after ']'; separate tokens with a space")]
    TextAfterBracket {
        /// The knob as the expression names it.
        knob: String,
        /// The text after `]`.
        text: String,
    },
    /// `...` in a list: an open range cannot be expanded.
    #[error(
        "knob {knob}: unbounded expression not allowed: '...' cannot be expanded, list the values to try"
    )]
    Ellipsis {
        /// The knob as the expression names it.
        knob: String,
    },
    /// `[]`: a list without values.
    #[error("knob {knob}: empty value list '[]'; list at least one value")]
    EmptyList {
        /// The knob as the expression names it.
        knob: String,
    },
    /// A value listed twice.
    #[error("knob {knob}: value '{value}' is listed twice")]
    DuplicateValue {
        /// The knob as the expression names it.
        knob: String,
        /// The repeated value.
        value: String,
    },
    /// Values outside the knob's allowed set.
    #[error("knob {knob}: invalid value(s) {}; allowed: {allowed}", quoted(values))]
    InvalidValues {
        /// The knob as the expression names it.
        knob: String,
        /// The values outside the knob's allowed set.
        values: Vec<String>,
        /// The allowed set as the database writes it (`-k=[a|b|c]`).
        allowed: String,
    },
    /// A list for a knob whose values are unbounded (`-k=int`); it can only be pinned.
    #[error(
        "knob {knob} has unbounded values ({kind}): a list cannot be expanded; pin one value with {knob}=VALUE"
    )]
    ListOnUnbounded {
        /// The knob as the expression names it.
        knob: String,
        /// The unbounded type, e.g. `int`.
        kind: String,
    },
    /// A type name (`int`) given where a value belongs.
    #[error(
        "knob {knob}: '{value}' is the type name, not a value; give a value such as {knob}={default}"
    )]
    TypeNameAsValue {
        /// The knob as the expression names it.
        knob: String,
        /// The type name given as the value (`int`).
        value: String,
        /// The knob's default, offered as an example value.
        default: String,
    },
}

fn quoted(values: &[String]) -> String {
    values
        .iter()
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parse an expression given on the command line (`--routes EXPR`).
pub fn parse(text: &str, knobs: &KnobSet) -> Result<Expression, ExprError> {
    let tokens = tokenize(text)?;
    if tokens.is_empty() {
        return Err(ExprError::Empty);
    }
    let mut terms: Vec<Term> = Vec::with_capacity(tokens.len());
    for token in tokens {
        let term = parse_token(&token, knobs)?;
        if terms.iter().any(|t| t.knob == term.knob) {
            return Err(ExprError::DuplicateKnob { knob: term.knob });
        }
        terms.push(term);
    }
    Ok(Expression { terms })
}

/// Split on whitespace outside brackets.
fn tokenize(text: &str) -> Result<Vec<String>, ExprError> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => {
                depth += 1;
                current.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    tokens.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    Ok(tokens)
}

fn parse_token(token: &str, knobs: &KnobSet) -> Result<Term, ExprError> {
    let Some((name, value)) = token.split_once('=') else {
        return Err(ExprError::MissingEquals {
            token: token.to_string(),
        });
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(ExprError::EmptyKnobName {
            token: token.to_string(),
        });
    }
    let Some(knob) = knobs.get(name) else {
        return Err(ExprError::UnknownKnob {
            knob: name.to_string(),
            suggestion: knobs.suggest(name),
        });
    };
    let knob_name = knob.name.clone();
    let opens = value.matches('[').count();
    let closes = value.matches(']').count();
    if opens > 1 || closes > 1 || opens != closes {
        return Err(ExprError::UnbalancedBracket {
            token: token.to_string(),
        });
    }
    if opens == 0 {
        let value = value.trim();
        if value.is_empty() {
            return Err(ExprError::EmptyValue { knob: knob_name });
        }
        check_fixed(knob, value)?;
        return Ok(Term {
            knob: knob_name,
            values: TermValues::Fixed(value.to_string()),
        });
    }
    let (before, rest) = value.split_once('[').unwrap_or(("", value));
    let Some((inner, after)) = rest.split_once(']') else {
        return Err(ExprError::UnbalancedBracket {
            token: token.to_string(),
        });
    };
    if !before.trim().is_empty() {
        return Err(ExprError::TextBeforeBracket {
            knob: knob_name,
            text: before.trim().to_string(),
        });
    }
    if !after.trim().is_empty() {
        return Err(ExprError::TextAfterBracket {
            knob: knob_name,
            text: after.trim().to_string(),
        });
    }
    let values: Vec<String> = inner
        .split('|')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect();
    if values.iter().any(|v| v == "...") {
        return Err(ExprError::Ellipsis { knob: knob_name });
    }
    if values.is_empty() {
        return Err(ExprError::EmptyList { knob: knob_name });
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(ExprError::DuplicateValue {
                knob: knob_name,
                value: v.clone(),
            });
        }
    }
    if let KnobValues::Unbounded(kind) = &knob.domain {
        return Err(ExprError::ListOnUnbounded {
            knob: knob_name,
            kind: kind.clone(),
        });
    }
    let invalid: Vec<String> = values
        .iter()
        .filter(|v| !knob.domain.accepts(v) && **v != knob.default)
        .cloned()
        .collect();
    if !invalid.is_empty() {
        return Err(ExprError::InvalidValues {
            knob: knob_name,
            values: invalid,
            allowed: knob.domain.render(),
        });
    }
    Ok(Term {
        knob: knob_name,
        values: TermValues::Variable(values),
    })
}

fn check_fixed(knob: &crate::knobs::Knob, value: &str) -> Result<(), ExprError> {
    if let KnobValues::Unbounded(kind) = &knob.domain
        && (value == kind || value == "int32_t")
    {
        return Err(ExprError::TypeNameAsValue {
            knob: knob.name.clone(),
            value: value.to_string(),
            default: knob.default.clone(),
        });
    }
    if !knob.domain.accepts(value) && value != knob.default {
        return Err(ExprError::InvalidValues {
            knob: knob.name.clone(),
            values: vec![value.to_string()],
            allowed: knob.domain.render(),
        });
    }
    Ok(())
}

/// One concrete build route: knob settings in expression order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    /// `(knob, value)` pairs, knob names with their leading dash.
    pub settings: Vec<(String, String)>,
}

impl Route {
    /// The value a route gives a knob.
    pub fn value(&self, knob: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(k, _)| k == knob)
            .map(|(_, v)| v.as_str())
    }

    /// Knobs whose values differ between two routes over the same knobs.
    pub fn differing_knobs(&self, other: &Route) -> Vec<String> {
        self.settings
            .iter()
            .filter(|(k, v)| other.value(k) != Some(v.as_str()))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

impl fmt::Display for Route {
    /// `-k1=v1 -k2=v2` in expression order, space-separated (the `--setBuildRoute` form).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!(
        "../../../tests/fixtures/trtexec-logs/trt11.1_helpBuildRoute_knobdb_EXCERPT.json"
    );

    fn knobs() -> KnobSet {
        KnobSet::from_json(FIXTURE, "fixture").expect("fixture")
    }

    fn err(text: &str) -> ExprError {
        parse(text, &knobs()).expect_err(text)
    }

    #[test]
    fn parses_variable_and_fixed_terms_in_order() {
        let e = parse(
            "-conv_lowering=[on|off]   -kgen:tiling=[ 0 | 1 |2] -peep:max=3",
            &knobs(),
        )
        .expect("valid");
        assert_eq!(e.terms.len(), 3);
        assert_eq!(e.terms[0].values(), ["on", "off"]);
        assert_eq!(e.terms[1].values(), ["0", "1", "2"]);
        assert_eq!(e.terms[2].values, TermValues::Fixed("3".into()));
        assert_eq!(
            e.to_string(),
            "-conv_lowering=[on|off] -kgen:tiling=[0|1|2] -peep:max=3"
        );
    }

    #[test]
    fn routes_file_is_newline_delimited() {
        let file = "-conv_lowering=[on|off]\n-kgen:tiling=[0|1|2]\n\n-cask_fusion:num_tactics=10\n";
        let e = parse(file, &knobs()).expect("valid");
        assert_eq!(
            e.to_string(),
            "-conv_lowering=[on|off] -kgen:tiling=[0|1|2] -cask_fusion:num_tactics=10"
        );
    }

    #[test]
    fn open_range_knobs_accept_listed_integers() {
        let e = parse("-peep:max=[1|2|8]", &knobs()).expect("open range list");
        assert_eq!(e.terms[0].values(), ["1", "2", "8"]);
        assert!(matches!(
            err("-peep:max=[1|two]"),
            ExprError::InvalidValues { .. }
        ));
    }

    #[test]
    fn each_trtexec_error_is_reported_clearly() {
        assert_eq!(err(""), ExprError::Empty);
        assert_eq!(err("  \n "), ExprError::Empty);
        let unknown = err("-conv_loweing=[on|off]");
        assert_eq!(
            unknown.to_string(),
            "unknown knob: -conv_loweing (did you mean -conv_lowering?) (ordinary build flags are not knobs; \
             see --help-routes for the list)"
        );
        assert!(matches!(
            err("-builderOptimizationLevel=3"),
            ExprError::UnknownKnob {
                suggestion: None,
                ..
            }
        ));
        assert_eq!(
            err("-kgen:tiling=[0|1|0]"),
            ExprError::DuplicateValue {
                knob: "-kgen:tiling".into(),
                value: "0".into()
            }
        );
        assert_eq!(
            err("-peep:max=[1|2|...]"),
            ExprError::Ellipsis {
                knob: "-peep:max".into()
            }
        );
        assert_eq!(
            err("-kgen:tiling=[]"),
            ExprError::EmptyList {
                knob: "-kgen:tiling".into()
            }
        );
        assert_eq!(
            err("-kgen:tiling=[ | ]"),
            ExprError::EmptyList {
                knob: "-kgen:tiling".into()
            }
        );
        let invalid = err("-kgen:tiling=[0|5|7]");
        assert_eq!(
            invalid.to_string(),
            "knob -kgen:tiling: invalid value(s) '5', '7'; allowed: [0|1|2]"
        );
        assert!(matches!(
            err("-conv_lowering=maybe"),
            ExprError::InvalidValues { .. }
        ));
        assert_eq!(
            err("-cask_fusion:num_tactics=[10|20]"),
            ExprError::ListOnUnbounded {
                knob: "-cask_fusion:num_tactics".into(),
                kind: "int".into()
            }
        );
        assert!(matches!(
            err("-cask_fusion:num_tactics=int"),
            ExprError::TypeNameAsValue { .. }
        ));
        assert!(matches!(
            err("-cask_fusion:num_tactics=many"),
            ExprError::InvalidValues { .. }
        ));
        assert_eq!(
            err("-kgen:tiling=x[0|1]"),
            ExprError::TextBeforeBracket {
                knob: "-kgen:tiling".into(),
                text: "x".into()
            }
        );
        assert_eq!(
            err("-kgen:tiling=[0|1]y"),
            ExprError::TextAfterBracket {
                knob: "-kgen:tiling".into(),
                text: "y".into()
            }
        );
        assert!(matches!(
            err("-kgen:tiling=[0|1"),
            ExprError::UnbalancedBracket { .. }
        ));
        assert!(matches!(
            err("-kgen:tiling=0|1]"),
            ExprError::UnbalancedBracket { .. }
        ));
        assert!(matches!(
            err("-kgen:tiling=[[0|1]]"),
            ExprError::UnbalancedBracket { .. }
        ));
        assert!(matches!(
            err("-kgen:tiling"),
            ExprError::MissingEquals { .. }
        ));
        assert!(matches!(err("=on"), ExprError::EmptyKnobName { .. }));
        assert!(matches!(err("-kgen:tiling="), ExprError::EmptyValue { .. }));
        assert_eq!(
            err("-kgen:tiling=0 -kgen:tiling=[1|2]"),
            ExprError::DuplicateKnob {
                knob: "-kgen:tiling".into()
            }
        );
    }

    #[test]
    fn a_route_renders_in_expression_order() {
        let r = Route {
            settings: vec![("-b".into(), "1".into()), ("-a:x".into(), "on".into())],
        };
        assert_eq!(r.to_string(), "-b=1 -a:x=on");
        let s = Route {
            settings: vec![("-b".into(), "2".into()), ("-a:x".into(), "on".into())],
        };
        assert_eq!(r.differing_knobs(&s), vec!["-b".to_string()]);
        assert_eq!(s.value("-a:x"), Some("on"));
    }
}
