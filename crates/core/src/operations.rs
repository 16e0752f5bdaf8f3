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
    /// A manifest-relative file (WAV audio, PNG image), or `synthetic`; its bytes are hashed into the case
    /// identity and it is decoded before the timed region.
    Artifact,
    /// A list of tables, one per sample: the per-item (or, at batch size 1, per-call) inputs of
    /// [`sample_list`]; each table sets some of the operation's own fields.
    Samples,
}

impl FieldKind {
    pub fn describe(self) -> &'static str {
        match self {
            FieldKind::Integer => "an integer",
            FieldKind::Number => "a number",
            FieldKind::Bool => "true or false",
            FieldKind::String => "a string",
            FieldKind::StringList => "a list of strings",
            FieldKind::Artifact => "a file path relative to MODEL.toml (or `synthetic`)",
            FieldKind::Samples => {
                "a list of tables, one per sample (e.g. [{seed = 1}, {seed = 2}])"
            }
        }
    }
}

/// One request field of an operation.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FieldDecl {
    pub name: &'static str,
    pub kind: FieldKind,
    /// Default as a JSON literal; `None` when the field must come from the manifest or a case.
    #[serde(skip)]
    pub default: Option<fn() -> Value>,
    pub help: &'static str,
    /// Build dimension this field binds (shape-affecting): changing it needs another bundle.
    pub binds_dim: Option<&'static str>,
    /// The least and the most an integer field takes, both included, checked at resolution before any
    /// build or worker (a worker asked for 10¹² tokens would fail allocating them); `None`: any integer.
    pub range: Option<(i64, i64)>,
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
    /// One of the operation's declared [`CounterDecl`]s (e.g. audio microseconds, mask pixels), times
    /// the counter's scale.
    Counter(&'static str),
}

/// An operation-specific quantity a runner counts in each call (`Observation::counts`), in integral base
/// units; `scale` turns the base unit into the unit of the metric (e.g. microseconds to seconds: 1e-6).
#[derive(Debug, Clone, Serialize)]
pub struct CounterDecl {
    pub name: &'static str,
    pub scale: f64,
    pub help: &'static str,
}

/// Wall seconds per counted quantity: seconds/image, seconds/video, and the real-time factor (wall seconds
/// per second of audio; below 1 is faster than real time).
#[derive(Debug, Clone, Serialize)]
pub struct RatioDecl {
    pub name: &'static str,
    pub unit: &'static str,
    pub per: ItemCount,
}

/// Most counters one operation may declare (runners record them in a fixed-size array).
pub const MAX_COUNTERS: usize = 4;
/// Most stages one operation may declare.
pub const MAX_STAGES: usize = 3;

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
    /// The throughput in the task's own unit that summary tables show (token/s, image/s, audio s/s, …);
    /// one of `throughputs`, `request/s` where the operation has nothing better.
    pub headline_throughput: &'static str,
    pub stages: &'static [StageDecl],
    /// Operation-specific counters, in the order runners record them.
    pub counters: &'static [CounterDecl],
    /// Seconds-per-quantity figures (the inverse view of a throughput).
    pub ratios: &'static [RatioDecl],
    /// Whether one call can process a batch (`request.batch_size > 1`); otherwise larger batches are
    /// rejected rather than simulated with sequential calls.
    pub batch_api: bool,
    pub default_warmup: u64,
    /// The minimum count of timed calls of a default run.
    pub default_iterations: u64,
    /// The time budget of a default run's timed loop, seconds (`--max-duration`).
    pub default_max_duration_s: f64,
    /// Operations used only by the test suite (crash, hang, no-op) are hidden from user listings.
    pub test_only: bool,
}

impl FieldDecl {
    /// Whether a case must give the field: one without a default is required, except a sample list,
    /// whose absence means the one request is every sample.
    pub fn required(&self) -> bool {
        self.default.is_none() && self.kind != FieldKind::Samples
    }
}

impl OperationDecl {
    pub fn field(&self, name: &str) -> Option<&FieldDecl> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Position of counter `name` in [`OperationDecl::counters`].
    pub fn counter_index(&self, name: &str) -> Option<usize> {
        self.counters.iter().position(|c| c.name == name)
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
    range: None,
};

const BATCH: FieldDecl = FieldDecl {
    name: "batch_size",
    kind: FieldKind::Integer,
    default: Some(|| int(1)),
    help: "items processed by one call (binds the model's `batch` dimension)",
    binds_dim: Some("batch"),
    range: Some((1, crate::case::MOST_BOUND_DIM)),
};

const IMAGE: FieldDecl = FieldDecl {
    name: "image",
    kind: FieldKind::Artifact,
    default: Some(|| Value::from("synthetic")),
    help: "`synthetic` (seeded noise) or an image file (PNG) relative to MODEL.toml",
    binds_dim: None,
    range: None,
};

const IMAGE_SAMPLES: FieldDecl = FieldDecl {
    name: "samples",
    kind: FieldKind::Samples,
    default: None,
    help: "one table per batch item (`image`, `seed`); at batch_size 1 the calls rotate through them",
    binds_dim: None,
    range: None,
};

const PROMPT_SAMPLES: FieldDecl = FieldDecl {
    name: "samples",
    kind: FieldKind::Samples,
    default: None,
    help: "prompts and seeds (`prompt`, `seed`) the calls rotate through (call i uses sample i mod n)",
    binds_dim: None,
    range: None,
};

const AUDIO_SAMPLES: FieldDecl = FieldDecl {
    name: "samples",
    kind: FieldKind::Samples,
    default: None,
    help: "recordings (`audio`) the calls rotate through (call i uses sample i mod n)",
    binds_dim: None,
    range: None,
};

const SEED_SAMPLES: FieldDecl = FieldDecl {
    name: "samples",
    kind: FieldKind::Samples,
    default: None,
    help: "one table per batch item (`seed`); at batch_size 1 the calls rotate through them",
    binds_dim: None,
    range: None,
};

/// The request field that lists an operation's samples, and the fields one sample may set (none: the
/// list holds the texts themselves). One entry: every item of every call repeats it (`cloned` when the
/// batch is larger); `batch_size` entries: one per item of the batch (`declared`); at batch size 1,
/// several entries rotate across calls (call i uses entry i mod n).
pub fn sample_list(operation: &str) -> Option<(&'static str, &'static [&'static str])> {
    match operation {
        "encode" => Some(("texts", &[])),
        "rerank" => Some(("documents", &[])),
        "classify" | "detect" | "segment" => Some(("samples", &["image", "seed"])),
        "generate_image" | "forecast" => Some(("samples", &["seed"])),
        "generate" | "generate_vl" => Some(("samples", &["prompt", "seed"])),
        "transcribe" | "convert_speech" => Some(("samples", &["audio"])),
        _ => None,
    }
}

const AUDIO: FieldDecl = FieldDecl {
    name: "audio",
    kind: FieldKind::Artifact,
    default: None,
    help: "a mono 16-bit PCM WAV file relative to MODEL.toml (decoded before the timed region)",
    binds_dim: None,
    range: None,
};

const SAMPLE_RATE: FieldDecl = FieldDecl {
    name: "sample_rate",
    kind: FieldKind::Integer,
    default: Some(|| int(16_000)),
    help: "samples per second the model consumes or produces (a WAV input must match it)",
    binds_dim: None,
    range: Some((1, 1_000_000)),
};

const FRAME_SAMPLES: FieldDecl = FieldDecl {
    name: "frame_samples",
    kind: FieldKind::Integer,
    default: Some(|| int(160)),
    help: "samples per acoustic frame of the model; audio is zero-padded to a whole number of frames",
    binds_dim: None,
    range: Some((1, 1 << 20)),
};

const STEPS: FieldDecl = FieldDecl {
    name: "steps",
    kind: FieldKind::Integer,
    default: Some(|| int(4)),
    help: "denoising steps per call (one denoiser run each)",
    binds_dim: None,
    range: Some((1, 10_000)),
};

const IMAGE_PER_S: ThroughputDecl = ThroughputDecl {
    name: "image/s",
    unit: "1/s",
    count: ItemCount::Items,
};

const AUDIO_US: CounterDecl = CounterDecl {
    name: "audio_us",
    scale: 1e-6,
    help: "audio consumed or produced by the call, microseconds",
};

const REAL_TIME_FACTOR: RatioDecl = RatioDecl {
    name: "real-time factor",
    unit: "s/s",
    per: ItemCount::Counter("audio_us"),
};

const GENERATE_FIELDS: [FieldDecl; 6] = [
    FieldDecl {
        name: "prompt",
        kind: FieldKind::String,
        default: None,
        help: "prompt text",
        binds_dim: None,
        range: None,
    },
    FieldDecl {
        name: "max_new_tokens",
        kind: FieldKind::Integer,
        default: Some(|| int(32)),
        help: "tokens generated per call (exactly: end-of-sequence does not stop early)",
        binds_dim: None,
        range: Some((1, 1 << 20)),
    },
    FieldDecl {
        name: "do_sample",
        kind: FieldKind::Bool,
        default: Some(|| Value::Bool(false)),
        help: "sample instead of greedy argmax",
        binds_dim: None,
        range: None,
    },
    FieldDecl {
        name: "temperature",
        kind: FieldKind::Number,
        default: Some(|| Value::from(1.0)),
        help: "sampling temperature",
        binds_dim: None,
        range: None,
    },
    FieldDecl {
        name: "top_k",
        kind: FieldKind::Integer,
        default: Some(|| int(0)),
        help: "sample among the k most likely tokens (0 = all)",
        binds_dim: None,
        range: Some((0, 1 << 20)),
    },
    FieldDecl {
        name: "seed",
        kind: FieldKind::Integer,
        default: Some(|| int(-1)),
        help: "sampling seed; -1 is the pipeline default used by greedy cases",
        binds_dim: None,
        range: None,
    },
];

/// `request.mode` of the text generators: `completion` tokenizes `prompt` as it is, `chat` renders the
/// case's `messages` with the model's chat template (crate::chat).
const GENERATION_MODE: FieldDecl = FieldDecl {
    name: crate::chat::MODE_FIELD,
    kind: FieldKind::String,
    default: Some(|| Value::from(crate::chat::MODE_COMPLETION)),
    help: "`completion` (the raw prompt) or `chat` (the case's messages through the model's chat template)",
    binds_dim: None,
    range: None,
};

const GENERATE_THROUGHPUTS: [ThroughputDecl; 2] = [
    REQUEST_PER_S,
    ThroughputDecl {
        name: "output token/s",
        unit: "1/s",
        count: ItemCount::OutputTokens,
    },
];

const GENERATE_STAGES: [StageDecl; 3] = [
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
];

static OPERATIONS: &[OperationDecl] = &[
    OperationDecl {
        name: "infer",
        summary: "one forward pass over synthesized inputs of the declared shapes",
        fields: &[SEED],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "classify",
        summary: "classify a batch of images (top-1 over the logits)",
        fields: &[BATCH, SEED, IMAGE, IMAGE_SAMPLES],
        throughputs: &[REQUEST_PER_S, IMAGE_PER_S],
        headline_throughput: "image/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
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
                help: "texts to embed: one, one per batch item, or (batch_size 1) one per call in rotation",
                binds_dim: None,
                range: None,
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
        headline_throughput: "vector/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "generate",
        summary: "generate text from a prompt with the KV cache (greedy or seeded sampling)",
        fields: &[
            GENERATE_FIELDS[0],
            GENERATE_FIELDS[1],
            GENERATE_FIELDS[2],
            GENERATE_FIELDS[3],
            GENERATE_FIELDS[4],
            GENERATE_FIELDS[5],
            GENERATION_MODE,
            BATCH,
            PROMPT_SAMPLES,
        ],
        throughputs: &GENERATE_THROUGHPUTS,
        headline_throughput: "output token/s",
        stages: &GENERATE_STAGES,
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "generate_vl",
        summary: "vision-language generation: an image and a prompt in, text out through the KV cache",
        fields: &[
            GENERATE_FIELDS[0],
            GENERATE_FIELDS[1],
            GENERATE_FIELDS[2],
            GENERATE_FIELDS[3],
            GENERATE_FIELDS[4],
            GENERATE_FIELDS[5],
            GENERATION_MODE,
            BATCH,
            PROMPT_SAMPLES,
            IMAGE,
            FieldDecl {
                name: "image_size",
                kind: FieldKind::Integer,
                default: Some(|| int(32)),
                help: "side of the square image the vision encoder sees (cut into its patches)",
                binds_dim: None,
                range: Some((1, 16_384)),
            },
        ],
        throughputs: &GENERATE_THROUGHPUTS,
        headline_throughput: "output token/s",
        stages: &GENERATE_STAGES,
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "detect",
        summary: "detect objects in a batch of images (boxes with class scores)",
        fields: &[
            BATCH,
            SEED,
            IMAGE,
            IMAGE_SAMPLES,
            FieldDecl {
                name: "score_threshold",
                kind: FieldKind::Number,
                default: Some(|| Value::from(0.5)),
                help: "a box counts as a detection when its best class score passes this",
                binds_dim: None,
                range: None,
            },
        ],
        throughputs: &[REQUEST_PER_S, IMAGE_PER_S],
        headline_throughput: "image/s",
        stages: &[],
        counters: &[CounterDecl {
            name: "detections",
            scale: 1.0,
            help: "boxes whose best class score passes request.score_threshold",
        }],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "segment",
        summary: "semantic segmentation of a batch of images (one mask per class, one label per pixel)",
        fields: &[BATCH, SEED, IMAGE, IMAGE_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            IMAGE_PER_S,
            ThroughputDecl {
                name: "mask/s",
                unit: "1/s",
                count: ItemCount::Counter("masks"),
            },
            ThroughputDecl {
                name: "mask pixel/s",
                unit: "1/s",
                count: ItemCount::Counter("mask_pixels"),
            },
        ],
        headline_throughput: "image/s",
        stages: &[],
        counters: &[
            CounterDecl {
                name: "masks",
                scale: 1.0,
                help: "class masks produced (images x classes)",
            },
            CounterDecl {
                name: "mask_pixels",
                scale: 1.0,
                help: "pixels of all masks produced (masks x height x width)",
            },
        ],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "rerank",
        summary: "score documents against a query with a cross-encoder (one batch call)",
        fields: &[
            BATCH,
            FieldDecl {
                name: "query",
                kind: FieldKind::String,
                default: None,
                help: "the query every document is scored against",
                binds_dim: None,
                range: None,
            },
            FieldDecl {
                name: "documents",
                kind: FieldKind::StringList,
                default: None,
                help: "documents to score: one, one per batch item, or (batch_size 1) one per call in rotation",
                binds_dim: None,
                range: None,
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "document/s",
                unit: "1/s",
                count: ItemCount::Items,
            },
        ],
        headline_throughput: "document/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "transcribe",
        summary: "speech to text: CTC acoustic model over a WAV file, offline or in streaming chunks",
        fields: &[
            AUDIO,
            AUDIO_SAMPLES,
            SAMPLE_RATE,
            FRAME_SAMPLES,
            FieldDecl {
                name: "chunk_ms",
                kind: FieldKind::Integer,
                default: Some(|| int(0)),
                help: "streaming chunk length in milliseconds; 0 transcribes the whole file in one pass",
                binds_dim: None,
                range: Some((0, 3_600_000)),
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "audio s/s",
                unit: "s/s",
                count: ItemCount::Counter("audio_us"),
            },
            ThroughputDecl {
                name: "output token/s",
                unit: "1/s",
                count: ItemCount::OutputTokens,
            },
        ],
        headline_throughput: "audio s/s",
        stages: &[StageDecl {
            name: "first_partial",
            help: "call start to the first partial transcript (the whole call when offline)",
        }],
        counters: &[AUDIO_US],
        ratios: &[REAL_TIME_FACTOR],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "generate_audio",
        summary: "audio generation: a vocoder turns seeded latent frames into a waveform",
        fields: &[
            SEED,
            FieldDecl {
                name: "frames",
                kind: FieldKind::Integer,
                default: Some(|| int(64)),
                help: "latent frames per call (the model's hop length of samples each)",
                binds_dim: None,
                range: Some((1, 1 << 20)),
            },
            SAMPLE_RATE,
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "audio s/s",
                unit: "s/s",
                count: ItemCount::Counter("audio_us"),
            },
            ThroughputDecl {
                name: "sample/s",
                unit: "1/s",
                count: ItemCount::Counter("samples"),
            },
        ],
        headline_throughput: "audio s/s",
        stages: &[],
        counters: &[
            AUDIO_US,
            CounterDecl {
                name: "samples",
                scale: 1.0,
                help: "audio samples generated",
            },
        ],
        ratios: &[REAL_TIME_FACTOR],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "convert_speech",
        summary: "speech to speech: a WAV file in, a converted waveform out",
        fields: &[AUDIO, AUDIO_SAMPLES, SAMPLE_RATE, FRAME_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "consumed audio s/s",
                unit: "s/s",
                count: ItemCount::Counter("audio_us"),
            },
            ThroughputDecl {
                name: "generated audio s/s",
                unit: "s/s",
                count: ItemCount::Counter("generated_audio_us"),
            },
        ],
        headline_throughput: "consumed audio s/s",
        stages: &[],
        counters: &[
            AUDIO_US,
            CounterDecl {
                name: "generated_audio_us",
                scale: 1e-6,
                help: "generated audio, microseconds",
            },
        ],
        ratios: &[RatioDecl {
            name: "input real-time factor",
            unit: "s/s",
            per: ItemCount::Counter("audio_us"),
        }],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "generate_image",
        summary: "image diffusion: a denoiser looped over request.steps from seeded noise",
        fields: &[BATCH, SEED, STEPS, SEED_SAMPLES],
        throughputs: &[REQUEST_PER_S, IMAGE_PER_S],
        headline_throughput: "image/s",
        stages: &[],
        counters: &[],
        ratios: &[RatioDecl {
            name: "s/image",
            unit: "s",
            per: ItemCount::Items,
        }],
        batch_api: true,
        default_warmup: 1,
        default_iterations: 5,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "generate_video",
        summary: "video diffusion: a denoiser looped over request.steps on all frames of a clip",
        fields: &[
            SEED,
            STEPS,
            FieldDecl {
                name: "frames",
                kind: FieldKind::Integer,
                default: Some(|| int(8)),
                help: "frames per video (binds the model's `batch` dimension: all frames denoise together)",
                binds_dim: Some("batch"),
                range: Some((1, crate::case::MOST_BOUND_DIM)),
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "video/s",
                unit: "1/s",
                count: ItemCount::Items,
            },
            ThroughputDecl {
                name: "frame/s",
                unit: "1/s",
                count: ItemCount::Counter("frames"),
            },
        ],
        headline_throughput: "video/s",
        stages: &[],
        counters: &[CounterDecl {
            name: "frames",
            scale: 1.0,
            help: "video frames generated",
        }],
        ratios: &[RatioDecl {
            name: "s/video",
            unit: "s",
            per: ItemCount::Items,
        }],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 5,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "forecast",
        summary: "neural operator / time series: a batch of history windows in, forecasts out",
        fields: &[BATCH, SEED, SEED_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "window/s",
                unit: "1/s",
                count: ItemCount::Items,
            },
            ThroughputDecl {
                name: "forecast element/s",
                unit: "1/s",
                count: ItemCount::Elements,
            },
        ],
        headline_throughput: "window/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: true,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
        test_only: false,
    },
    OperationDecl {
        name: "test_noop",
        summary: "does nothing (measures the harness itself)",
        fields: &[],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 50,
        default_iterations: 500,
        default_max_duration_s: 30.0,
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
            range: None,
        }],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 5,
        default_iterations: 50,
        default_max_duration_s: 30.0,
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
            range: None,
        }],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        default_max_duration_s: 30.0,
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
            range: None,
        }],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        default_max_duration_s: 30.0,
        test_only: true,
    },
    OperationDecl {
        name: "test_nan",
        summary: "returns a non-finite output on every call",
        fields: &[],
        throughputs: &[REQUEST_PER_S],
        headline_throughput: "request/s",
        stages: &[],
        counters: &[],
        ratios: &[],
        batch_api: false,
        default_warmup: 1,
        default_iterations: 10,
        default_max_duration_s: 30.0,
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
        task_strategy: "vision_language_generation",
        operation: "generate_vl",
        summary: "image + prompt in, text out (image encoder in front of a KV-cache decoder)",
    },
    TaskAdapter {
        task_strategy: "object_detection",
        operation: "detect",
        summary: "image in, boxes with class scores out",
    },
    TaskAdapter {
        task_strategy: "semantic_segmentation",
        operation: "segment",
        summary: "image in, per-class mask logits out",
    },
    TaskAdapter {
        task_strategy: "reranking",
        operation: "rerank",
        summary: "query and documents in, one relevance score per document",
    },
    TaskAdapter {
        task_strategy: "speech_transcription",
        operation: "transcribe",
        summary: "WAV audio in, CTC token logits out, greedy CTC decoding",
    },
    TaskAdapter {
        task_strategy: "audio_generation",
        operation: "generate_audio",
        summary: "latent frames in, waveform out (vocoder)",
    },
    TaskAdapter {
        task_strategy: "speech_to_speech",
        operation: "convert_speech",
        summary: "WAV audio in, converted waveform out",
    },
    TaskAdapter {
        task_strategy: "image_diffusion",
        operation: "generate_image",
        summary: "noise predictor looped over denoising steps",
    },
    TaskAdapter {
        task_strategy: "video_diffusion",
        operation: "generate_video",
        summary: "noise predictor over all frames of a clip, looped over steps",
    },
    TaskAdapter {
        task_strategy: "time_series_forecasting",
        operation: "forecast",
        summary: "history window in, forecast horizon out",
    },
    TaskAdapter {
        task_strategy: "neural_operator",
        operation: "forecast",
        summary: "sampled input field in, predicted field out",
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
        if op.counters.len() > MAX_COUNTERS || op.stages.len() > MAX_STAGES {
            return Err(format!(
                "operation `{}` declares more than {MAX_COUNTERS} counters or {MAX_STAGES} stages",
                op.name
            ));
        }
        let counted = op
            .throughputs
            .iter()
            .map(|t| t.count)
            .chain(op.ratios.iter().map(|r| r.per));
        for count in counted {
            if let ItemCount::Counter(name) = count
                && op.counter_index(name).is_none()
            {
                return Err(format!(
                    "operation `{}` counts undeclared counter `{name}`",
                    op.name
                ));
            }
        }
        if !op
            .throughputs
            .iter()
            .any(|t| t.name == op.headline_throughput)
        {
            return Err(format!(
                "operation `{}` names undeclared headline throughput `{}`",
                op.name, op.headline_throughput
            ));
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
        FieldKind::String | FieldKind::Artifact => value.is_string(),
        FieldKind::StringList => value
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)),
        FieldKind::Samples => value
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_object)),
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
