//! The operation registry: every public operation a worker can time, with its request fields and the
//! metrics it reports, and the task adapters that map a profile's `task_strategy` onto an operation.
//!
//! Extension is by data: a new task that reuses an existing operation is one [`TaskAdapter`] entry; a new
//! public capability is one [`OperationDecl`] plus one timed runner in the runtime crate. [`validate`]
//! checks the tables at start-up so a dangling reference fails before any model is touched.

use serde::Serialize;
use serde_json::Value;

/// The type a request field accepts; values from TOML, YAML and `--set` are checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    Integer,
    Number,
    Bool,
    String,
    StringList,
}

impl FieldKind {
    pub fn describe(self) -> &'static str {
        match self {
            FieldKind::Integer => "an integer",
            FieldKind::Number => "a number",
            FieldKind::Bool => "true or false",
            FieldKind::String => "a string",
            FieldKind::StringList => "a list of strings",
        }
    }
}

/// One request field of an operation.
#[derive(Debug, Clone, Serialize)]
pub struct FieldDecl {
    pub name: &'static str,
    pub kind: FieldKind,
    /// Default as a JSON literal; `None` when the field must come from the manifest or a case.
    #[serde(skip)]
    pub default: Option<fn() -> Value>,
    pub help: &'static str,
    /// Build dimension this field binds (shape-affecting): changing it needs another bundle.
    pub binds_dim: Option<&'static str>,
}

/// How a throughput metric counts its items per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemCount {
    /// One per call.
    Call,
    /// The observation's `items` field (images, vectors, documents in the batch).
    Items,
    /// `items` times the observation's `elements_per_item`.
    Elements,
    /// The observation's `output_tokens`.
    OutputTokens,
}

/// A throughput metric: items counted per call, divided by the summed wall time of the timed calls.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputDecl {
    pub name: &'static str,
    pub unit: &'static str,
    pub count: ItemCount,
}

/// A per-call stage duration the runner reports in each observation (e.g. time to first token).
#[derive(Debug, Clone, Serialize)]
pub struct StageDecl {
    pub name: &'static str,
    pub help: &'static str,
}

/// A public operation with its request contract and metric declaration.
#[derive(Debug, Clone, Serialize)]
pub struct OperationDecl {
    pub name: &'static str,
    pub summary: &'static str,
    pub fields: &'static [FieldDecl],
    pub throughputs: &'static [ThroughputDecl],
    pub stages: &'static [StageDecl],
    /// Whether one call can process a batch (`request.batch_size > 1`); otherwise larger batches are
    /// rejected rather than simulated with sequential calls.
    pub batch_api: bool,
    pub default_warmup: u64,
    pub default_iterations: u64,
    /// Operations used only by the test suite (crash, hang, no-op) are hidden from user listings.
    pub test_only: bool,
}

impl OperationDecl {
    pub fn field(&self, name: &str) -> Option<&FieldDecl> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Maps a task contract onto an operation.
#[derive(Debug, Clone, Serialize)]
pub struct TaskAdapter {
    pub task_strategy: &'static str,
    pub operation: &'static str,
    pub summary: &'static str,
}

const REQUEST_PER_S: ThroughputDecl = ThroughputDecl {
    name: "request/s",
    unit: "1/s",
    count: ItemCount::Call,
};

fn int(v: i64) -> Value {
    Value::from(v)
}

const SEED: FieldDecl = FieldDecl {
    name: "seed",
    kind: FieldKind::Integer,
    default: Some(|| int(0)),
    help: "seed of synthesized inputs",
    binds_dim: None,
};

const BATCH: FieldDecl = FieldDecl {
    name: "batch_size",
    kind: FieldKind::Integer,
    default: Some(|| int(1)),
    help: "items processed by one call (binds the model's `batch` dimension)",
    binds_dim: Some("batch"),
};

static OPERATIONS: &[OperationDecl] = &[
    OperationDecl {
        name: "infer",
        summary: "one forward pass over synthesized inputs of the declared shapes",
        fields: &[SEED],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 50,
        default_iterations: 500,
        test_only: false,
    },
    OperationDecl {
        name: "classify",
        summary: "classify a batch of images (top-1 over the logits)",
        fields: &[
            BATCH,
            SEED,
            FieldDecl {
                name: "image",
                kind: FieldKind::String,
                default: Some(|| Value::from("synthetic")),
                help: "`synthetic` (seeded noise) or a manifest-relative image file",
                binds_dim: None,
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "image/s",
                unit: "1/s",
                count: ItemCount::Items,
            },
        ],
        stages: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        test_only: false,
    },
    OperationDecl {
        name: "encode",
        summary: "embed a batch of texts into vectors",
        fields: &[
            BATCH,
            FieldDecl {
                name: "texts",
                kind: FieldKind::StringList,
                default: None,
                help: "texts to embed; the batch cycles through them",
                binds_dim: None,
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "vector/s",
                unit: "1/s",
                count: ItemCount::Items,
            },
            ThroughputDecl {
                name: "element/s",
                unit: "1/s",
                count: ItemCount::Elements,
            },
        ],
        stages: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        test_only: false,
    },
    OperationDecl {
        name: "generate",
        summary: "generate text from a prompt with the KV cache (greedy or seeded sampling)",
        fields: &[
            FieldDecl {
                name: "prompt",
                kind: FieldKind::String,
                default: None,
                help: "prompt text",
                binds_dim: None,
            },
            FieldDecl {
                name: "max_new_tokens",
                kind: FieldKind::Integer,
                default: Some(|| int(32)),
                help: "tokens generated per call (exactly: end-of-sequence does not stop early)",
                binds_dim: None,
            },
            FieldDecl {
                name: "do_sample",
                kind: FieldKind::Bool,
                default: Some(|| Value::Bool(false)),
                help: "sample instead of greedy argmax",
                binds_dim: None,
            },
            FieldDecl {
                name: "temperature",
                kind: FieldKind::Number,
                default: Some(|| Value::from(1.0)),
                help: "sampling temperature",
                binds_dim: None,
            },
            FieldDecl {
                name: "top_k",
                kind: FieldKind::Integer,
                default: Some(|| int(0)),
                help: "sample among the k most likely tokens (0 = all)",
                binds_dim: None,
            },
            FieldDecl {
                name: "seed",
                kind: FieldKind::Integer,
                default: Some(|| int(-1)),
                help: "sampling seed; -1 is the pipeline default used by greedy cases",
                binds_dim: None,
            },
            BATCH,
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "output token/s",
                unit: "1/s",
                count: ItemCount::OutputTokens,
            },
        ],
        stages: &[
            StageDecl {
                name: "time_to_first_token",
                help: "call start to the first generated token",
            },
            StageDecl {
                name: "prefill",
                help: "the prompt pass that fills the KV cache",
            },
            StageDecl {
                name: "decode",
                help: "all single-token steps after the first token",
            },
        ],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        test_only: false,
    },
    OperationDecl {
        name: "test_noop",
        summary: "does nothing (measures the harness itself)",
        fields: &[],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 50,
        default_iterations: 500,
        test_only: true,
    },
    OperationDecl {
        name: "test_sleep",
        summary: "sleeps for request.sleep_us (a known delay)",
        fields: &[FieldDecl {
            name: "sleep_us",
            kind: FieldKind::Integer,
            default: Some(|| int(100)),
            help: "microseconds to sleep per call",
            binds_dim: None,
        }],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        test_only: true,
    },
    OperationDecl {
        name: "test_crash",
        summary: "aborts the worker process after request.after_calls calls",
        fields: &[FieldDecl {
            name: "after_calls",
            kind: FieldKind::Integer,
            default: Some(|| int(3)),
            help: "calls before the abort",
            binds_dim: None,
        }],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        test_only: true,
    },
    OperationDecl {
        name: "test_hang",
        summary: "blocks forever after request.after_calls calls",
        fields: &[FieldDecl {
            name: "after_calls",
            kind: FieldKind::Integer,
            default: Some(|| int(3)),
            help: "calls before hanging",
            binds_dim: None,
        }],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        test_only: true,
    },
    OperationDecl {
        name: "test_nan",
        summary: "returns a non-finite output on every call",
        fields: &[],
        throughputs: &[REQUEST_PER_S],
        stages: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        test_only: true,
    },
];

static ADAPTERS: &[TaskAdapter] = &[
    TaskAdapter {
        task_strategy: "onnx_inference",
        operation: "infer",
        summary: "any ONNX model",
    },
    TaskAdapter {
        task_strategy: "image_classification",
        operation: "classify",
        summary: "image in, class logits out",
    },
    TaskAdapter {
        task_strategy: "object_detection",
        operation: "classify",
        summary: "image in, boxes out",
    },
    TaskAdapter {
        task_strategy: "sentence_embedding",
        operation: "encode",
        summary: "texts in, one vector per text",
    },
    TaskAdapter {
        task_strategy: "text_generation",
        operation: "generate",
        summary: "decoder-only language model with a KV cache",
    },
    TaskAdapter {
        task_strategy: "test_noop",
        operation: "test_noop",
        summary: "harness overhead",
    },
    TaskAdapter {
        task_strategy: "test_sleep",
        operation: "test_sleep",
        summary: "known delay",
    },
    TaskAdapter {
        task_strategy: "test_crash",
        operation: "test_crash",
        summary: "worker crash",
    },
    TaskAdapter {
        task_strategy: "test_hang",
        operation: "test_hang",
        summary: "worker hang",
    },
    TaskAdapter {
        task_strategy: "test_nan",
        operation: "test_nan",
        summary: "non-finite output",
    },
];

pub fn operations() -> &'static [OperationDecl] {
    OPERATIONS
}

pub fn adapters() -> &'static [TaskAdapter] {
    ADAPTERS
}

pub fn operation(name: &str) -> Option<&'static OperationDecl> {
    OPERATIONS.iter().find(|op| op.name == name)
}

pub fn adapter(task_strategy: &str) -> Option<&'static TaskAdapter> {
    ADAPTERS.iter().find(|a| a.task_strategy == task_strategy)
}

/// The operation a task strategy runs, or a message listing the known strategies.
pub fn operation_for_task(task_strategy: &str) -> Result<&'static OperationDecl, String> {
    let adapter = adapter(task_strategy).ok_or_else(|| {
        let known: Vec<&str> = ADAPTERS
            .iter()
            .filter(|a| !a.task_strategy.starts_with("test_"))
            .map(|a| a.task_strategy)
            .collect();
        format!(
            "unknown task_strategy `{task_strategy}` (known: {})",
            known.join(", ")
        )
    })?;
    operation(adapter.operation).ok_or_else(|| {
        format!(
            "task_strategy `{task_strategy}` maps to unknown operation `{}`",
            adapter.operation
        )
    })
}

/// Checks the tables: unique names, every adapter's operation declared, field defaults of the declared
/// kind. Called at start-up and by the tests.
pub fn validate() -> Result<(), String> {
    let mut names = std::collections::BTreeSet::new();
    for op in OPERATIONS {
        if !names.insert(op.name) {
            return Err(format!("operation `{}` is declared twice", op.name));
        }
        let mut fields = std::collections::BTreeSet::new();
        for f in op.fields {
            if !fields.insert(f.name) {
                return Err(format!(
                    "operation `{}` declares field `{}` twice",
                    op.name, f.name
                ));
            }
            if let Some(default) = f.default
                && check_kind(f.kind, &default()).is_err()
            {
                return Err(format!(
                    "default of `{}.{}` is not {}",
                    op.name,
                    f.name,
                    f.kind.describe()
                ));
            }
        }
        if op.default_iterations == 0 {
            return Err(format!(
                "operation `{}` has zero default iterations",
                op.name
            ));
        }
    }
    let mut tasks = std::collections::BTreeSet::new();
    for a in ADAPTERS {
        if !tasks.insert(a.task_strategy) {
            return Err(format!(
                "task_strategy `{}` is mapped twice",
                a.task_strategy
            ));
        }
        if operation(a.operation).is_none() {
            return Err(format!(
                "task_strategy `{}` maps to undeclared operation `{}`",
                a.task_strategy, a.operation
            ));
        }
    }
    Ok(())
}

/// Checks (and for integral numbers, normalizes) a value against a field kind.
pub fn check_kind(kind: FieldKind, value: &Value) -> Result<Value, String> {
    let ok = match kind {
        FieldKind::Integer => value.as_i64().is_some(),
        FieldKind::Number => value.as_f64().is_some_and(f64::is_finite),
        FieldKind::Bool => value.is_boolean(),
        FieldKind::String => value.is_string(),
        FieldKind::StringList => value
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)),
    };
    if ok {
        Ok(value.clone())
    } else {
        Err(format!("expected {}, got {value}", kind.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_is_consistent() {
        validate().expect("registry");
    }

    #[test]
    fn every_adapter_resolves_and_unknown_tasks_list_alternatives() {
        for a in adapters() {
            assert_eq!(
                operation_for_task(a.task_strategy).expect("op").name,
                a.operation
            );
        }
        let err = operation_for_task("telepathy").expect_err("unknown");
        assert!(
            err.contains("text_generation") && !err.contains("test_crash"),
            "{err}"
        );
    }

    #[test]
    fn kinds_reject_mismatched_values() {
        assert!(check_kind(FieldKind::Integer, &Value::from(3)).is_ok());
        assert!(check_kind(FieldKind::Integer, &Value::from(3.5)).is_err());
        assert!(check_kind(FieldKind::StringList, &serde_json::json!(["a", 1])).is_err());
        assert!(check_kind(FieldKind::Number, &Value::from(2)).is_ok());
    }

    #[test]
    fn generation_defaults_follow_the_seed() {
        let g = operation("generate").expect("generate");
        assert_eq!((g.default_warmup, g.default_iterations), (5, 50));
        assert!(!g.batch_api);
        let e = operation("encode").expect("encode");
        assert_eq!((e.default_warmup, e.default_iterations), (50, 500));
        assert_eq!(
            (g.field("seed").and_then(|f| f.default).expect("default"))(),
            Value::from(-1)
        );
    }
}
