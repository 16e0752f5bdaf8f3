//! Model identity (name, components) and model category, each with confidence and evidence.
//!
//! A name is kept only at medium confidence or better; a category is claimed only on strong
//! evidence (a Hugging Face config, or several independent markers in the layer names).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::classify::Family;

/// How sure a guess is (a model name, a category, an issue); ordered `Low < Medium < High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// A hint only: a model name at this level is listed as a candidate but not chosen.
    Low,
    /// Indirect evidence that points one way (for a name: the folder, the layer names' scope,
    /// agreeing labels).
    Medium,
    /// Direct evidence (for a name: `--model-name` or a config file).
    High,
}

impl Confidence {
    /// `low`, `medium` or `high`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// One candidate name and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameGuess {
    /// The candidate name, cleaned.
    pub name: String,
    /// How much its source counts.
    pub confidence: Confidence,
    /// Where it was found (a config key and file, the folder name, the labels, …).
    pub evidence: String,
}

/// Which model the analyzed exports belong to (`model` in the analysis document).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelIdentity {
    /// `None` when no candidate reached medium confidence. A `--model-name` is kept as typed.
    pub name: Option<String>,
    /// `name` normalised to lowercase words joined by `-` (`BERT Base` → `bert-base`): what folder
    /// names and grouping use.
    pub id: Option<String>,
    /// Confidence of the chosen name; `low` when none was chosen.
    pub confidence: Confidence,
    /// Where the chosen name was found (every source that agrees).
    pub evidence: Vec<String>,
    /// Every candidate considered, so a reader can see why a name was or was not chosen.
    pub candidates: Vec<NameGuess>,
    /// Components of a model suite (encoder, unet, vae, …) named by the folder or files.
    pub components: Vec<String>,
}

/// Tokens that never name a model: file-role words, precisions, GPUs, tool names.
const STOPWORDS: &[&str] = &[
    "analysis",
    "analyze",
    "aot",
    "backend",
    "backends",
    "benchmark",
    "benchmarks",
    "build",
    "builds",
    "cache",
    "case",
    "checkpoint",
    "ckpt",
    "component",
    "components",
    "data",
    "dataset",
    "default",
    "detailed",
    "dev",
    "download",
    "downloads",
    "dynamic",
    "engine",
    "engines",
    "example",
    "examples",
    "export",
    "exportlayerinfo",
    "exportprofile",
    "exporttimes",
    "exports",
    "fixture",
    "fixtures",
    "full",
    "graph",
    "home",
    "input",
    "inputs",
    "json",
    "layer",
    "layerinfo",
    "layers",
    "log",
    "logs",
    "main",
    "metadata",
    "model",
    "models",
    "names",
    "namesonly",
    "no",
    "none",
    "onnx",
    "only",
    "other",
    "out",
    "output",
    "outputs",
    "perf",
    "performance",
    "plan",
    "plans",
    "profile",
    "profiles",
    "profiling",
    "pt",
    "ptq",
    "qat",
    "report",
    "reports",
    "result",
    "results",
    "root",
    "run",
    "runs",
    "sample",
    "samples",
    "shared",
    "static",
    "temp",
    "tensorrt",
    "test",
    "tests",
    "tf",
    "timing",
    "times",
    "tmp",
    "torch",
    "trex",
    "trt",
    "trtexec",
    "users",
    "verbose",
    "work",
    "orin",
    "jetson",
    "titanrtx",
    "titan",
    "ada",
    "ampere",
    "hopper",
    "blackwell",
    "turing",
    "volta",
    "after",
    "against",
    "baseline",
    "before",
    "candidate",
    "candidates",
    "compare",
    "compared",
    "comparison",
    "comparisons",
    "variant",
    "variants",
    "versus",
    "vs",
    "sweep",
    "experiment",
    "experiments",
    "latest",
    "new",
    "old",
];

const COMPONENTS: &[&str] = &[
    "encoder",
    "decoder",
    "text_encoder",
    "unet",
    "vae",
    "vae_encoder",
    "vae_decoder",
    "controlnet",
    "transformer",
    "denoiser",
    "prior",
    "refiner",
    "image_encoder",
    "clip",
    "t5",
];

const CONFIG_FILES: &[&str] = &[
    "config.json",
    "model_index.json",
    "tokenizer_config.json",
    "preprocessor_config.json",
    "generation_config.json",
];
const CONFIG_KEYS: &[&str] = &[
    "_name_or_path",
    "name_or_path",
    "model_name",
    "model_id",
    "model",
    "pretrained_model_name_or_path",
    "base_model_name_or_path",
];

/// Is this token noise (precision, GPU, version, batch size) rather than part of a name?
fn is_noise(token: &str) -> bool {
    if STOPWORDS.contains(&token) || token.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let split = token
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(token.len());
    let (alpha, rest) = token.split_at(split);
    let digits_then_any = !rest.is_empty() && rest.starts_with(|c: char| c.is_ascii_digit());
    match alpha {
        "fp" | "bf" | "int" | "uint" | "sm" | "trt" | "cc" | "bs" | "v" | "cuda" | "cu" => {
            digits_then_any
        }
        // GPU names (a100, h100, l40s, t4); "t5" is a model.
        "a" | "h" | "l" | "t" | "gh" | "gb" => digits_then_any && rest.len() <= 4 && token != "t5",
        "rtx" | "gtx" | "titan" | "quadro" | "tesla" | "orin" => true,
        _ => false,
    }
}

fn tokens(value: &str) -> Vec<String> {
    value
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_lowercase())
        .collect()
}

/// The name-bearing part of a free-form string (`resnet18-pt-a100-fp16` → `resnet18`), or `None`.
pub fn clean_name(value: &str) -> Option<String> {
    // A path-like value names the model in its last meaningful segment.
    for segment in value.rsplit(['/', '\\']) {
        let kept: Vec<String> = tokens(segment)
            .into_iter()
            .filter(|t| !is_noise(t) && !COMPONENTS.contains(&t.as_str()))
            .collect();
        let has_letters = kept.iter().any(|t| t.chars().any(|c| c.is_alphabetic()));
        let long_enough = kept.len() > 1
            || kept.first().is_some_and(|t| {
                t.chars().count() >= 3 || ["t5", "vit", "gpt"].contains(&t.as_str())
            });
        if has_letters && long_enough {
            return Some(kept.into_iter().take(8).collect::<Vec<_>>().join("-"));
        }
    }
    None
}

/// Component words found in a folder or file name.
pub fn components_in(value: &str) -> Vec<String> {
    let lower = value.to_lowercase();
    let mut found = Vec::new();
    for c in COMPONENTS {
        let spaced = c.replace('_', "");
        let hit = tokens(&lower).iter().any(|t| t == c || *t == spaced)
            || (c.contains('_') && lower.contains(c));
        if hit && !found.iter().any(|f: &String| f == c) {
            found.push((*c).to_owned());
        }
    }
    // "vae_encoder" also contains "vae" and "encoder": keep the most specific.
    let specific: Vec<String> = found.iter().filter(|c| c.contains('_')).cloned().collect();
    found.retain(|c| {
        !specific
            .iter()
            .any(|s| s != c && s.split('_').any(|p| p == c))
    });
    found
}

/// Configuration files next to the inputs that may name the model.
pub fn config_paths(folder: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![folder.to_owned(), folder.join("model_hub")];
    if let Ok(entries) = std::fs::read_dir(folder) {
        let mut subdirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        dirs.extend(subdirs);
    }
    for dir in dirs {
        for f in CONFIG_FILES {
            let p = dir.join(f);
            if p.is_file() && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// A small JSON config file, or `None` when absent, too large or not an object.
pub fn load_config(path: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > 4 * 1024 * 1024 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text).ok()? {
        serde_json::Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Infers the model identity from an explicit name, config files, the folder name and input labels.
pub fn infer(explicit: Option<&str>, folder: Option<&Path>, labels: &[String]) -> ModelIdentity {
    infer_with_prefix(explicit, folder, labels, None)
}

/// A model name that the layer names carry: the first part of their `/` paths.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerPrefix {
    /// The common top scope, cleaned as a model name.
    pub name: String,
    /// The sentence that says so, for the identity's evidence.
    pub evidence: String,
}

/// Words a graph's top scope is often called that name no model.
const GENERIC_SCOPES: [&str; 12] = [
    "model",
    "module",
    "network",
    "net",
    "graph",
    "main",
    "root",
    "sequential",
    "backbone",
    "features",
    "layers",
    "body",
];

/// The first `/` part that at least 90 % of every build's layer names start with (`resnet50/…` in
/// a TensorFlow export), reformat copies aside; `None` when the builds disagree, when the names
/// have no common top scope, or when it is a generic word (`model`, `module`, …).
pub fn layer_name_prefix<'a, B, N>(builds: B) -> Option<LayerPrefix>
where
    B: Iterator<Item = N>,
    N: Iterator<Item = &'a str>,
{
    let mut agreed: Option<String> = None;
    let (mut builds_seen, mut total_names) = (0usize, 0usize);
    for names in builds {
        let mut heads: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let mut total = 0usize;
        for name in names {
            if name.is_empty() || name.starts_with("Reformatting CopyNode for ") {
                continue;
            }
            total += 1;
            if let Some((head, _)) = name.trim_start_matches('/').split_once('/')
                && !head.trim().is_empty()
            {
                *heads.entry(head).or_default() += 1;
            }
        }
        let (head, count) = heads
            .into_iter()
            .max_by_key(|(h, c)| (*c, std::cmp::Reverse(*h)))?;
        if total < 2 || (count as f64) < 0.9 * total as f64 {
            return None;
        }
        match &agreed {
            Some(a) if a != head => return None,
            Some(_) => {}
            None => agreed = Some(head.to_owned()),
        }
        builds_seen += 1;
        total_names += total;
    }
    let head = agreed?;
    if GENERIC_SCOPES.contains(&head.to_lowercase().as_str()) {
        return None;
    }
    let name = clean_name(&head)?;
    Some(LayerPrefix {
        evidence: format!(
            "the layer names start with `{head}/` ({total_names} names in {builds_seen} build(s))"
        ),
        name,
    })
}

/// [`infer`] with a name read from the layer names, which ranks above the folder name (a
/// comparison folder is often named for the comparison, not the model).
pub fn infer_with_prefix(
    explicit: Option<&str>,
    folder: Option<&Path>,
    labels: &[String],
    prefix: Option<&LayerPrefix>,
) -> ModelIdentity {
    let mut candidates = Vec::new();
    if let Some(raw) = explicit {
        // The user's word is kept as typed (only surrounding space trimmed, no stopword filtering).
        let name = raw.trim().to_owned();
        if !tokens(&name).is_empty() {
            candidates.push(NameGuess {
                name,
                confidence: Confidence::High,
                evidence: "explicit --model-name".to_owned(),
            });
        }
    }
    if let Some(folder) = folder {
        for path in config_paths(folder) {
            let Some(config) = load_config(&path) else {
                continue;
            };
            let file = path
                .strip_prefix(folder)
                .unwrap_or(&path)
                .display()
                .to_string();
            if let Some((key, name)) = CONFIG_KEYS.iter().find_map(|k| {
                config
                    .get(*k)
                    .and_then(|v| v.as_str())
                    .and_then(clean_name)
                    .map(|n| (k, n))
            }) {
                candidates.push(NameGuess {
                    name,
                    confidence: Confidence::High,
                    evidence: format!("config `{file}` field `{key}`"),
                });
            }
        }
    }
    if let Some(p) = prefix {
        candidates.push(NameGuess {
            name: p.name.clone(),
            confidence: Confidence::Medium,
            evidence: p.evidence.clone(),
        });
    }
    if let Some(folder) = folder {
        let parts: Vec<String> = folder
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        // A component folder (…/sdxl/unet) names the model in its parent.
        for part in parts.iter().rev().take(2) {
            if let Some(name) = clean_name(part) {
                candidates.push(NameGuess {
                    name,
                    confidence: Confidence::Medium,
                    evidence: format!("folder name `{part}`"),
                });
                break;
            }
            if components_in(part).is_empty() {
                break;
            }
        }
    }
    let label_guesses: Vec<(String, &String)> = labels
        .iter()
        .filter_map(|l| clean_name(l).map(|n| (n, l)))
        .collect();
    let distinct: std::collections::BTreeSet<&String> =
        label_guesses.iter().map(|(n, _)| n).collect();
    let label_confidence = if distinct.len() == 1 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    for (name, label) in &label_guesses {
        candidates.push(NameGuess {
            name: name.clone(),
            confidence: label_confidence,
            evidence: format!("input file label `{label}`"),
        });
    }

    let best = candidates
        .iter()
        .max_by_key(|c| c.confidence)
        .filter(|c| c.confidence >= Confidence::Medium);
    // Among equally confident candidates the earlier source wins (explicit, config, layer names,
    // folder, files).
    let best = best.and_then(|b| candidates.iter().find(|c| c.confidence == b.confidence));
    let (name, confidence, evidence) = match best {
        Some(b) => (
            Some(b.name.clone()),
            b.confidence,
            candidates
                .iter()
                .filter(|c| c.name == b.name)
                .map(|c| c.evidence.clone())
                .collect(),
        ),
        None => (None, Confidence::Low, Vec::new()),
    };

    let mut components = Vec::new();
    let mut sources: Vec<&str> = labels.iter().map(String::as_str).collect();
    let folder_name = folder
        .and_then(|f| f.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    if let Some(f) = &folder_name {
        sources.insert(0, f);
    }
    for s in sources {
        for c in components_in(s) {
            if !components.contains(&c) {
                components.push(c);
            }
        }
    }
    let id = name.as_deref().map(|n| tokens(n).join("-"));
    ModelIdentity {
        name,
        id,
        confidence,
        evidence,
        candidates,
        components,
    }
}

/// The seed's starter category list.
pub mod category {
    /// BERT-like encoders and sentence-embedding models.
    pub const ENCODER: &str = "Transformer encoder / sentence embedding";
    /// GPT-like decoders and LLMs (KV cache, `lm_head`).
    pub const DECODER: &str = "Transformer decoder / LLM";
    /// Vision transformers (ViT, DeiT, Swin, …).
    pub const VIT: &str = "Vision transformer";
    /// Convolutional vision models (ResNet, MobileNet, …).
    pub const CNN: &str = "CNN / convolutional vision model";
    /// Diffusion U-Nets and ControlNets.
    pub const DIFFUSION: &str = "Diffusion / U-Net style model";
    /// Recommendation and ranking models (embeddings, interactions).
    pub const RECOMMENDER: &str = "Recommender / ranking model";
    /// Classical ML models and feature pipelines.
    pub const CLASSICAL: &str = "Classical ML or feature pipeline";
    /// No category claimed: the evidence is not strong enough.
    pub const UNKNOWN: &str = "Unknown DL model";
}

/// The model category of a backend, with why (flattened into the backend's `model`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryGuess {
    /// One of the [`category`] names.
    pub category: &'static str,
    /// How sure the guess is.
    pub confidence: Confidence,
    /// The facts behind it (a config `model_type`, marker words, layer counts, time shares).
    pub evidence: Vec<String>,
}

/// What the category decision looks at, gathered in one pass over the layers.
#[derive(Debug, Default)]
pub(crate) struct CategorySignals {
    pub layers: usize,
    pub conv_layers: usize,
    pub pooling_layers: usize,
    pub gemm_layers: usize,
    pub conv_time_share: Option<f64>,
    pub attention_layers: usize,
    pub names_only: bool,
    /// Distinct marker words seen in layer names, metadata or bindings, per category.
    pub markers: std::collections::BTreeMap<&'static str, std::collections::BTreeSet<&'static str>>,
    pub config_model_type: Option<String>,
    pub config_path: Option<String>,
}

const MARKERS: &[(&str, &[&str])] = &[
    (
        "diffusion",
        &[
            "input_blocks",
            "output_blocks",
            "down_blocks",
            "up_blocks",
            "mid_block",
            "middle_block",
            "time_embed",
            "timestep",
            "unet",
            "controlnet",
            "zero_conv",
        ],
    ),
    (
        "decoder",
        &[
            "past_key_values",
            "present.",
            "lm_head",
            "kv_cache",
            "rotary",
            "causal_mask",
            "rope",
        ],
    ),
    (
        "vit",
        &[
            "patch_embed",
            "pixel_values",
            "cls_token",
            "patch_embeddings",
            "vit.",
        ],
    ),
    (
        "encoder",
        &[
            "input_ids",
            "token_type_ids",
            "attention_mask",
            "encoder.layer.",
            "word_embeddings",
        ],
    ),
    (
        "recommender",
        &[
            "embedding_bag",
            "dlrm",
            "interaction",
            "sparse_features",
            "dense_features",
            "categorical",
        ],
    ),
    (
        "classical",
        &[
            "treeensemble",
            "linearclassifier",
            "linearregressor",
            "zipmap",
            "svmclassifier",
            "normalizer",
            "onehotencoder",
        ],
    ),
];

/// Marker automaton and, per pattern, its (category, word).
type MarkerMatcher = (aho_corasick::AhoCorasick, Vec<(&'static str, &'static str)>);

/// One automaton over every marker word (ASCII case-insensitive), so a name is scanned once.
static MARKER_MATCHER: std::sync::LazyLock<Option<MarkerMatcher>> =
    std::sync::LazyLock::new(|| {
        let pairs: Vec<(&'static str, &'static str)> = MARKERS
            .iter()
            .flat_map(|(c, words)| words.iter().map(move |w| (*c, *w)))
            .collect();
        let matcher = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(pairs.iter().map(|(_, w)| *w))
            .ok()?;
        Some((matcher, pairs))
    });

impl CategorySignals {
    /// Adds the counts and markers gathered by another pass over other layers.
    pub fn merge(&mut self, other: CategorySignals) {
        self.layers += other.layers;
        self.conv_layers += other.conv_layers;
        self.pooling_layers += other.pooling_layers;
        self.gemm_layers += other.gemm_layers;
        self.attention_layers += other.attention_layers;
        for (category, words) in other.markers {
            self.markers.entry(category).or_default().extend(words);
        }
    }

    /// Records marker words in one piece of text (a layer name, metadata, a binding name).
    pub fn scan(&mut self, text: &str) {
        let Some((matcher, pairs)) = MARKER_MATCHER.as_ref() else {
            return;
        };
        // Most names hold no marker: a plain (prefiltered) search rules that out far faster than
        // the overlapping one, which runs the automaton over every byte.
        if !matcher.is_match(text) {
            return;
        }
        for m in matcher.find_overlapping_iter(text) {
            let (category, word) = pairs[m.pattern().as_usize()];
            self.markers.entry(category).or_default().insert(word);
        }
    }

    pub fn count_family(&mut self, family: Family, attention_like: bool) {
        self.layers += 1;
        match family {
            Family::Convolution => self.conv_layers += 1,
            Family::Pooling => self.pooling_layers += 1,
            Family::Gemm => self.gemm_layers += 1,
            _ => {}
        }
        if family == Family::Attention || attention_like {
            self.attention_layers += 1;
        }
    }

    fn marker_list(&self, category: &str) -> Vec<&'static str> {
        self.markers
            .get(category)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    pub fn decide(&self) -> CategoryGuess {
        use category::*;
        let guess = |category, confidence, evidence| CategoryGuess {
            category,
            confidence,
            evidence,
        };
        if let Some(mt) = &self.config_model_type {
            let m = mt.to_ascii_lowercase();
            let from = format!(
                "config model_type `{mt}`{}",
                self.config_path
                    .as_ref()
                    .map(|p| format!(" in {p}"))
                    .unwrap_or_default()
            );
            let hit = if [
                "bert",
                "roberta",
                "distilbert",
                "albert",
                "mpnet",
                "electra",
                "deberta",
                "xlm",
            ]
            .iter()
            .any(|k| m.contains(k))
            {
                Some(ENCODER)
            } else if [
                "gpt", "llama", "mistral", "gemma", "qwen", "phi", "falcon", "opt", "bloom",
                "mixtral",
            ]
            .iter()
            .any(|k| m.contains(k))
            {
                Some(DECODER)
            } else if ["vit", "deit", "swin", "beit", "dinov2"]
                .iter()
                .any(|k| m.contains(k))
            {
                Some(VIT)
            } else if ["resnet", "convnext", "efficientnet", "mobilenet", "regnet"]
                .iter()
                .any(|k| m.contains(k))
            {
                Some(CNN)
            } else if m.contains("unet") {
                Some(DIFFUSION)
            } else {
                None
            };
            if let Some(cat) = hit {
                return guess(cat, Confidence::High, vec![from]);
            }
        }
        let names = if self.names_only {
            " (layer names only)"
        } else {
            ""
        };
        let described = |cat: &str| {
            format!(
                "layer names mention {}{names}",
                self.marker_list(cat).join(", ")
            )
        };
        let count = |cat: &str| self.marker_list(cat).len();
        if count("diffusion") >= 2 && self.conv_layers > 0 {
            let mut ev = vec![
                described("diffusion"),
                format!("{} convolution layers", self.conv_layers),
            ];
            if self.attention_layers > 0 {
                ev.push(format!("{} attention-like layers", self.attention_layers));
            }
            let conf = if count("diffusion") >= 3 {
                Confidence::High
            } else {
                Confidence::Medium
            };
            return guess(DIFFUSION, conf, ev);
        }
        if count("decoder") >= 2 {
            return guess(DECODER, Confidence::Medium, vec![described("decoder")]);
        }
        if count("vit") >= 1 && (self.attention_layers > 0 || count("vit") >= 2) {
            return guess(VIT, Confidence::Medium, vec![described("vit")]);
        }
        if count("encoder") >= 2 {
            return guess(ENCODER, Confidence::Medium, vec![described("encoder")]);
        }
        if count("recommender") >= 2 {
            return guess(
                RECOMMENDER,
                Confidence::Medium,
                vec![described("recommender")],
            );
        }
        if count("classical") >= 1 {
            return guess(CLASSICAL, Confidence::Medium, vec![described("classical")]);
        }
        // Convolutions (with their pooling) carry the model: most of the time, or, without a
        // profile, at least a quarter of the layers, and more of them than GEMMs.
        if self.conv_layers >= 2
            && self.attention_layers == 0
            && self.conv_layers >= self.gemm_layers
        {
            let share = self.conv_time_share;
            let dominant = share
                .map(|s| s >= 40.0)
                .unwrap_or((self.conv_layers + self.pooling_layers) * 4 >= self.layers);
            if dominant {
                let mut ev = vec![format!(
                    "{} of {} layers are convolutions and {} pooling{names}",
                    self.conv_layers, self.layers, self.pooling_layers
                )];
                if let Some(s) = share {
                    ev.push(format!("convolutions take {s:.1}% of profiled time"));
                }
                ev.push("no attention-like layers".to_owned());
                let conf = if self.conv_layers >= 10 && !self.names_only {
                    Confidence::High
                } else {
                    Confidence::Medium
                };
                return guess(CNN, conf, ev);
            }
        }
        let mut ev = vec!["no strong evidence for a category".to_owned()];
        if self.attention_layers > 0 {
            ev.push(format!(
                "{} attention-like layers, but no encoder/decoder/vision markers",
                self.attention_layers
            ));
        }
        guess(UNKNOWN, Confidence::Low, ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_precision_gpu_and_tool_tokens() {
        assert_eq!(
            clean_name("resnet18-pt-a100-fp16").as_deref(),
            Some("resnet18")
        );
        assert_eq!(
            clean_name("mobilenet-qat-titanrtx-trt82").as_deref(),
            Some("mobilenet")
        );
        assert_eq!(
            clean_name("mnist-cnn-trt10.14-rtx6000ada").as_deref(),
            Some("mnist-cnn")
        );
        assert_eq!(
            clean_name("yolo-qat-int8-orin-trt85-namesonly").as_deref(),
            Some("yolo")
        );
        assert_eq!(clean_name("trt10.16_exportLayerInfo_detailed"), None);
        assert_eq!(
            clean_name("bert-base-uncased/onnx").as_deref(),
            Some("bert-base-uncased")
        );
        assert_eq!(clean_name("fixtures"), None);
    }

    #[test]
    fn components_are_found() {
        assert_eq!(components_in("sdxl_unet"), ["unet"]);
        assert_eq!(components_in("vae_encoder"), ["vae_encoder"]);
        assert!(components_in("resnet18").is_empty());
    }

    #[test]
    fn disagreeing_file_labels_give_no_name() {
        let id = infer(
            None,
            None,
            &[
                "resnet18-pt-a100-fp16".to_owned(),
                "mobilenet-qat".to_owned(),
            ],
        );
        assert_eq!(id.name, None);
        assert_eq!(id.candidates.len(), 2);
        let id = infer(
            None,
            None,
            &[
                "resnet18-pt-a100-fp16".to_owned(),
                "resnet18-pt-a100-fp32".to_owned(),
            ],
        );
        assert_eq!(id.name.as_deref(), Some("resnet18"));
        assert_eq!(id.confidence, Confidence::Medium);
        assert_eq!(id.evidence.len(), 2);
    }

    #[test]
    fn explicit_and_config_names_win() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("config.json"),
            r#"{"_name_or_path": "google-bert/bert-base-uncased", "model_type": "bert"}"#,
        )
        .expect("write");
        let id = infer(None, Some(dir.path()), &["x".to_owned()]);
        assert_eq!(id.name.as_deref(), Some("bert-base-uncased"));
        assert_eq!(id.confidence, Confidence::High);
        let id = infer(Some(" BERT Base "), Some(dir.path()), &[]);
        assert_eq!(id.name.as_deref(), Some("BERT Base"));
        assert_eq!(id.id.as_deref(), Some("bert-base"));
        assert_eq!(id.evidence, ["explicit --model-name"]);
    }

    #[test]
    fn comparison_folder_words_are_not_model_names() {
        assert_eq!(clean_name("resnet18-builds").as_deref(), Some("resnet18"));
        assert_eq!(clean_name("bert-fp16-vs-int8").as_deref(), Some("bert"));
        assert_eq!(clean_name("fp16-vs-qat"), None);
        assert_eq!(clean_name("baseline-vs-candidate"), None);
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("yolov8-builds-old-vs-new");
        std::fs::create_dir(&folder).expect("mkdir");
        let id = infer(None, Some(&folder), &[]);
        assert_eq!(id.name.as_deref(), Some("yolov8"));
        assert_eq!(id.id.as_deref(), Some("yolov8"));
    }

    #[test]
    fn categories_need_strong_evidence() {
        let mut s = CategorySignals::default();
        for _ in 0..20 {
            s.count_family(Family::Convolution, false);
        }
        s.conv_time_share = Some(80.0);
        assert_eq!(s.decide().category, category::CNN);
        assert_eq!(s.decide().confidence, Confidence::High);

        let mut s = CategorySignals::default();
        s.count_family(Family::Convolution, false);
        s.count_family(Family::Pointwise, false);
        assert_eq!(s.decide().category, category::UNKNOWN);

        let mut s = CategorySignals::default();
        s.scan("input_blocks.1.1.transformer_blocks.0.norm1");
        s.scan("/time_embed/time_embed.0/Gemm");
        s.count_family(Family::Convolution, false);
        assert_eq!(s.decide().category, category::DIFFUSION);
    }

    #[test]
    fn the_layer_names_common_scope_names_the_model_only_when_every_build_agrees() {
        let prefix = |builds: &[&[&str]]| {
            layer_name_prefix(builds.iter().map(|b| b.iter().copied())).map(|p| p.name)
        };
        let resnet: &[&str] = &[
            "resnet50/conv1/Conv2D",
            "resnet50/res2a/Relu",
            "Reformatting CopyNode for Input Tensor 0 to resnet50/res2a/Relu",
        ];
        assert_eq!(prefix(&[resnet, resnet]).as_deref(), Some("resnet50"));
        // A generic scope names no model; builds that disagree name none.
        assert_eq!(prefix(&[&["model/a", "model/b"]]), None);
        assert_eq!(prefix(&[resnet, &["vgg16/a", "vgg16/b"]]), None);
        // Under 90 % of the names (one of three here) is no common scope.
        assert_eq!(prefix(&[&["yolo/a", "b", "c"]]), None);
        // A leading `/` (PyTorch exports) is skipped.
        assert_eq!(
            prefix(&[&["/bert/embeddings/Add", "/bert/encoder/MatMul"]]).as_deref(),
            Some("bert")
        );
    }
}
