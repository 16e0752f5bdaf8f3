//! The operation registry: every public operation a worker can time, with its request fields and the
//! metrics it reports, and the task adapters that map a profile's `task_strategy` onto an operation.
//!
//! Extension is by data: a new task that reuses an existing operation is one [`TaskAdapter`] entry; a new
//! public capability is one [`Operation`] variant with its [`OperationDecl`] (one line of
//! `declare_operations!`) plus one timed runner in the runtime crate, whose exhaustive match does not
//! compile without it. [`validate`] checks what the compiler cannot (unique names, defaults of the
//! declared kind, counters that exist) at start-up, before any model is touched.

use serde::Serialize;
use serde_json::Value;

/// The largest value of a request field that binds a build dimension (`request.batch_size`,
/// `request.frames`): one call's inputs beyond it do not fit in a machine's memory, and a bundle built
/// for it could never be loaded.
pub const MOST_BOUND_DIM: i64 = 4096;

/// The type a request field accepts; values from TOML, YAML and `--set` are checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// A whole number (TOML integer, JSON integer).
    Integer,
    /// Any number, integer or not.
    Number,
    /// `true` or `false`.
    Bool,
    /// A text.
    String,
    /// A list of texts.
    StringList,
    /// A manifest-relative file (WAV audio, PNG image), or `synthetic`; its bytes are hashed into the case
    /// identity and it is decoded before the timed region.
    Artifact,
    /// A list of tables, one per sample: the per-item (or, at batch size 1, per-call) inputs of
    /// [`sample_list`]; each table sets some of the operation's own fields.
    Samples,
}

impl FieldKind {
    /// The kind as a phrase for messages, e.g. "an integer" (used in "expected …, got …").
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
    /// The field's name, as written after `request.` in cases, plans and `--set`.
    pub name: &'static str,
    /// The type of value it accepts.
    pub kind: FieldKind,
    /// Default as a JSON literal; `None` when the field must come from the manifest or a case.
    #[serde(skip)]
    pub default: Option<fn() -> Value>,
    /// One line on what the field does, shown by `list operations` and in error messages.
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
    /// The counter's name, by which [`ItemCount::Counter`] and results refer to it.
    pub name: &'static str,
    /// What one base unit is in the metric's unit (e.g. 1e-6 for microseconds counted, seconds reported).
    pub scale: f64,
    /// One line on what is counted and in which base unit.
    pub help: &'static str,
}

/// Wall seconds per counted quantity: seconds/image, seconds/video, and the real-time factor (wall seconds
/// per second of audio; below 1 is faster than real time).
#[derive(Debug, Clone, Serialize)]
pub struct RatioDecl {
    /// The figure's name in results (e.g. `s/image`, `real-time factor`).
    pub name: &'static str,
    /// The unit it is shown in.
    pub unit: &'static str,
    /// The quantity the wall seconds are divided by.
    pub per: ItemCount,
}

/// Most counters one operation may declare (runners record them in a fixed-size array).
pub const MAX_COUNTERS: usize = 4;
/// Most stages one operation may declare.
pub const MAX_STAGES: usize = 3;

/// A throughput metric: items counted per call, divided by the summed wall time of the timed calls.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputDecl {
    /// The metric's name in results (e.g. `output token/s`).
    pub name: &'static str,
    /// The unit it is shown in (e.g. `1/s`).
    pub unit: &'static str,
    /// What one call counts.
    pub count: ItemCount,
}

/// A per-call stage duration the runner reports in each observation (e.g. time to first token).
#[derive(Debug, Clone, Serialize)]
pub struct StageDecl {
    /// The stage's name in observations and results (e.g. `time_to_first_token`).
    pub name: &'static str,
    /// One line on what the stage covers.
    pub help: &'static str,
}

/// A public operation with its request contract and metric declaration.
#[derive(Debug, Clone, Serialize)]
pub struct OperationDecl {
    /// The operation's name on the command line and in documents (e.g. `generate`).
    pub name: &'static str,
    /// One line on what one call does, shown by `list operations`.
    pub summary: &'static str,
    /// The request fields a case may set.
    pub fields: &'static [FieldDecl],
    /// The throughput metrics reported, in the order they are shown.
    pub throughputs: &'static [ThroughputDecl],
    /// The throughput in the task's own unit that summary tables show (token/s, image/s, audio s/s, …);
    /// one of `throughputs`, `request/s` where the operation has nothing better.
    pub headline_throughput: &'static str,
    /// Per-call stage durations the runner reports.
    pub stages: &'static [StageDecl],
    /// Operation-specific counters, in the order runners record them.
    pub counters: &'static [CounterDecl],
    /// Seconds-per-quantity figures (the inverse view of a throughput).
    pub ratios: &'static [RatioDecl],
    /// Whether one call can process a batch (`request.batch_size > 1`); otherwise larger batches are
    /// rejected rather than simulated with sequential calls.
    pub batch_api: bool,
    /// Untimed calls of a default run before timing starts.
    pub default_warmup: u64,
    /// The minimum count of timed calls of a default run.
    pub default_iterations: u64,
    /// The time budget of a default run's timed loop, seconds (`--max-duration`).
    pub default_max_duration_s: f64,
    /// Operations used only by the test suite (crash, hang, no-op) are hidden from user listings.
    pub test_only: bool,
    /// The request field listing the operation's samples and what one sample sets ([`sample_list`]).
    #[serde(skip)]
    pub sample_list: Option<(&'static str, &'static [&'static str])>,
}

impl FieldDecl {
    /// Whether a case must give the field: one without a default is required, except a sample list,
    /// whose absence means the one request is every sample.
    pub fn required(&self) -> bool {
        self.default.is_none() && self.kind != FieldKind::Samples
    }
}

impl OperationDecl {
    /// The declaration of request field `name`.
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
    /// The task strategy a profile names in MODEL.toml.
    pub task_strategy: &'static str,
    /// The operation that runs it.
    pub operation: Operation,
    /// One line on what the task is.
    pub summary: &'static str,
}

fn int(v: i64) -> Value {
    Value::from(v)
}

/// The base of every field declaration below: no default, no bound dimension, any integer.
const FIELD: FieldDecl = FieldDecl {
    name: "",
    kind: FieldKind::Integer,
    default: None,
    help: "",
    binds_dim: None,
    range: None,
};

/// The `samples` list of an operation (see [`sample_list`]), with what one table of it holds.
const fn samples(help: &'static str) -> FieldDecl {
    FieldDecl {
        name: "samples",
        kind: FieldKind::Samples,
        help,
        ..FIELD
    }
}

/// A count of items per second (`1/s`).
const fn per_second(name: &'static str, count: ItemCount) -> ThroughputDecl {
    ThroughputDecl {
        name,
        unit: "1/s",
        count,
    }
}

/// A counter of whole things (detections, masks, frames): one base unit is one thing.
const fn count_of(name: &'static str, help: &'static str) -> CounterDecl {
    CounterDecl {
        name,
        scale: 1.0,
        help,
    }
}

const REQUEST_PER_S: ThroughputDecl = per_second("request/s", ItemCount::Call);
const IMAGE_PER_S: ThroughputDecl = per_second("image/s", ItemCount::Items);

const SEED: FieldDecl = FieldDecl {
    name: "seed",
    default: Some(|| int(0)),
    help: "seed of synthesized inputs",
    ..FIELD
};

const BATCH: FieldDecl = FieldDecl {
    name: "batch_size",
    default: Some(|| int(1)),
    help: "items processed by one call (binds the model's `batch` dimension)",
    binds_dim: Some("batch"),
    range: Some((1, MOST_BOUND_DIM)),
    ..FIELD
};

const IMAGE: FieldDecl = FieldDecl {
    name: "image",
    kind: FieldKind::Artifact,
    default: Some(|| Value::from("synthetic")),
    help: "`synthetic` (seeded noise) or an image file (PNG) relative to MODEL.toml",
    ..FIELD
};

const IMAGE_SAMPLES: FieldDecl = samples(
    "one table per batch item (`image`, `seed`); at batch_size 1 the calls rotate through them",
);
const PROMPT_SAMPLES: FieldDecl = samples(
    "prompts and seeds (`prompt`, `seed`) the calls rotate through (call i uses sample i mod n)",
);
const AUDIO_SAMPLES: FieldDecl =
    samples("recordings (`audio`) the calls rotate through (call i uses sample i mod n)");
const SEED_SAMPLES: FieldDecl =
    samples("one table per batch item (`seed`); at batch_size 1 the calls rotate through them");

/// The request field that lists an operation's samples, and the fields one sample may set (none: the
/// list holds the texts themselves). One entry: every item of every call repeats it (`cloned` when the
/// batch is larger); `batch_size` entries: one per item of the batch (`declared`); at batch size 1,
/// several entries rotate across calls (call i uses entry i mod n).
pub fn sample_list(operation: &str) -> Option<(&'static str, &'static [&'static str])> {
    self::operation(operation).and_then(|op| op.sample_list)
}

const IMAGE_SAMPLE_LIST: Option<(&str, &[&str])> = Some(("samples", &["image", "seed"]));
const SEED_SAMPLE_LIST: Option<(&str, &[&str])> = Some(("samples", &["seed"]));
const PROMPT_SAMPLE_LIST: Option<(&str, &[&str])> = Some(("samples", &["prompt", "seed"]));
const AUDIO_SAMPLE_LIST: Option<(&str, &[&str])> = Some(("samples", &["audio"]));

const AUDIO: FieldDecl = FieldDecl {
    name: "audio",
    kind: FieldKind::Artifact,
    help: "a mono 16-bit PCM WAV file relative to MODEL.toml (decoded before the timed region)",
    ..FIELD
};

const SAMPLE_RATE: FieldDecl = FieldDecl {
    name: "sample_rate",
    default: Some(|| int(16_000)),
    help: "samples per second the model consumes or produces (a WAV input must match it)",
    range: Some((1, 1_000_000)),
    ..FIELD
};

const FRAME_SAMPLES: FieldDecl = FieldDecl {
    name: "frame_samples",
    default: Some(|| int(160)),
    help: "samples per acoustic frame of the model; audio is zero-padded to a whole number of frames",
    range: Some((1, 1 << 20)),
    ..FIELD
};

const STEPS: FieldDecl = FieldDecl {
    name: "steps",
    default: Some(|| int(4)),
    help: "denoising steps per call (one denoiser run each)",
    range: Some((1, 10_000)),
    ..FIELD
};

/// `after_calls` of the test operations that fail on purpose (crash, hang).
const fn after_calls(help: &'static str) -> FieldDecl {
    FieldDecl {
        name: "after_calls",
        default: Some(|| int(3)),
        help,
        ..FIELD
    }
}

const AUDIO_US: CounterDecl = CounterDecl {
    name: "audio_us",
    scale: 1e-6,
    help: "audio consumed or produced by the call, microseconds",
};

const AUDIO_S_PER_S: ThroughputDecl = ThroughputDecl {
    name: "audio s/s",
    unit: "s/s",
    count: ItemCount::Counter("audio_us"),
};

const OUTPUT_TOKEN_PER_S: ThroughputDecl = per_second("output token/s", ItemCount::OutputTokens);

const REAL_TIME_FACTOR: RatioDecl = RatioDecl {
    name: "real-time factor",
    unit: "s/s",
    per: ItemCount::Counter("audio_us"),
};

/// The request of the text generators (`generate`, `generate_vl`); the latter adds its image.
const GENERATE_FIELDS: [FieldDecl; 9] = [
    FieldDecl {
        name: "prompt",
        kind: FieldKind::String,
        help: "prompt text",
        ..FIELD
    },
    FieldDecl {
        name: "max_new_tokens",
        default: Some(|| int(32)),
        help: "tokens generated per call (exactly: end-of-sequence does not stop early)",
        range: Some((1, 1 << 20)),
        ..FIELD
    },
    FieldDecl {
        name: "do_sample",
        kind: FieldKind::Bool,
        default: Some(|| Value::Bool(false)),
        help: "sample instead of greedy argmax",
        ..FIELD
    },
    FieldDecl {
        name: "temperature",
        kind: FieldKind::Number,
        default: Some(|| Value::from(1.0)),
        help: "sampling temperature",
        ..FIELD
    },
    FieldDecl {
        name: "top_k",
        default: Some(|| int(0)),
        help: "sample among the k most likely tokens (0 = all)",
        range: Some((0, 1 << 20)),
        ..FIELD
    },
    FieldDecl {
        name: "seed",
        default: Some(|| int(-1)),
        help: "sampling seed; -1 is the pipeline default used by greedy cases",
        ..FIELD
    },
    // `request.mode`: `completion` tokenizes `prompt` as it is, `chat` renders the case's `messages`
    // with the model's chat template (crate::chat).
    FieldDecl {
        name: crate::chat::MODE_FIELD,
        kind: FieldKind::String,
        default: Some(|| Value::from(crate::chat::MODE_COMPLETION)),
        help: "`completion` (the raw prompt) or `chat` (the case's messages through the model's chat template)",
        ..FIELD
    },
    BATCH,
    PROMPT_SAMPLES,
];

const GENERATE_THROUGHPUTS: [ThroughputDecl; 2] = [REQUEST_PER_S, OUTPUT_TOKEN_PER_S];

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

/// The base of every operation below: one request per call, counted in request/s, no stages, counters
/// or ratios, no batch API, 50 warm-up and at least 500 timed calls within 30 s.
const OPERATION: OperationDecl = OperationDecl {
    name: "",
    summary: "",
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
    test_only: false,
    sample_list: None,
};

/// The base of the operations whose calls take long (generation, audio): 5 warm-up, 50 timed calls.
const LONG_CALLS: OperationDecl = OperationDecl {
    default_warmup: 5,
    default_iterations: 50,
    ..OPERATION
};

/// The base of the diffusion operations (a call is many denoiser runs): 1 warm-up, 5 timed calls.
const DIFFUSION: OperationDecl = OperationDecl {
    default_warmup: 1,
    default_iterations: 5,
    ..OPERATION
};

/// The base of the image operations that take a batch of images (`classify`, `detect`, `segment`).
const IMAGE_BATCH: OperationDecl = OperationDecl {
    throughputs: &[REQUEST_PER_S, IMAGE_PER_S],
    headline_throughput: "image/s",
    batch_api: true,
    sample_list: IMAGE_SAMPLE_LIST,
    ..OPERATION
};

/// The base of the test suite's failing operations (crash, hang, NaN): a few calls are enough.
const FAILING_TEST: OperationDecl = OperationDecl {
    default_warmup: 1,
    default_iterations: 10,
    test_only: true,
    ..OPERATION
};

/// Declares [`Operation`] and its table at once: one line per operation, its variant and its
/// declaration, so a variant without a declaration (or the reverse) cannot be written.
macro_rules! declare_operations {
    ($($(#[doc = $doc:literal])* $variant:ident => $decl:expr,)+) => {
        /// Every operation a worker can time. Its name on the command line and in documents is
        /// [`Operation::name`]; what it takes and reports is [`Operation::decl`]. The runtime's runners
        /// match on it exhaustively, so an operation without a runner does not compile.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Operation {
            $($(#[doc = $doc])* $variant,)+
        }

        impl Operation {
            /// Every operation, in declaration order.
            pub const ALL: &'static [Operation] = &[$(Operation::$variant,)+];
        }

        /// The declarations, in the order of [`Operation`]'s variants.
        static OPERATIONS: &[OperationDecl] = &[$($decl,)+];
    };
}

declare_operations! {
    /// Runs the model once on synthesized inputs of its declared shapes, whatever its task.
    Infer => OperationDecl {
        name: "infer",
        summary: "one forward pass over synthesized inputs of the declared shapes",
        fields: &[SEED],
        ..OPERATION
    },
    /// Classifies a batch of images.
    Classify => OperationDecl {
        name: "classify",
        summary: "classify a batch of images (top-1 over the logits)",
        fields: &[BATCH, SEED, IMAGE, IMAGE_SAMPLES],
        ..IMAGE_BATCH
    },
    /// Embeds a batch of texts into vectors.
    Encode => OperationDecl {
        name: "encode",
        summary: "embed a batch of texts into vectors",
        fields: &[
            BATCH,
            FieldDecl {
                name: "texts",
                kind: FieldKind::StringList,
                help: "texts to embed: one, one per batch item, or (batch_size 1) one per call in rotation",
                ..FIELD
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            per_second("vector/s", ItemCount::Items),
            per_second("element/s", ItemCount::Elements),
        ],
        headline_throughput: "vector/s",
        batch_api: true,
        sample_list: Some(("texts", &[])),
        ..OPERATION
    },
    /// Generates text from a prompt with the KV cache.
    Generate => OperationDecl {
        name: "generate",
        summary: "generate text from a prompt with the KV cache (greedy or seeded sampling)",
        fields: &GENERATE_FIELDS,
        throughputs: &GENERATE_THROUGHPUTS,
        headline_throughput: "output token/s",
        stages: &GENERATE_STAGES,
        sample_list: PROMPT_SAMPLE_LIST,
        ..LONG_CALLS
    },
    /// Generates text from an image and a prompt (vision-language model).
    GenerateVl => OperationDecl {
        name: "generate_vl",
        summary: "vision-language generation: an image and a prompt in, text out through the KV cache",
        fields: &[
            GENERATE_FIELDS[0],
            GENERATE_FIELDS[1],
            GENERATE_FIELDS[2],
            GENERATE_FIELDS[3],
            GENERATE_FIELDS[4],
            GENERATE_FIELDS[5],
            GENERATE_FIELDS[6],
            GENERATE_FIELDS[7],
            GENERATE_FIELDS[8],
            IMAGE,
            FieldDecl {
                name: "image_size",
                default: Some(|| int(32)),
                help: "side of the square image the vision encoder sees (cut into its patches)",
                range: Some((1, 16_384)),
                ..FIELD
            },
        ],
        throughputs: &GENERATE_THROUGHPUTS,
        headline_throughput: "output token/s",
        stages: &GENERATE_STAGES,
        sample_list: PROMPT_SAMPLE_LIST,
        ..LONG_CALLS
    },
    /// Detects objects in a batch of images.
    Detect => OperationDecl {
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
                ..FIELD
            },
        ],
        counters: &[count_of(
            "detections",
            "boxes whose best class score passes request.score_threshold",
        )],
        ..IMAGE_BATCH
    },
    /// Semantic segmentation of a batch of images.
    Segment => OperationDecl {
        name: "segment",
        summary: "semantic segmentation of a batch of images (one mask per class, one label per pixel)",
        fields: &[BATCH, SEED, IMAGE, IMAGE_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            IMAGE_PER_S,
            per_second("mask/s", ItemCount::Counter("masks")),
            per_second("mask pixel/s", ItemCount::Counter("mask_pixels")),
        ],
        counters: &[
            count_of("masks", "class masks produced (images x classes)"),
            count_of(
                "mask_pixels",
                "pixels of all masks produced (masks x height x width)",
            ),
        ],
        ..IMAGE_BATCH
    },
    /// Scores documents against a query with a cross-encoder.
    Rerank => OperationDecl {
        name: "rerank",
        summary: "score documents against a query with a cross-encoder (one batch call)",
        fields: &[
            BATCH,
            FieldDecl {
                name: "query",
                kind: FieldKind::String,
                help: "the query every document is scored against",
                ..FIELD
            },
            FieldDecl {
                name: "documents",
                kind: FieldKind::StringList,
                help: "documents to score: one, one per batch item, or (batch_size 1) one per call in rotation",
                ..FIELD
            },
        ],
        throughputs: &[REQUEST_PER_S, per_second("document/s", ItemCount::Items)],
        headline_throughput: "document/s",
        batch_api: true,
        sample_list: Some(("documents", &[])),
        ..OPERATION
    },
    /// Speech to text from a WAV file, offline or in streaming chunks.
    Transcribe => OperationDecl {
        name: "transcribe",
        summary: "speech to text: CTC acoustic model over a WAV file, offline or in streaming chunks",
        fields: &[
            AUDIO,
            AUDIO_SAMPLES,
            SAMPLE_RATE,
            FRAME_SAMPLES,
            FieldDecl {
                name: "chunk_ms",
                default: Some(|| int(0)),
                help: "streaming chunk length in milliseconds; 0 transcribes the whole file in one pass",
                range: Some((0, 3_600_000)),
                ..FIELD
            },
        ],
        throughputs: &[REQUEST_PER_S, AUDIO_S_PER_S, OUTPUT_TOKEN_PER_S],
        headline_throughput: "audio s/s",
        stages: &[StageDecl {
            name: "first_partial",
            help: "call start to the first partial transcript (the whole call when offline)",
        }],
        counters: &[AUDIO_US],
        ratios: &[REAL_TIME_FACTOR],
        sample_list: AUDIO_SAMPLE_LIST,
        ..LONG_CALLS
    },
    /// Generates a waveform from seeded latent frames with a vocoder.
    GenerateAudio => OperationDecl {
        name: "generate_audio",
        summary: "audio generation: a vocoder turns seeded latent frames into a waveform",
        fields: &[
            SEED,
            FieldDecl {
                name: "frames",
                default: Some(|| int(64)),
                help: "latent frames per call (the model's hop length of samples each)",
                range: Some((1, 1 << 20)),
                ..FIELD
            },
            SAMPLE_RATE,
        ],
        throughputs: &[
            REQUEST_PER_S,
            AUDIO_S_PER_S,
            per_second("sample/s", ItemCount::Counter("samples")),
        ],
        headline_throughput: "audio s/s",
        counters: &[AUDIO_US, count_of("samples", "audio samples generated")],
        ratios: &[REAL_TIME_FACTOR],
        ..LONG_CALLS
    },
    /// Speech to speech: a WAV file in, a converted waveform out.
    ConvertSpeech => OperationDecl {
        name: "convert_speech",
        summary: "speech to speech: a WAV file in, a converted waveform out",
        fields: &[AUDIO, AUDIO_SAMPLES, SAMPLE_RATE, FRAME_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            ThroughputDecl {
                name: "consumed audio s/s",
                ..AUDIO_S_PER_S
            },
            ThroughputDecl {
                name: "generated audio s/s",
                unit: "s/s",
                count: ItemCount::Counter("generated_audio_us"),
            },
        ],
        headline_throughput: "consumed audio s/s",
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
            ..REAL_TIME_FACTOR
        }],
        sample_list: AUDIO_SAMPLE_LIST,
        ..LONG_CALLS
    },
    /// Image diffusion: a denoiser looped over `request.steps` from seeded noise.
    GenerateImage => OperationDecl {
        name: "generate_image",
        summary: "image diffusion: a denoiser looped over request.steps from seeded noise",
        fields: &[BATCH, SEED, STEPS, SEED_SAMPLES],
        throughputs: &[REQUEST_PER_S, IMAGE_PER_S],
        headline_throughput: "image/s",
        ratios: &[RatioDecl {
            name: "s/image",
            unit: "s",
            per: ItemCount::Items,
        }],
        batch_api: true,
        sample_list: SEED_SAMPLE_LIST,
        ..DIFFUSION
    },
    /// Video diffusion: a denoiser looped over `request.steps` on all frames of a clip.
    GenerateVideo => OperationDecl {
        name: "generate_video",
        summary: "video diffusion: a denoiser looped over request.steps on all frames of a clip",
        fields: &[
            SEED,
            STEPS,
            FieldDecl {
                name: "frames",
                default: Some(|| int(8)),
                help: "frames per video (binds the model's `batch` dimension: all frames denoise together)",
                binds_dim: Some("batch"),
                range: Some((1, MOST_BOUND_DIM)),
                ..FIELD
            },
        ],
        throughputs: &[
            REQUEST_PER_S,
            per_second("video/s", ItemCount::Items),
            per_second("frame/s", ItemCount::Counter("frames")),
        ],
        headline_throughput: "video/s",
        counters: &[count_of("frames", "video frames generated")],
        ratios: &[RatioDecl {
            name: "s/video",
            unit: "s",
            per: ItemCount::Items,
        }],
        ..DIFFUSION
    },
    /// Neural operator or time series: history windows in, forecasts out.
    Forecast => OperationDecl {
        name: "forecast",
        summary: "neural operator / time series: a batch of history windows in, forecasts out",
        fields: &[BATCH, SEED, SEED_SAMPLES],
        throughputs: &[
            REQUEST_PER_S,
            per_second("window/s", ItemCount::Items),
            per_second("forecast element/s", ItemCount::Elements),
        ],
        headline_throughput: "window/s",
        batch_api: true,
        sample_list: SEED_SAMPLE_LIST,
        ..OPERATION
    },
    /// Test only: does nothing, to measure the harness itself.
    TestNoop => OperationDecl {
        name: "test_noop",
        summary: "does nothing (measures the harness itself)",
        test_only: true,
        ..OPERATION
    },
    /// Test only: sleeps for `request.sleep_us`, a known delay.
    TestSleep => OperationDecl {
        name: "test_sleep",
        summary: "sleeps for request.sleep_us (a known delay)",
        fields: &[
            FieldDecl {
                name: "sleep_us",
                default: Some(|| int(100)),
                help: "microseconds to sleep per call",
                ..FIELD
            },
            FieldDecl {
                name: "swing_pct",
                default: Some(|| int(0)),
                help: "percent the sleep swings by: longer in a worker whose first call has an odd \
                       number, shorter in one whose first is even (rounds that disagree on purpose)",
                ..FIELD
            },
        ],
        test_only: true,
        ..LONG_CALLS
    },
    /// Test only: aborts the worker after `request.after_calls` calls.
    TestCrash => OperationDecl {
        name: "test_crash",
        summary: "aborts the worker process after request.after_calls calls",
        fields: &[after_calls("calls before the abort")],
        ..FAILING_TEST
    },
    /// Test only: blocks forever after `request.after_calls` calls.
    TestHang => OperationDecl {
        name: "test_hang",
        summary: "blocks forever after request.after_calls calls",
        fields: &[after_calls("calls before hanging")],
        ..FAILING_TEST
    },
    /// Test only: returns a non-finite output on every call.
    TestNan => OperationDecl {
        name: "test_nan",
        summary: "returns a non-finite output on every call",
        ..FAILING_TEST
    },
}

impl Operation {
    /// What the operation takes and reports.
    pub fn decl(self) -> &'static OperationDecl {
        // The table holds one declaration per variant, in variant order (the macro writes both).
        &OPERATIONS[self as usize]
    }

    /// The operation's name on the command line and in documents (`infer`, `generate`, …).
    pub fn name(self) -> &'static str {
        self.decl().name
    }

    /// The operation named `name`.
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.iter().copied().find(|op| op.name() == name)
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Operation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Declares a task adapter: the task strategy, the operation it runs, and what the model does.
const fn adapt(
    task_strategy: &'static str,
    operation: Operation,
    summary: &'static str,
) -> TaskAdapter {
    TaskAdapter {
        task_strategy,
        operation,
        summary,
    }
}

static ADAPTERS: &[TaskAdapter] = &[
    adapt("onnx_inference", Operation::Infer, "any ONNX model"),
    adapt(
        "image_classification",
        Operation::Classify,
        "image in, class logits out",
    ),
    adapt(
        "vision_language_generation",
        Operation::GenerateVl,
        "image + prompt in, text out (image encoder in front of a KV-cache decoder)",
    ),
    adapt(
        "object_detection",
        Operation::Detect,
        "image in, boxes with class scores out",
    ),
    adapt(
        "semantic_segmentation",
        Operation::Segment,
        "image in, per-class mask logits out",
    ),
    adapt(
        "reranking",
        Operation::Rerank,
        "query and documents in, one relevance score per document",
    ),
    adapt(
        "speech_transcription",
        Operation::Transcribe,
        "WAV audio in, CTC token logits out, greedy CTC decoding",
    ),
    adapt(
        "audio_generation",
        Operation::GenerateAudio,
        "latent frames in, waveform out (vocoder)",
    ),
    adapt(
        "speech_to_speech",
        Operation::ConvertSpeech,
        "WAV audio in, converted waveform out",
    ),
    adapt(
        "image_diffusion",
        Operation::GenerateImage,
        "noise predictor looped over denoising steps",
    ),
    adapt(
        "video_diffusion",
        Operation::GenerateVideo,
        "noise predictor over all frames of a clip, looped over steps",
    ),
    adapt(
        "time_series_forecasting",
        Operation::Forecast,
        "history window in, forecast horizon out",
    ),
    adapt(
        "neural_operator",
        Operation::Forecast,
        "sampled input field in, predicted field out",
    ),
    adapt(
        "sentence_embedding",
        Operation::Encode,
        "texts in, one vector per text",
    ),
    adapt(
        "text_generation",
        Operation::Generate,
        "decoder-only language model with a KV cache",
    ),
    adapt("test_noop", Operation::TestNoop, "harness overhead"),
    adapt("test_sleep", Operation::TestSleep, "known delay"),
    adapt("test_crash", Operation::TestCrash, "worker crash"),
    adapt("test_hang", Operation::TestHang, "worker hang"),
    adapt("test_nan", Operation::TestNan, "non-finite output"),
];

/// Every operation's declaration, in the order of [`Operation::ALL`].
pub fn operations() -> &'static [OperationDecl] {
    OPERATIONS
}

/// Every task adapter: the task strategies MODEL.toml may name and the operation each runs.
pub fn adapters() -> &'static [TaskAdapter] {
    ADAPTERS
}

/// The declaration of the operation named `name`.
pub fn operation(name: &str) -> Option<&'static OperationDecl> {
    Operation::from_name(name).map(Operation::decl)
}

pub(crate) fn adapter(task_strategy: &str) -> Option<&'static TaskAdapter> {
    ADAPTERS.iter().find(|a| a.task_strategy == task_strategy)
}

/// A task strategy no adapter maps; `known` lists the strategies a user may name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown task_strategy `{task_strategy}` (known: {})", known.join(", "))]
pub struct UnknownTask {
    /// The task strategy as written in MODEL.toml.
    pub task_strategy: String,
    /// The task strategies a user may name (test-only ones left out).
    pub known: Vec<&'static str>,
}

/// A value that is not of the kind its field declares.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("expected {}, got {got}", expected.describe())]
pub struct KindMismatch {
    /// The kind the field declares.
    pub expected: FieldKind,
    /// The value given.
    pub got: Value,
}

/// What [`validate`] finds wrong with the tables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// Two operations with the same name.
    #[error("operation `{0}` is declared twice")]
    DuplicateOperation(&'static str),
    /// An operation that declares the same field twice.
    #[error("operation `{operation}` declares field `{field}` twice")]
    DuplicateField {
        /// The operation's name.
        operation: &'static str,
        /// The repeated field.
        field: &'static str,
    },
    /// A field default whose JSON kind is not the field's declared kind.
    #[error("default of `{operation}.{field}` is not {}", kind.describe())]
    DefaultOfOtherKind {
        /// The operation's name.
        operation: &'static str,
        /// The field's name.
        field: &'static str,
        /// The field's declared kind.
        kind: FieldKind,
    },
    /// An operation with more than [`MAX_COUNTERS`] counters or [`MAX_STAGES`] stages.
    #[error("operation `{0}` declares more than {MAX_COUNTERS} counters or {MAX_STAGES} stages")]
    TooManyCountersOrStages(&'static str),
    /// A throughput that counts a counter the operation does not declare.
    #[error("operation `{operation}` counts undeclared counter `{counter}`")]
    UndeclaredCounter {
        /// The operation's name.
        operation: &'static str,
        /// The counter's name.
        counter: &'static str,
    },
    /// A headline throughput that is not one of the operation's throughputs.
    #[error("operation `{operation}` names undeclared headline throughput `{headline}`")]
    UndeclaredHeadline {
        /// The operation's name.
        operation: &'static str,
        /// The headline's name.
        headline: &'static str,
    },
    /// An operation whose default iteration count is 0.
    #[error("operation `{0}` has zero default iterations")]
    ZeroIterations(&'static str),
    /// Two adapters for the same task strategy.
    #[error("task_strategy `{0}` is mapped twice")]
    DuplicateTask(&'static str),
}

/// The operation a task strategy runs, or an error listing the known strategies.
pub fn operation_for_task(task_strategy: &str) -> Result<&'static OperationDecl, UnknownTask> {
    let adapter = adapter(task_strategy).ok_or_else(|| UnknownTask {
        task_strategy: task_strategy.to_string(),
        known: ADAPTERS
            .iter()
            .filter(|a| !a.task_strategy.starts_with("test_"))
            .map(|a| a.task_strategy)
            .collect(),
    })?;
    Ok(adapter.operation.decl())
}

/// Checks what the types cannot: unique names, field defaults of the declared kind, counted counters
/// declared, one adapter per task. Called at start-up and by the tests.
pub fn validate() -> Result<(), TableError> {
    let mut names = std::collections::BTreeSet::new();
    for op in OPERATIONS {
        if !names.insert(op.name) {
            return Err(TableError::DuplicateOperation(op.name));
        }
        let mut fields = std::collections::BTreeSet::new();
        for f in op.fields {
            if !fields.insert(f.name) {
                return Err(TableError::DuplicateField {
                    operation: op.name,
                    field: f.name,
                });
            }
            if let Some(default) = f.default
                && check_kind(f.kind, &default()).is_err()
            {
                return Err(TableError::DefaultOfOtherKind {
                    operation: op.name,
                    field: f.name,
                    kind: f.kind,
                });
            }
        }
        if op.counters.len() > MAX_COUNTERS || op.stages.len() > MAX_STAGES {
            return Err(TableError::TooManyCountersOrStages(op.name));
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
                return Err(TableError::UndeclaredCounter {
                    operation: op.name,
                    counter: name,
                });
            }
        }
        if !op
            .throughputs
            .iter()
            .any(|t| t.name == op.headline_throughput)
        {
            return Err(TableError::UndeclaredHeadline {
                operation: op.name,
                headline: op.headline_throughput,
            });
        }
        if op.default_iterations == 0 {
            return Err(TableError::ZeroIterations(op.name));
        }
    }
    let mut tasks = std::collections::BTreeSet::new();
    for a in ADAPTERS {
        if !tasks.insert(a.task_strategy) {
            return Err(TableError::DuplicateTask(a.task_strategy));
        }
    }
    Ok(())
}

/// Checks (and for integral numbers, normalizes) a value against a field kind.
pub fn check_kind(kind: FieldKind, value: &Value) -> Result<Value, KindMismatch> {
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
        Err(KindMismatch {
            expected: kind,
            got: value.clone(),
        })
    }
}

/// Whether the operation's sample list `list` is given and every one of its tables sets `field` (a
/// required request field is then not needed at the top level).
pub(crate) fn every_listed_sample_sets(
    op: &OperationDecl,
    list: Option<&Value>,
    field: &str,
) -> bool {
    let Some((_, keys)) = sample_list(op.name) else {
        return false;
    };
    keys.contains(&field)
        && list.and_then(Value::as_array).is_some_and(|items| {
            !items.is_empty() && items.iter().all(|item| item.get(field).is_some())
        })
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
                a.operation.name()
            );
        }
        let err = operation_for_task("telepathy")
            .expect_err("unknown")
            .to_string();
        assert!(
            err.contains("text_generation") && !err.contains("test_crash"),
            "{err}"
        );
    }

    #[test]
    fn every_variant_has_its_own_declaration_and_name() {
        assert_eq!(Operation::ALL.len(), operations().len());
        for (i, op) in Operation::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i);
            assert!(std::ptr::eq(op.decl(), &operations()[i]));
            assert_eq!(Operation::from_name(op.name()), Some(*op));
            assert_eq!(operation(op.name()).map(|d| d.name), Some(op.name()));
        }
        assert_eq!(Operation::from_name("telepathy"), None);
        assert_eq!(Operation::GenerateVl.to_string(), "generate_vl");
        assert_eq!(
            serde_json::to_value(Operation::ConvertSpeech).expect("json"),
            Value::from("convert_speech")
        );
    }

    #[test]
    fn sample_lists_are_declared_with_their_operation() {
        let none: &[&str] = &[];
        assert_eq!(sample_list("encode"), Some(("texts", none)));
        assert_eq!(sample_list("rerank"), Some(("documents", none)));
        for op in ["classify", "detect", "segment"] {
            assert_eq!(
                sample_list(op),
                Some(("samples", &["image", "seed"][..])),
                "{op}"
            );
        }
        for op in ["generate_image", "forecast"] {
            assert_eq!(sample_list(op), Some(("samples", &["seed"][..])), "{op}");
        }
        for op in ["generate", "generate_vl"] {
            assert_eq!(
                sample_list(op),
                Some(("samples", &["prompt", "seed"][..])),
                "{op}"
            );
        }
        for op in ["transcribe", "convert_speech"] {
            assert_eq!(sample_list(op), Some(("samples", &["audio"][..])), "{op}");
        }
        for op in ["infer", "generate_audio", "generate_video", "test_noop"] {
            assert_eq!(sample_list(op), None, "{op}");
        }
    }

    #[test]
    fn kinds_reject_mismatched_values() {
        assert!(check_kind(FieldKind::Integer, &Value::from(3)).is_ok());
        assert!(check_kind(FieldKind::Integer, &Value::from(3.5)).is_err());
        assert_eq!(
            check_kind(FieldKind::StringList, &serde_json::json!(["a", 1]))
                .expect_err("mixed list")
                .to_string(),
            r#"expected a list of strings, got ["a",1]"#
        );
        assert_eq!(
            TableError::DefaultOfOtherKind {
                operation: "infer",
                field: "seed",
                kind: FieldKind::Integer
            }
            .to_string(),
            "default of `infer.seed` is not an integer"
        );
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
