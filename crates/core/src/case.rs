//! Case resolution: one profile × one named case × one sweep point becomes a [`ResolvedCase`] in which
//! every field remembers where its value came from (default, manifest, case, plan, --set, sweep, cli).
//!
//! Precedence, lowest first: operation default < manifest (MODEL.toml) < case < plan < --set < sweep < the
//! dedicated command-line flags (--warmup, --iterations, --duration, --runtime).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
pub use trtmc_metadata::BatchSource;

use crate::case_error::describe_source;
pub use crate::case_error::{CaseError, OverrideError, SettingRefused, ValueError};
use crate::catalog::{Profile, TestCase};
use crate::limits::{MOST_DIMENSION, MOST_SHAPE_ELEMENTS, MOST_SWEEP_POINTS};
use crate::operations::{self, FieldKind, OperationDecl};
use crate::settings::{CommonBuildSetting, DeclaredSettings, SettingSection};
pub use crate::sourced::{Source, Sourced};

/// Schema tag of resolved-case.json, the document a worker receives for one case.
pub const RESOLVED_CASE_SCHEMA: &str = "trtmc.resolved-case/v1";

/// One `key=value` override (from --set, a sweep point or a plan), still as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The full key, e.g. `request.max_new_tokens` or `build.dims.batch`.
    pub key: String,
    /// The value as given, parsed later by the declaration of the setting.
    pub value: String,
    /// Where the override came from.
    pub source: Source,
}

impl Override {
    /// Parses `section.key=value` as given to `--set`.
    pub fn parse(text: &str, source: Source) -> Result<Self, OverrideError> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| OverrideError::NotKeyValue {
                text: text.to_string(),
            })?;
        let key = key.trim();
        if key.is_empty() {
            return Err(OverrideError::EmptyKey {
                text: text.to_string(),
            });
        }
        Ok(Self {
            key: key.to_string(),
            value: value.to_string(),
            source,
        })
    }
}

/// Measurement settings of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// Untimed calls made before timing starts.
    pub warmup: Sourced<u64>,
    /// Timed calls to make (a minimum for a default count: see `min_duration_s`).
    pub iterations: Sourced<u64>,
    /// Keep calling until both `iterations` calls and this many seconds are done.
    pub min_duration_s: Sourced<f64>,
    /// The time budget of the timed loop: it stops here even before `iterations` calls (the calls made
    /// are kept). `None`: no budget (an explicit count is what the user asked for).
    #[serde(default = "no_budget")]
    pub max_duration_s: Sourced<Option<f64>>,
    /// Stop the worker after this many seconds (build excluded); the calls already timed are kept.
    pub timeout_s: Sourced<f64>,
}

fn no_budget() -> Sourced<Option<f64>> {
    Sourced::new(None, Source::Default)
}

impl Measure {
    /// Seconds the warm-up may take before it stops early (at least one call is always made): a fifth
    /// of the budget when the warm-up count is the operation's or the test case's default, so a slow
    /// model does not spend its budget warming up. `None` when the user asked for a count (flag or
    /// plan) or there is no budget.
    pub fn warmup_budget_s(&self) -> Option<f64> {
        match (self.warmup.source, self.max_duration_s.value) {
            (Source::Default | Source::Case, Some(budget)) => Some(budget * WARMUP_SHARE_OF_BUDGET),
            _ => None,
        }
    }
}

/// Default per-case worker timeout.
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;
/// The minimum duration of a default run's timed loop (the validity verdict's own minimum).
pub const DEFAULT_MIN_DURATION_S: f64 = 1.0;
/// The warm-up's share of the time budget when its count is the default.
pub const WARMUP_SHARE_OF_BUDGET: f64 = 0.2;
/// The longest time a user may ask for (one week), so a typo such as `--timeout 1e20` is an input
/// error rather than an overflow.
pub const LONGEST_S: f64 = 7.0 * 24.0 * 3600.0;
/// The most timed calls or warm-up calls a case may ask for.
pub const MOST_CALLS: u64 = 100_000_000;
/// Declared beside the request fields it bounds (the operation table), so that table needs nothing
/// from case resolution.
pub use crate::operations::MOST_BOUND_DIM;

/// Command-line measurement flags (they win over everything else): the same overrides a case's
/// `measure` table holds.
pub type MeasureFlags = crate::catalog::MeasureToml;

/// A fully resolved case: everything the worker and the reducers need, with provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedCase {
    /// Schema tag, [`RESOLVED_CASE_SCHEMA`].
    pub schema: String,
    /// The profile's name.
    pub model: String,
    /// The test case's name.
    pub case: String,
    /// `case` plus the sweep point, e.g. `short[request.batch_size=2]`.
    pub label: String,
    /// The profile's task strategy (MODEL.toml `task_strategy`).
    pub task_strategy: String,
    /// The operation that runs the case (e.g. `generate`).
    pub operation: String,
    /// The runtime that runs it (e.g. `tract`), and which setting chose it.
    pub runtime: Sourced<String>,
    /// Every request field of the operation that has a value, by name (without `request.`).
    pub request: BTreeMap<String, Sourced<Value>>,
    /// Artifact-affecting settings (`precision`, `kv_cache_length`, `optimization_level`, `dims.<name>`,
    /// `shapes.<input>`); part of the bundle key.
    pub build: BTreeMap<String, Sourced<Value>>,
    /// Load-time runtime settings (`threads`, …); not part of the bundle key.
    pub runtime_settings: BTreeMap<String, Sourced<Value>>,
    /// Warm-up, call count and time limits of the timed loop.
    pub measure: Measure,
    /// The sweep point's values by key (empty outside a sweep).
    pub sweep_point: BTreeMap<String, String>,
    /// A chat case's messages, template and rendered prompt (`request.mode = "chat"`); rendered by the
    /// runner once the tokenizer's files are at hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<crate::chat::ChatPrompt>,
    /// SHA-256 of the workload: manifest hash, operation, request, build settings, input artifacts.
    pub identity: String,
    /// How the request's samples fill each call (cloned or declared batch, rotation across calls).
    #[serde(default)]
    pub inputs: CaseInputs,
    /// The case's own input data and expected outputs (`run --inputs`, `--check-outputs`); absent:
    /// inputs are synthesized (docs/run.md, "Your own model").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<crate::data::CaseData>,
}

impl ResolvedCase {
    /// The value of request field `name`, without its provenance.
    pub fn request_value(&self, name: &str) -> Option<&Value> {
        self.request.get(name).map(|s| &s.value)
    }
    /// The build settings' values, without their provenance.
    pub fn build_values(&self) -> BTreeMap<String, Value> {
        self.build
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect()
    }
    /// The runtime settings' values, without their provenance.
    pub fn runtime_values(&self) -> BTreeMap<String, Value> {
        self.runtime_settings
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect()
    }
}

/// Everything needed to resolve one case besides the profile.
#[derive(Debug, Clone, Default)]
pub struct ResolveInput<'a> {
    /// The test case to resolve; the profile's first case when `None`.
    pub case: Option<&'a str>,
    /// Overrides from the plan entry (lowest of the overrides).
    pub plan: Vec<Override>,
    /// `--set` overrides.
    pub sets: Vec<Override>,
    /// The sweep point's overrides (above `--set`).
    pub sweep_point: Vec<Override>,
    /// `--runtime`, which wins over every other runtime choice.
    pub runtime: Option<String>,
    /// The plan entry's measurement settings.
    pub plan_measure: MeasureFlags,
    /// The command line's measurement flags (highest precedence).
    pub flags: MeasureFlags,
}

/// Resolves one case of a profile. The profile must be ready. `declared` holds every runtime's
/// settings (`trtmc_runtime::registry::declared_settings`): a `build.*` or `runtime.*` value is read
/// by the declaration of the case's runtime (or, for a setting it does not declare, of the runtime
/// that does, so that the runner can say the case's runtime does not use it).
pub fn resolve(
    profile: &Profile,
    input: &ResolveInput<'_>,
    declared: &DeclaredSettings,
) -> Result<ResolvedCase, CaseError> {
    if !profile.status.is_ready() {
        return Err(CaseError::NotReady {
            model: profile.name.clone(),
            status: profile.status.label().to_string(),
        });
    }
    let op = profile
        .operation
        .as_deref()
        .and_then(operations::operation)
        .ok_or_else(|| CaseError::NoOperation {
            model: profile.name.clone(),
        })?;
    let case: &TestCase = match input.case {
        Some(name) => profile.case(name).ok_or_else(|| {
            let names: Vec<&str> = profile.cases.iter().map(|c| c.name.as_str()).collect();
            CaseError::UnknownCase {
                model: profile.name.clone(),
                case: name.to_string(),
                closest: crate::text::closest(name, names.iter().copied()).map(str::to_string),
                cases: names.iter().map(|n| n.to_string()).collect(),
            }
        })?,
        None => profile
            .default_case()
            .ok_or_else(|| CaseError::NoTestCase {
                model: profile.name.clone(),
            })?,
    };

    let mut request: BTreeMap<String, Sourced<Value>> = BTreeMap::new();
    for f in op.fields {
        if let Some(default) = f.default {
            request.insert(f.name.to_string(), Sourced::new(default(), Source::Default));
        }
    }
    for (k, v) in &case.request {
        request.insert(k.clone(), Sourced::new(v.clone(), Source::Case));
    }

    let mut build: BTreeMap<String, Sourced<Value>> = BTreeMap::new();
    if let Some(p) = &profile.build.precision {
        build.insert("precision".into(), Sourced::new(json!(p), Source::Manifest));
    }
    if let Some(k) = profile.build.kv_cache_length {
        build.insert(
            "kv_cache_length".into(),
            Sourced::new(json!(k), Source::Manifest),
        );
    }
    for (d, v) in &profile.build.dims {
        build.insert(
            format!("dims.{d}"),
            Sourced::new(json!(v), Source::Manifest),
        );
    }
    for (i, s) in &profile.build.shapes {
        build.insert(
            format!("shapes.{i}"),
            Sourced::new(json!(s), Source::Manifest),
        );
    }

    let mut runtime = Sourced::new(profile.runtime_strategy.clone(), Source::Manifest);
    let mut runtime_settings: BTreeMap<String, Sourced<Value>> = BTreeMap::new();

    let mut measure = Measure {
        warmup: Sourced::new(op.default_warmup, Source::Default),
        iterations: Sourced::new(op.default_iterations, Source::Default),
        min_duration_s: Sourced::new(DEFAULT_MIN_DURATION_S, Source::Default),
        max_duration_s: Sourced::new(Some(op.default_max_duration_s), Source::Default),
        timeout_s: Sourced::new(DEFAULT_TIMEOUT_S, Source::Default),
    };
    apply_measure(&mut measure, &case_measure(case), Source::Case);
    apply_measure(&mut measure, &input.plan_measure, Source::Plan);

    let overrides = || {
        input
            .plan
            .iter()
            .chain(&input.sets)
            .chain(&input.sweep_point)
    };
    // The runtime first (`runtime=NAME` among the overrides, then --runtime), since it says how the
    // other settings read.
    let names_runtime = |o: &&Override| {
        let (section, rest) = o.key.split_once('.').unwrap_or((o.key.as_str(), ""));
        section == "runtime" && rest.is_empty()
    };
    for o in overrides().filter(names_runtime) {
        runtime = Sourced::new(o.value.trim().to_string(), o.source);
    }
    if let Some(r) = &input.runtime {
        runtime = Sourced::new(r.clone(), Source::Cli);
    }
    let settings = CaseSettings {
        declared,
        runtime: &runtime.value,
    };
    for o in overrides().filter(|o| !names_runtime(o)) {
        apply_override(
            op,
            o,
            &settings,
            &mut request,
            &mut build,
            &mut runtime_settings,
        )?;
    }
    apply_measure(&mut measure, &input.flags, Source::Cli);
    stopping_rule(&mut measure)?;

    let chat = crate::chat::check_case(
        op.field(crate::chat::MODE_FIELD).is_some(),
        op.name,
        &case.messages,
        request.get(crate::chat::MODE_FIELD).map(|v| &v.value),
        request.contains_key(crate::chat::PROMPT_FIELD),
    )?
    .then(|| crate::chat::ChatPrompt {
        messages: case.messages.clone(),
        add_generation_prompt: case.add_generation_prompt.unwrap_or(true),
        template_source: None,
        template_sha256: None,
        prompt: None,
        prompt_tokens: None,
    });
    for f in op.fields {
        // A chat case's prompt is rendered from its messages (by the runner, see `ResolvedCase::chat`).
        if chat.is_some() && f.name == crate::chat::PROMPT_FIELD {
            continue;
        }
        if f.required() && !request.contains_key(f.name) && !every_sample_sets(op, &request, f.name)
        {
            return Err(CaseError::RequiredField {
                field: f.name,
                operation: op.name,
                help: f.help,
            });
        }
        if let (Some((least, most)), Some(v)) = (f.range, request.get(f.name))
            && !v
                .value
                .as_i64()
                .is_some_and(|n| (least..=most).contains(&n))
        {
            return Err(CaseError::OutOfRange {
                given: v.source,
                field: f.name,
                value: v.value.to_string(),
                least,
                most,
                binds_dim: f.binds_dim,
            });
        }
        if let Some(dim) = f.binds_dim
            && let Some(v) = request.get(f.name)
        {
            let n = v.value.as_i64().unwrap_or(1);
            if f.name == "batch_size" && n > 1 && !op.batch_api {
                return Err(CaseError::NoBatchApi {
                    operation: op.name,
                    batch: n,
                });
            }
            build.insert(format!("dims.{dim}"), Sourced::new(json!(n), v.source));
        }
    }

    let inputs = case_inputs(op, &request)?;

    let sweep_point: BTreeMap<String, String> = input
        .sweep_point
        .iter()
        .map(|o| (o.key.clone(), o.value.clone()))
        .collect();
    let label = if sweep_point.is_empty() {
        case.name.clone()
    } else {
        let parts: Vec<String> = sweep_point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}[{}]", case.name, parts.join(","))
    };

    let mut resolved = ResolvedCase {
        schema: RESOLVED_CASE_SCHEMA.into(),
        model: profile.name.clone(),
        case: case.name.clone(),
        label,
        task_strategy: profile.task_strategy.clone(),
        operation: op.name.into(),
        runtime,
        request,
        build,
        runtime_settings,
        measure,
        sweep_point,
        chat,
        identity: String::new(),
        inputs,
        data: None,
    };
    // One check of the resolved dimensions and shapes, whatever their source (MODEL.toml included).
    crate::limits::check_build_values(&resolved.build)
        .map_err(|reason| CaseError::Limits { reason })?;
    refresh_identity(profile, &mut resolved, declared)?;
    Ok(resolved)
}

/// Recomputes a resolved case's workload identity, after the runner filled in what resolving alone
/// cannot know (a chat case's rendered prompt and its token count); `declared` as for [`resolve`].
pub fn refresh_identity(
    profile: &Profile,
    resolved: &mut ResolvedCase,
    declared: &DeclaredSettings,
) -> Result<(), CaseError> {
    let op =
        operations::operation(&resolved.operation).ok_or_else(|| CaseError::UnknownOperation {
            operation: resolved.operation.clone(),
        })?;
    let artifacts = artifact_hashes(profile, op, &resolved.request)?;
    resolved.identity = workload_identity(&profile.manifest_hash, resolved, &artifacts, declared);
    Ok(())
}

/// SHA-256 of every artifact input (fields of kind `Artifact` other than `synthetic`), resolved relative to
/// MODEL.toml: a changed WAV or image changes the workload identity.
fn artifact_hashes(
    profile: &Profile,
    op: &operations::OperationDecl,
    request: &BTreeMap<String, Sourced<Value>>,
) -> Result<Vec<String>, CaseError> {
    let mut hashes = Vec::new();
    // `field = rel` → `label=sha256`, where `label` is how the request names the file.
    let mut hash_file = |label: String, rel: &str| -> Result<(), CaseError> {
        if rel == "synthetic" {
            return Ok(());
        }
        let path = profile.dir().join(rel);
        let bytes = match crate::limits::read_outside(&path, crate::limits::FileKind::Bulk) {
            Ok(bytes) => bytes,
            Err(source) => {
                return Err(CaseError::Artifact {
                    label,
                    rel: rel.to_string(),
                    path,
                    manifest: profile.manifest.clone(),
                    source,
                });
            }
        };
        hashes.push(format!("{label}={}", crate::hash::sha256_hex(&bytes)));
        Ok(())
    };
    let artifacts = || op.fields.iter().filter(|f| f.kind == FieldKind::Artifact);
    for f in artifacts() {
        if let Some(rel) = request.get(f.name).and_then(|v| v.value.as_str()) {
            hash_file(f.name.to_string(), rel)?;
        }
    }
    // Files a sample names (`samples[1].image`) count like the request's own.
    let samples = request.get("samples").and_then(|v| v.value.as_array());
    for (i, sample) in samples.into_iter().flatten().enumerate() {
        for f in artifacts() {
            if let Some(rel) = sample.get(f.name).and_then(Value::as_str) {
                hash_file(format!("samples[{i}].{}", f.name), rel)?;
            }
        }
    }
    Ok(hashes)
}

/// The workload identity: what must match for two measurements to be comparable. The build settings
/// that say how a bundle is built, not what it computes ([`crate::settings::is_recipe`]: precision and
/// what the runtimes declare as their recipe) are left out, so that two builds of one workload
/// (default against tuned route, fp16 against int8, one optimization level against another) can be
/// compared. Precision is checked on its own by the comparisons that care (the matrix's baseline
/// precision).
pub fn workload_identity(
    manifest_hash: &str,
    case: &ResolvedCase,
    artifact_hashes: &[String],
    declared: &DeclaredSettings,
) -> String {
    let request: BTreeMap<&String, &Value> =
        case.request.iter().map(|(k, v)| (k, &v.value)).collect();
    let build: BTreeMap<&String, &Value> = case
        .build
        .iter()
        .filter(|(k, _)| !crate::settings::is_recipe(declared, k))
        .map(|(k, v)| (k, &v.value))
        .collect();
    let mut workload = json!({
        "manifest": manifest_hash,
        "model": case.model,
        "operation": case.operation,
        "request": request,
        "build": build,
        "artifacts": artifact_hashes,
    });
    // Only chat cases carry it, so the identity of every other case stays what it was.
    // Not where the template was read from (a hub cache path differs from machine to machine), but
    // its text's hash.
    if let Some(chat) = &case.chat {
        workload["chat"] = json!({
            "messages": chat.messages,
            "add_generation_prompt": chat.add_generation_prompt,
            "template_sha256": chat.template_sha256,
            "prompt": chat.prompt,
            "prompt_tokens": chat.prompt_tokens,
        });
    }
    // Only cases with their own input data carry it, so every other identity stays what it was.
    if let Some(data) = &case.data {
        workload["input_data"] = data.identity_part();
    }
    crate::hash::json_hash(&workload)
}

/// How a case's samples fill its calls (resolved-case.json `inputs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseInputs {
    /// Whether the batch is one sample cloned or the samples as declared.
    pub batch_source: BatchSource,
    /// The request field that lists the samples (`samples`, `texts`, `documents`), when one is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_list: Option<String>,
    /// How many samples the list holds (1 without a list).
    pub samples: usize,
    /// Distinct per-call inputs the calls rotate through, warm-up included: call i uses input
    /// i mod n. 1: every call sends the same input.
    pub calls_rotate_over: usize,
}

impl Default for CaseInputs {
    fn default() -> Self {
        Self {
            batch_source: BatchSource::Declared,
            sample_list: None,
            samples: 1,
            calls_rotate_over: 1,
        }
    }
}

/// Checks the operation's sample list against `request.batch_size` and lays it out: one sample for
/// every item, one per batch item, or at batch size 1 one per call in rotation. Each sample table may
/// set only the operation's per-sample fields, every one the same fields, each of its field's kind.
fn case_inputs(
    op: &OperationDecl,
    request: &BTreeMap<String, Sourced<Value>>,
) -> Result<CaseInputs, CaseError> {
    let batch = request
        .get("batch_size")
        .and_then(|v| v.value.as_i64())
        .unwrap_or(1)
        .max(1) as usize;
    let cloned = if batch > 1 {
        BatchSource::Cloned
    } else {
        BatchSource::Declared
    };
    let Some((list, keys)) = operations::sample_list(op.name) else {
        return Ok(CaseInputs {
            batch_source: cloned,
            ..CaseInputs::default()
        });
    };
    let Some(given) = request.get(list) else {
        return Ok(CaseInputs {
            batch_source: cloned,
            ..CaseInputs::default()
        });
    };
    let items = given.value.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let named = format!("{} request.{list}", describe_source(given.source));
    if !keys.is_empty() {
        check_sample_tables(op, &named, items, keys)?;
    }
    // A chat case renders one prompt from its messages; a sample's own prompt would bypass the template.
    let chat = request
        .get(crate::chat::MODE_FIELD)
        .and_then(|v| v.value.as_str())
        == Some(crate::chat::MODE_CHAT);
    if chat
        && let Some(i) = items
            .iter()
            .position(|v| v.get(crate::chat::PROMPT_FIELD).is_some())
    {
        return Err(CaseError::ChatSamplePrompt {
            list: named,
            index: i,
        });
    }
    let n = items.len();
    let (batch_source, calls_rotate_over) = match n {
        1 => (cloned, 1),
        _ if n == batch => (BatchSource::Declared, 1),
        _ if batch == 1 => (BatchSource::Declared, n),
        _ => {
            return Err(CaseError::SampleCount {
                list: named,
                samples: n,
                batch,
            });
        }
    };
    Ok(CaseInputs {
        batch_source,
        sample_list: Some(list.to_string()),
        samples: n,
        calls_rotate_over,
    })
}

/// Whether the operation's sample list is given and every one of its tables sets `field` (a required
/// request field is then not needed at the top level).
pub(crate) fn every_sample_sets(
    op: &OperationDecl,
    request: &BTreeMap<String, Sourced<Value>>,
    field: &str,
) -> bool {
    operations::sample_list(op.name).is_some_and(|(list, _)| {
        operations::every_listed_sample_sets(op, request.get(list).map(|v| &v.value), field)
    })
}

fn check_sample_tables(
    op: &OperationDecl,
    named: &str,
    items: &[Value],
    keys: &[&'static str],
) -> Result<(), CaseError> {
    for (i, item) in items.iter().enumerate() {
        let Some(table) = item.as_object() else {
            return Err(CaseError::SampleNotTable {
                list: named.to_string(),
                index: i,
            });
        };
        if table.is_empty() {
            return Err(CaseError::SampleEmpty {
                list: named.to_string(),
                index: i,
                keys: keys.to_vec(),
            });
        }
        for (key, value) in table {
            let field = op
                .field(key)
                .filter(|_| keys.contains(&key.as_str()))
                .ok_or_else(|| CaseError::SampleField {
                    list: named.to_string(),
                    index: i,
                    key: key.clone(),
                    operation: op.name,
                    keys: keys.to_vec(),
                })?;
            operations::check_kind(field.kind, value).map_err(|source| CaseError::SampleKind {
                list: named.to_string(),
                index: i,
                key: key.clone(),
                source,
            })?;
        }
    }
    // A sample that sets no field falls back to the request's value, except a seed: a seed list that
    // leaves out some of the samples it seeds (those without an image file) is refused.
    if keys.contains(&"seed") {
        let seeded: Vec<&Value> = items
            .iter()
            .filter(|v| {
                v.get("image")
                    .and_then(Value::as_str)
                    .is_none_or(|image| image == "synthetic")
            })
            .collect();
        let set = seeded.iter().filter(|v| v.get("seed").is_some()).count();
        if set != 0 && set != seeded.len() {
            return Err(CaseError::SeedsPartial {
                list: named.to_string(),
                set,
                seeded: seeded.len(),
            });
        }
    }
    Ok(())
}

fn case_measure(case: &TestCase) -> MeasureFlags {
    MeasureFlags {
        warmup: case.measure.warmup,
        iterations: case.measure.iterations,
        min_duration_s: case.measure.min_duration_s,
        max_duration_s: case.measure.max_duration_s,
        timeout_s: case.measure.timeout_s,
    }
}

/// The stopping rule (docs/run.md): the default count (the operation's, or the test case's as the
/// profile's author set it) is a minimum, kept up for at least [`DEFAULT_MIN_DURATION_S`] and capped by
/// the operation's time budget; a count the user asked for (flag or plan) is what runs, with no default
/// minimum duration and no default budget (an explicit `--duration` / `--max-duration` still holds).
/// Also checks every value, so nothing absurd reaches a worker.
fn stopping_rule(m: &mut Measure) -> Result<(), CaseError> {
    if matches!(m.iterations.source, Source::Cli | Source::Plan) {
        if m.min_duration_s.source == Source::Default {
            m.min_duration_s = Sourced::new(0.0, Source::Default);
        }
        if m.max_duration_s.source == Source::Default {
            m.max_duration_s = Sourced::new(None, Source::Default);
        }
    }
    if m.iterations.value == 0 {
        return Err(CaseError::NoCalls {
            field: MeasureField::Iterations.named(m.iterations.source),
        });
    }
    for (field, sourced) in [
        (MeasureField::Iterations, &m.iterations),
        (MeasureField::Warmup, &m.warmup),
    ] {
        if sourced.value > MOST_CALLS {
            return Err(CaseError::TooManyCalls {
                field: field.named(sourced.source),
                value: sourced.value,
                most: MOST_CALLS,
            });
        }
    }
    let seconds = [
        (
            MeasureField::Duration,
            Some(m.min_duration_s.value),
            m.min_duration_s.source,
            0.0,
        ),
        (
            MeasureField::MaxDuration,
            m.max_duration_s.value,
            m.max_duration_s.source,
            f64::MIN_POSITIVE,
        ),
        (
            MeasureField::Timeout,
            Some(m.timeout_s.value),
            m.timeout_s.source,
            f64::MIN_POSITIVE,
        ),
    ];
    for (field, value, source, least) in seconds {
        let Some(v) = value else { continue };
        if !v.is_finite() || v < least || v > LONGEST_S {
            return Err(CaseError::Seconds {
                field: field.named(source),
                value: number_text(v),
                above_zero: least > 0.0,
                most: LONGEST_S,
            });
        }
    }
    if let Some(max) = m.max_duration_s.value
        && max < m.min_duration_s.value
    {
        return Err(CaseError::MaxBelowMin {
            max,
            min: m.min_duration_s.value,
        });
    }
    Ok(())
}

/// A measurement setting, named in a message as the user wrote it: a flag, a plan field or a field
/// of the test case.
#[derive(Debug, Clone, Copy)]
enum MeasureField {
    Warmup,
    Iterations,
    Duration,
    MaxDuration,
    Timeout,
}

impl MeasureField {
    fn named(self, source: Source) -> String {
        let (flag, plan, case) = match self {
            MeasureField::Warmup => ("--warmup", "warmup", "warmup"),
            MeasureField::Iterations => ("--iterations", "iterations", "iterations"),
            MeasureField::Duration => ("--duration", "duration", "min_duration_s"),
            MeasureField::MaxDuration => ("--max-duration", "max_duration", "max_duration_s"),
            MeasureField::Timeout => ("--timeout", "timeout", "timeout_s"),
        };
        match source {
            Source::Plan => format!("plan field `{plan}:`"),
            Source::Case | Source::Manifest => format!("test case field `measure.{case}`"),
            _ => flag.to_string(),
        }
    }
}

/// A number as a person reads it: `1e300` rather than three hundred digits.
pub fn number_text(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

fn apply_measure(m: &mut Measure, f: &MeasureFlags, source: Source) {
    if let Some(v) = f.warmup {
        m.warmup = Sourced::new(v, source);
    }
    if let Some(v) = f.iterations {
        m.iterations = Sourced::new(v, source);
    }
    if let Some(v) = f.min_duration_s {
        m.min_duration_s = Sourced::new(v, source);
    }
    if let Some(v) = f.max_duration_s {
        m.max_duration_s = Sourced::new(Some(v), source);
    }
    if let Some(v) = f.timeout_s {
        m.timeout_s = Sourced::new(v, source);
    }
}

/// What reads the `build.*` and `runtime.*` overrides of a case: every runtime's declarations and the
/// case's runtime.
struct CaseSettings<'a> {
    declared: &'a DeclaredSettings,
    runtime: &'a str,
}

impl CaseSettings<'_> {
    /// A `build.<key>` value: a common setting as core reads it ([`CommonBuildSetting`]), any other
    /// by its declaration.
    fn build_value(&self, key: &str, text: &str) -> Result<Value, SettingRefused> {
        if let Some(common) = CommonBuildSetting::of(key) {
            return Ok(match common {
                CommonBuildSetting::Precision => json!(text.trim()),
                CommonBuildSetting::KvCacheLength | CommonBuildSetting::Dim => {
                    json!(parse_dimension(text)?)
                }
                CommonBuildSetting::Shape => json!(parse_shape(text)?),
            });
        }
        match crate::settings::find_decl(self.declared, self.runtime, SettingSection::Build, key) {
            Some(decl) => Ok(decl.kind.parse(text)?),
            None => {
                let names = self.declared.iter().flat_map(|(_, settings)| {
                    settings
                        .iter()
                        .filter(|d| d.section == SettingSection::Build)
                        .map(|d| d.name)
                });
                let names: Vec<&str> = ["precision", "kv_cache_length"]
                    .into_iter()
                    .chain(names)
                    .collect();
                Err(SettingRefused::UnknownBuildSetting {
                    closest: crate::text::closest(key, names.iter().copied()).map(str::to_string),
                    known: crate::settings::known_build_settings(self.declared),
                })
            }
        }
    }

    /// A `runtime.<key>` value, read by its declaration where it reads as the declared kind; anything
    /// else is kept as given ([`parse_untyped`]) for the runtime's own check, whose message names the
    /// runtime and its values (`trtmc_runtime::runtime::check_settings`).
    fn runtime_value(&self, key: &str, text: &str) -> Value {
        crate::settings::find_decl(self.declared, self.runtime, SettingSection::Runtime, key)
            .and_then(|decl| decl.kind.parse(text).ok())
            .unwrap_or_else(|| parse_untyped(text))
    }
}

fn apply_override(
    op: &OperationDecl,
    o: &Override,
    settings: &CaseSettings<'_>,
    request: &mut BTreeMap<String, Sourced<Value>>,
    build: &mut BTreeMap<String, Sourced<Value>>,
    runtime_settings: &mut BTreeMap<String, Sourced<Value>>,
) -> Result<(), CaseError> {
    let (section, rest) = o.key.split_once('.').unwrap_or((o.key.as_str(), ""));
    let context = |e: SettingRefused| CaseError::Override {
        given: o.source,
        key: o.key.clone(),
        value: o.value.clone(),
        source: e,
    };
    match section {
        "request" => {
            let field = op.field(rest).ok_or_else(|| {
                context(SettingRefused::UnknownField(crate::catalog::unknown_field(
                    op, rest,
                )))
            })?;
            let value =
                parse_typed(field.kind, &o.value).map_err(|e| context(SettingRefused::Value(e)))?;
            request.insert(rest.to_string(), Sourced::new(value, o.source));
        }
        "build" => {
            let value = settings.build_value(rest, &o.value).map_err(context)?;
            build.insert(rest.to_string(), Sourced::new(value, o.source));
        }
        "runtime" if !rest.is_empty() => {
            runtime_settings.insert(
                rest.to_string(),
                Sourced::new(settings.runtime_value(rest, &o.value), o.source),
            );
        }
        _ => {
            return Err(context(SettingRefused::UnknownSection));
        }
    }
    Ok(())
}

/// A build dimension: a whole number from 1 to [`MOST_DIMENSION`].
fn parse_dimension(text: &str) -> Result<i64, ValueError> {
    match parse_int(text) {
        Ok(n) if (1..=MOST_DIMENSION).contains(&n) => Ok(n),
        _ => Err(ValueError::NotDimension {
            text: text.to_string(),
        }),
    }
}

fn parse_int(text: &str) -> Result<i64, ValueError> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| ValueError::NotInteger {
            text: text.to_string(),
        })
}

/// Parses `1x3x224x224` (trtexec's shape syntax) into dimensions.
/// The overrides of the command-line flags `--set KEY=VALUE`, `--shape NAME:DIMS` (a build shape) and
/// `--dim NAME=N` (a symbolic dimension), in that order; shared by `run`, `compare` and `tune`.
pub fn cli_overrides(
    sets: &[String],
    shapes: &[String],
    dims: &[String],
) -> Result<Vec<Override>, OverrideError> {
    let mut out: Vec<Override> = sets
        .iter()
        .map(|s| Override::parse(s, Source::Set))
        .collect::<Result<_, _>>()?;
    for shape in shapes {
        let (name, value) = shape
            .split_once(':')
            .ok_or_else(|| OverrideError::ShapeForm {
                shape: shape.clone(),
            })?;
        parse_shape(value).map_err(|source| OverrideError::ShapeValue {
            shape: shape.clone(),
            source,
        })?;
        out.push(Override {
            key: format!("build.shapes.{name}"),
            value: value.to_string(),
            source: Source::Cli,
        });
    }
    for dim in dims {
        let (name, value) = dim
            .split_once('=')
            .filter(|(n, v)| !n.trim().is_empty() && v.trim().parse::<u64>().is_ok())
            .ok_or_else(|| OverrideError::DimForm { dim: dim.clone() })?;
        out.push(Override {
            key: format!("build.dims.{}", name.trim()),
            value: value.trim().to_string(),
            source: Source::Cli,
        });
    }
    Ok(out)
}

pub(crate) fn parse_shape(text: &str) -> Result<Vec<i64>, ValueError> {
    let text = text.trim();
    if text.is_empty() || text == "scalar" {
        return Ok(Vec::new());
    }
    let dims: Vec<i64> = text
        .split('x')
        .map(|d| match d.trim().parse::<i64>() {
            Ok(v) if (0..=MOST_DIMENSION).contains(&v) => Ok(v),
            _ => Err(ValueError::NotShape {
                text: text.to_string(),
            }),
        })
        .collect::<Result<_, _>>()?;
    // Each dimension may be large, not all at once: one tensor of the shape must fit in memory.
    if dims
        .iter()
        .try_fold(1i64, |n, d| n.checked_mul(*d))
        .is_none_or(|n| n > MOST_SHAPE_ELEMENTS)
    {
        return Err(ValueError::ShapeTooLarge {
            text: text.to_string(),
        });
    }
    Ok(dims)
}

/// Parses a value given on the command line according to the declared field kind.
pub fn parse_typed(kind: FieldKind, text: &str) -> Result<Value, ValueError> {
    let t = text.trim();
    match kind {
        FieldKind::Integer => parse_int(t).map(Value::from),
        FieldKind::Number => match t.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Value::from(v)),
            _ => Err(ValueError::NotNumber {
                text: text.to_string(),
            }),
        },
        FieldKind::Bool => match t {
            "true" | "1" | "yes" | "on" => Ok(Value::Bool(true)),
            "false" | "0" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(ValueError::NotBool {
                text: text.to_string(),
            }),
        },
        FieldKind::String | FieldKind::Artifact => Ok(Value::from(text)),
        FieldKind::Samples => {
            let v: Value = serde_json::from_str(t).map_err(|e| ValueError::NotSampleList {
                reason: e.to_string(),
            })?;
            Ok(operations::check_kind(kind, &v)?)
        }
        FieldKind::StringList => {
            if t.starts_with('[') {
                let v: Value = serde_json::from_str(t).map_err(|e| ValueError::NotStringList {
                    reason: e.to_string(),
                })?;
                Ok(operations::check_kind(kind, &v)?)
            } else {
                Ok(Value::Array(
                    t.split('|').map(|s| Value::from(s.to_string())).collect(),
                ))
            }
        }
    }
}

/// Best-effort typing for runtime settings (validated later by the runtime): integer, number, bool, string.
pub fn parse_untyped(text: &str) -> Value {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        Value::from(i)
    } else if let Ok(f) = t.parse::<f64>()
        && f.is_finite()
    {
        Value::from(f)
    } else if t == "true" || t == "false" {
        Value::Bool(t == "true")
    } else {
        Value::from(t)
    }
}

/// One `--sweep key=a,b,c` axis.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    /// The full key swept, e.g. `request.batch_size`.
    pub key: String,
    /// The values in the order given, each still as text.
    pub values: Vec<String>,
}

impl SweepAxis {
    /// Parses `KEY=V1,V2,…` as given to `--sweep`.
    pub fn parse(text: &str) -> Result<Self, OverrideError> {
        let o = Override::parse(text, Source::Sweep).map_err(|_| OverrideError::SweepForm {
            text: text.to_string(),
        })?;
        let values: Vec<String> = o.value.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(OverrideError::SweepEmptyValue {
                text: text.to_string(),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
            return Err(OverrideError::SweepValueTwice {
                text: text.to_string(),
                value: dup.clone(),
            });
        }
        Ok(Self { key: o.key, values })
    }
}

/// The Cartesian product of sweep axes, first axis varying slowest. No axes → one empty point.
pub fn sweep_points(axes: &[SweepAxis]) -> Result<Vec<Vec<Override>>, OverrideError> {
    let mut keys = std::collections::BTreeSet::new();
    for a in axes {
        if !keys.insert(a.key.as_str()) {
            return Err(OverrideError::SweepKeyTwice { key: a.key.clone() });
        }
    }
    let count = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .filter(|n| *n <= MOST_SWEEP_POINTS);
    if count.is_none() {
        return Err(OverrideError::SweepTooLarge {
            sizes: axes.iter().map(|a| a.values.len()).collect(),
        });
    }
    let mut points: Vec<Vec<Override>> = vec![Vec::new()];
    for axis in axes {
        let mut next = Vec::with_capacity(points.len() * axis.values.len());
        for p in &points {
            for v in &axis.values {
                let mut q = p.clone();
                q.push(Override {
                    key: axis.key.clone(),
                    value: v.clone(),
                    source: Source::Sweep,
                });
                next.push(q);
            }
        }
        points = next;
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// [`super::resolve`] with declarations shaped like the runtimes' own.
    fn resolve(p: &Profile, input: &ResolveInput<'_>) -> Result<ResolvedCase, CaseError> {
        super::resolve(p, input, crate::settings::TEST_DECLARED)
    }

    /// A catalog of one tiny-gpt profile `g` whose MODEL.toml ends with `model_tail` and whose
    /// `c.toml` holds `cases`.
    fn tiny_gpt_catalog(model_tail: &str, cases: &str) -> (tempfile::TempDir, Catalog) {
        let t = tempfile::tempdir().expect("tmp");
        let d = t.path().join("g");
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(
            d.join("MODEL.toml"),
            format!("name = \"g\"\ntask_strategy = \"text_generation\"\ntest_manifests = [\"c.toml\"]\n[source]\nbuiltin = \"tiny-gpt\"\n{model_tail}"),
        )
        .expect("write");
        std::fs::write(d.join("c.toml"), cases).expect("write");
        let c = Catalog::load(t.path()).expect("load");
        (t, c)
    }

    fn catalog() -> (tempfile::TempDir, Catalog) {
        tiny_gpt_catalog(
            "[build]\nkv_cache_length = 64\n",
            "[[case]]\nname = \"greedy\"\n[case.request]\nprompt = \"hi\"\nmax_new_tokens = 8\n\n[[case]]\nname = \"sampled\"\n[case.measure]\niterations = 7\n[case.request]\nprompt = \"yo\"\ndo_sample = true\nseed = 42\n",
        )
    }

    #[test]
    fn precedence_and_sources() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let input = ResolveInput {
            case: Some("sampled"),
            sets: vec![Override::parse("request.max_new_tokens=16", Source::Set).expect("set")],
            flags: MeasureFlags {
                warmup: Some(2),
                ..Default::default()
            },
            ..Default::default()
        };
        let r = resolve(p, &input).expect("resolve");
        assert_eq!(
            r.request["max_new_tokens"],
            Sourced::new(json!(16), Source::Set)
        );
        assert_eq!(r.request["seed"], Sourced::new(json!(42), Source::Case));
        assert_eq!(r.request["temperature"].source, Source::Default);
        assert_eq!(r.measure.iterations, Sourced::new(7, Source::Case));
        assert_eq!(r.measure.warmup, Sourced::new(2, Source::Cli));
        assert_eq!(r.build["kv_cache_length"].source, Source::Manifest);
        assert_eq!(r.build["dims.batch"].value, json!(1));
    }

    #[test]
    fn default_counts_are_minimums_within_a_budget_and_asked_counts_are_exact() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let op = operations::operation("generate").expect("generate");
        // The operation's defaults: a minimum count, 1 s at least, the operation's budget, and a
        // warm-up that may spend a fifth of it.
        let d = resolve(p, &ResolveInput::default())
            .expect("default")
            .measure;
        assert_eq!(
            d.iterations,
            Sourced::new(op.default_iterations, Source::Default)
        );
        assert_eq!(d.min_duration_s.value, DEFAULT_MIN_DURATION_S);
        assert_eq!(d.max_duration_s.value, Some(op.default_max_duration_s));
        assert_eq!(
            d.warmup_budget_s(),
            Some(op.default_max_duration_s * WARMUP_SHARE_OF_BUDGET)
        );
        // The test case's own count is the profile author's default: still a minimum within the budget.
        let case = resolve(
            p,
            &ResolveInput {
                case: Some("sampled"),
                ..Default::default()
            },
        )
        .expect("case")
        .measure;
        assert_eq!(case.iterations.value, 7);
        assert_eq!(case.min_duration_s.value, DEFAULT_MIN_DURATION_S);
        assert!(case.max_duration_s.value.is_some());
        // A count the user asked for is exact: no default minimum duration, no default budget …
        let asked = |flags: MeasureFlags| {
            resolve(
                p,
                &ResolveInput {
                    flags,
                    ..Default::default()
                },
            )
        };
        let exact = asked(MeasureFlags {
            iterations: Some(20),
            warmup: Some(3),
            ..Default::default()
        })
        .expect("exact")
        .measure;
        assert_eq!(exact.min_duration_s.value, 0.0);
        assert_eq!(exact.max_duration_s.value, None);
        assert_eq!(exact.warmup_budget_s(), None);
        // … unless the user bounded it too.
        let bounded = asked(MeasureFlags {
            iterations: Some(20),
            max_duration_s: Some(2.0),
            ..Default::default()
        })
        .expect("bounded")
        .measure;
        assert_eq!(bounded.max_duration_s, Sourced::new(Some(2.0), Source::Cli));
    }

    #[test]
    fn absurd_measurement_values_are_refused_before_any_work() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let refused = |flags: MeasureFlags| {
            resolve(
                p,
                &ResolveInput {
                    flags,
                    ..Default::default()
                },
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
        };
        let e = refused(MeasureFlags {
            timeout_s: Some(1e20),
            ..Default::default()
        });
        assert!(e.contains("--timeout 1e20"), "{e}");
        assert!(e.contains("one week"), "{e}");
        let e = refused(MeasureFlags {
            min_duration_s: Some(f64::NAN),
            ..Default::default()
        });
        assert!(e.contains("--duration NaN"), "{e}");
        let e = refused(MeasureFlags {
            iterations: Some(1_000_000_000_000),
            ..Default::default()
        });
        assert!(e.contains("--iterations 1000000000000"), "{e}");
        let e = refused(MeasureFlags {
            warmup: Some(MOST_CALLS + 1),
            ..Default::default()
        });
        assert!(e.contains("--warmup"), "{e}");
        let e = refused(MeasureFlags {
            min_duration_s: Some(5.0),
            max_duration_s: Some(2.0),
            ..Default::default()
        });
        assert!(
            e.contains("--max-duration 2 is below the minimum duration 5 s"),
            "{e}"
        );
        let e = refused(MeasureFlags {
            max_duration_s: Some(0.0),
            ..Default::default()
        });
        assert!(e.contains("--max-duration 0"), "{e}");
    }

    #[test]
    fn limits_name_the_field_as_written_and_the_declared_range() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let refused = |input: ResolveInput<'_>| {
            resolve(p, &input)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        // A plan's field is named as the plan spells it, and a huge number stays readable.
        let e = refused(ResolveInput {
            plan_measure: MeasureFlags {
                timeout_s: Some(1e300),
                ..Default::default()
            },
            ..Default::default()
        });
        assert!(e.starts_with("plan field `timeout:` 1e300:"), "{e}");
        let e = refused(ResolveInput {
            plan_measure: MeasureFlags {
                warmup: Some(MOST_CALLS + 1),
                ..Default::default()
            },
            ..Default::default()
        });
        assert!(e.starts_with("plan field `warmup:` 100000001"), "{e}");
        // An operation's declared range of an integer request field, from wherever the value came.
        let set = |text: &str| ResolveInput {
            sets: vec![Override::parse(text, Source::Set).expect("set")],
            ..Default::default()
        };
        let e = refused(set("request.max_new_tokens=1000000000000"));
        assert!(
            e.contains(
                "--set request.max_new_tokens=1000000000000: give a whole number from 1 to 1048576"
            ),
            "{e}"
        );
        assert!(refused(set("request.top_k=-1")).contains("from 0 to"));
        assert!(resolve(p, &set("request.top_k=0")).is_ok());
        // Build dimensions are whole numbers within MOST_DIMENSION.
        let e = refused(set("build.kv_cache_length=0"));
        assert!(e.contains("from 1 to 1048576"), "{e}");
        assert!(refused(set("build.dims.seq=99999999999")).contains("build.dims.seq"));
        assert!(parse_shape("1x99999999").is_err());
        assert!(parse_shape("1048576x1048576").is_err());
        assert_eq!(parse_shape("1024x1024x1024").map(|d| d.len()), Ok(3));
    }

    #[test]
    fn a_batch_binding_field_is_bounded_by_its_declaration() {
        let op = operations::operation("classify").expect("classify");
        let batch = op.field("batch_size").expect("batch_size");
        assert_eq!(batch.range, Some((1, MOST_BOUND_DIM)));
        assert_eq!(batch.binds_dim, Some("batch"));
        // Every declared range holds its own default, so a default case always resolves.
        for op in operations::operations() {
            for f in op.fields {
                if let (Some((least, most)), Some(default)) = (f.range, f.default) {
                    let v = default().as_i64().expect("integer default");
                    assert!((least..=most).contains(&v), "{}.{}", op.name, f.name);
                }
            }
        }
    }

    #[test]
    fn an_oversized_sweep_is_refused_before_it_is_expanded() {
        let axis = |key: &str, n: usize| SweepAxis {
            key: key.into(),
            values: (0..n).map(|v| v.to_string()).collect(),
        };
        assert_eq!(
            sweep_points(&[axis("request.a", 100), axis("request.b", 100)])
                .expect("10,000 points")
                .len(),
            MOST_SWEEP_POINTS
        );
        let e = sweep_points(&[
            axis("request.a", 100),
            axis("request.b", 100),
            axis("request.c", 2),
        ])
        .expect_err("20,000 points")
        .to_string();
        assert!(
            e.contains("100 × 100 × 2 points") && e.contains("10000"),
            "{e}"
        );
        // A product beyond usize is refused, not overflowed.
        let huge: Vec<SweepAxis> = (0..20)
            .map(|i| axis(&format!("request.k{i}"), 100))
            .collect();
        assert!(sweep_points(&huge).is_err());
    }

    /// A profile of `task` with one case per `(name, request TOML)`, beside a small file `a.png`.
    fn sample_catalog(
        task: &str,
        builtin: &str,
        cases: &[(&str, &str)],
    ) -> (tempfile::TempDir, Catalog) {
        let t = tempfile::tempdir().expect("tmp");
        let d = t.path().join("m");
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(
            d.join("MODEL.toml"),
            format!("name = \"m\"\ntask_strategy = \"{task}\"\ntest_manifests = [\"c.toml\"]\n[source]\nbuiltin = \"{builtin}\"\n"),
        )
        .expect("write");
        std::fs::write(d.join("a.png"), b"one").expect("write");
        let text: String = cases
            .iter()
            .map(|(name, request)| {
                format!("[[case]]\nname = \"{name}\"\n[case.request]\n{request}\n")
            })
            .collect();
        std::fs::write(d.join("c.toml"), text).expect("write");
        let c = Catalog::load(t.path()).expect("load");
        (t, c)
    }

    fn resolve_case(c: &Catalog, case: &str, sets: &[&str]) -> Result<ResolvedCase, String> {
        resolve(
            c.require("m").expect("m"),
            &ResolveInput {
                case: Some(case),
                sets: sets
                    .iter()
                    .map(|s| Override::parse(s, Source::Set).expect("set"))
                    .collect(),
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn generation_samples_stand_in_for_the_prompt_when_each_sets_one() {
        let (_t, c) = sample_catalog(
            "text_generation",
            "tiny-gpt",
            &[(
                "prompts",
                "samples = [{ prompt = \"a\" }, { prompt = \"b\" }]",
            )],
        );
        let prompts = resolve_case(&c, "prompts", &[]).expect("every sample sets the prompt");
        assert_eq!(prompts.inputs.calls_rotate_over, 2);
        let e = resolve_case(
            &c,
            "prompts",
            &[r#"request.samples=[{"prompt":"a"},{"seed":2}]"#],
        )
        .expect_err("one sample lacks a prompt")
        .to_string();
        assert!(e.contains("request.prompt is required"), "{e}");
    }

    #[test]
    fn declared_samples_fill_a_batch_or_rotate_and_the_identity_covers_each() {
        let (_t, c) = sample_catalog(
            "image_diffusion",
            "tiny-denoiser",
            &[
                ("one", "batch_size = 2\nseed = 11"),
                (
                    "two",
                    "batch_size = 2\nsamples = [{ seed = 11 }, { seed = 12 }]",
                ),
                (
                    "turns",
                    "samples = [{ seed = 11 }, { seed = 12 }, { seed = 13 }]",
                ),
            ],
        );
        let one = resolve_case(&c, "one", &[]).expect("one");
        assert_eq!(one.inputs.batch_source, BatchSource::Cloned);
        assert_eq!(one.inputs.calls_rotate_over, 1);
        let two = resolve_case(&c, "two", &[]).expect("two");
        assert_eq!(two.inputs.batch_source, BatchSource::Declared);
        assert_eq!(two.inputs.sample_list.as_deref(), Some("samples"));
        assert_eq!((two.inputs.samples, two.inputs.calls_rotate_over), (2, 1));
        let turns = resolve_case(&c, "turns", &[]).expect("turns");
        assert_eq!(turns.inputs.batch_source, BatchSource::Declared);
        assert_eq!(turns.inputs.calls_rotate_over, 3);
        // Every sample is part of the identity.
        let other = resolve_case(&c, "two", &[r#"request.samples=[{"seed":11},{"seed":13}]"#])
            .expect("set");
        assert_ne!(two.identity, other.identity);
        assert_eq!(other.request["samples"].source, Source::Set);
        // resolved-case.json says how the calls are filled.
        let doc = serde_json::to_value(&turns).expect("json");
        assert_eq!(doc["inputs"]["calls_rotate_over"], 3);
        assert_eq!(doc["inputs"]["batch_source"], "declared");
    }

    #[test]
    fn samples_that_do_not_fit_the_batch_are_refused_naming_the_field() {
        let (_t, c) = sample_catalog(
            "image_diffusion",
            "tiny-denoiser",
            &[
                (
                    "three",
                    "batch_size = 2\nsamples = [{ seed = 1 }, { seed = 2 }, { seed = 3 }]",
                ),
                ("gap", "batch_size = 2\nsamples = [{ seed = 1 }, {}]"),
                (
                    "typo",
                    "batch_size = 2\nsamples = [{ seed = 1 }, { sed = 2 }]",
                ),
                (
                    "kind",
                    "batch_size = 2\nsamples = [{ seed = 1 }, { seed = \"two\" }]",
                ),
            ],
        );
        let e = resolve_case(&c, "three", &[])
            .expect_err("3 for 2")
            .to_string();
        assert!(
            e.contains("test case request.samples lists 3 samples for request.batch_size=2"),
            "{e}"
        );
        // A batch size swept past the list is named as the sweep's.
        let e = resolve_case(&c, "three", &["request.batch_size=4"])
            .expect_err("3 for 4")
            .to_string();
        assert!(e.contains("request.batch_size=4"), "{e}");
        let e = resolve_case(&c, "gap", &[])
            .expect_err("a sample without its seed")
            .to_string();
        assert!(e.contains("request.samples[1] sets nothing"), "{e}");
        let e = resolve_case(&c, "typo", &[])
            .expect_err("unknown field")
            .to_string();
        assert!(e.contains("request.samples[1] sets `sed`"), "{e}");
        let e = resolve_case(&c, "kind", &[]).expect_err("kind").to_string();
        assert!(
            e.contains("request.samples[1].seed: expected an integer"),
            "{e}"
        );
    }

    #[test]
    fn sample_images_are_hashed_and_a_missing_one_is_named() {
        let (t, c) = sample_catalog(
            "semantic_segmentation",
            "tiny-segnet",
            &[
                (
                    "files",
                    "batch_size = 2\nsamples = [{ image = \"a.png\" }, { image = \"synthetic\", seed = 3 }]",
                ),
                (
                    "missing",
                    "batch_size = 2\nsamples = [{ image = \"a.png\" }, { image = \"b.png\" }]",
                ),
            ],
        );
        let before = resolve_case(&c, "files", &[]).expect("files");
        std::fs::write(t.path().join("m/a.png"), b"two").expect("write");
        let after = resolve_case(&c, "files", &[]).expect("files");
        assert_ne!(before.identity, after.identity, "the sample's bytes count");
        // A seed list that leaves out a seeded (synthetic) sample.
        let e = resolve_case(
            &c,
            "files",
            &[r#"request.samples=[{"seed":1},{"image":"synthetic"}]"#],
        )
        .expect_err("a synthetic sample without its seed")
        .to_string();
        assert!(
            e.contains("--set request.samples: 1 of the 2 seeded samples set `seed`"),
            "{e}"
        );
        let e = resolve_case(&c, "missing", &[])
            .expect_err("missing")
            .to_string();
        assert!(e.contains("request.samples[1].image = `b.png`"), "{e}");
    }

    #[test]
    fn text_lists_are_one_per_item_or_per_call() {
        let texts = "texts = [\"a\", \"b\", \"c\", \"d\"]";
        let (_t, c) = sample_catalog(
            "sentence_embedding",
            "tiny-encoder",
            &[
                ("rotate", &format!("batch_size = 1\n{texts}")),
                ("batch", &format!("batch_size = 4\n{texts}")),
                ("odd", &format!("batch_size = 3\n{texts}")),
                ("clone", "batch_size = 4\ntexts = [\"a\"]"),
            ],
        );
        let rotate = resolve_case(&c, "rotate", &[]).expect("rotate");
        assert_eq!(rotate.inputs.calls_rotate_over, 4);
        assert_eq!(rotate.inputs.sample_list.as_deref(), Some("texts"));
        let batch = resolve_case(&c, "batch", &[]).expect("batch");
        assert_eq!(
            (batch.inputs.batch_source, batch.inputs.calls_rotate_over),
            (BatchSource::Declared, 1)
        );
        let clone = resolve_case(&c, "clone", &[]).expect("clone");
        assert_eq!(clone.inputs.batch_source, BatchSource::Cloned);
        let e = resolve_case(&c, "odd", &[])
            .expect_err("4 for 3")
            .to_string();
        assert!(
            e.contains("request.texts lists 4 samples for request.batch_size=3"),
            "{e}"
        );
    }

    #[test]
    fn greedy_default_seed_is_minus_one_and_identity_tracks_request() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let a = resolve(p, &ResolveInput::default()).expect("a");
        assert_eq!(a.case, "greedy");
        assert_eq!(a.request["seed"].value, json!(-1));
        let b = resolve(
            p,
            &ResolveInput {
                sets: vec![Override::parse("request.max_new_tokens=9", Source::Set).expect("o")],
                ..Default::default()
            },
        )
        .expect("b");
        assert_ne!(a.identity, b.identity);
        let a2 = resolve(p, &ResolveInput::default()).expect("a2");
        assert_eq!(a.identity, a2.identity);
    }

    #[test]
    fn errors_name_the_thing_and_the_fix() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let err = |sets: &[&str]| {
            let input = ResolveInput {
                sets: sets
                    .iter()
                    .map(|s| Override::parse(s, Source::Set).expect("parse"))
                    .collect(),
                ..Default::default()
            };
            resolve(p, &input).expect_err("must fail").to_string()
        };
        assert!(err(&["request.max_new_tokenz=3"]).contains("Did you mean `max_new_tokens`"));
        assert!(err(&["request.max_new_tokens=many"]).contains("expected an integer"));
        assert!(err(&["request.batch_size=2"]).contains("no batch API"));
        assert!(err(&["build.colour=red"]).contains("unknown build setting"));
        assert!(
            err(&["build.optimization_level=max"])
                .contains("disable, basic, extended, layout, all")
        );
        assert!(err(&["prompt=x"]).contains("keys start with"));
        let e = resolve(
            p,
            &ResolveInput {
                case: Some("greedyy"),
                ..Default::default()
            },
        )
        .expect_err("case")
        .to_string();
        assert!(
            e.contains("Did you mean `greedy`") && e.contains("sampled"),
            "{e}"
        );
    }

    #[test]
    fn optimization_level_is_a_build_setting_that_keeps_the_workload_identity() {
        let (_t, c) = catalog();
        let p = c.require("g").expect("g");
        let with = |level: &str| {
            resolve(
                p,
                &ResolveInput {
                    sets: vec![
                        Override::parse(&format!("build.optimization_level={level}"), Source::Set)
                            .expect("set"),
                    ],
                    ..Default::default()
                },
            )
            .expect("resolve")
        };
        let basic = with("basic");
        assert_eq!(
            basic.build["optimization_level"],
            Sourced::new(json!("basic"), Source::Set)
        );
        assert!(basic.runtime_settings.is_empty());
        // How the bundle is built is no part of what the workload computes.
        assert_eq!(basic.identity, with("all").identity);
    }

    #[test]
    fn sweeps_form_the_only_product() {
        let axes = vec![
            SweepAxis::parse("request.max_new_tokens=4,8").expect("a"),
            SweepAxis::parse("request.temperature=0.5,1.0,2.0").expect("b"),
        ];
        let points = sweep_points(&axes).expect("points");
        assert_eq!(points.len(), 6);
        assert_eq!(points[1][1].value, "1.0");
        assert_eq!(points[3][0].value, "8");
        assert!(SweepAxis::parse("request.x=1,1").is_err());
        assert!(sweep_points(&[axes[0].clone(), axes[0].clone()]).is_err());
        let (_t, c) = catalog();
        let r = resolve(
            c.require("g").expect("g"),
            &ResolveInput {
                sweep_point: points[5].clone(),
                ..Default::default()
            },
        )
        .expect("resolve");
        assert_eq!(
            r.label,
            "greedy[request.max_new_tokens=8,request.temperature=2.0]"
        );
        assert_eq!(r.request["temperature"].source, Source::Sweep);
    }

    #[test]
    fn shapes_parse_like_trtexec() {
        assert_eq!(parse_shape("1x3x224x224").expect("s"), vec![1, 3, 224, 224]);
        assert_eq!(parse_shape("scalar").expect("s"), Vec::<i64>::new());
        assert!(parse_shape("1x-3").is_err());
    }

    #[test]
    fn command_line_flags_become_overrides_in_order_and_bad_ones_name_the_flag() {
        let o = cli_overrides(
            &["runtime.threads=2".into()],
            &["input:1x3x8x8".into()],
            &["batch=4".into()],
        )
        .expect("valid flags");
        let keys: Vec<&str> = o.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(
            keys,
            ["runtime.threads", "build.shapes.input", "build.dims.batch"]
        );
        assert_eq!(o[1].value, "1x3x8x8");
        assert_eq!(o[2].value, "4");
        let e = cli_overrides(&[], &["input".into()], &[])
            .expect_err("no dims")
            .to_string();
        assert!(e.contains("--shape `input` is not NAME:DIMS"), "{e}");
        let e = cli_overrides(&[], &[], &["batch=-1".into()])
            .expect_err("negative")
            .to_string();
        assert!(e.contains("--dim `batch=-1`"), "{e}");
    }

    #[test]
    fn a_chat_case_resolves_without_a_prompt_and_its_rendering_is_its_identity() {
        use crate::chat::{MODE_COMPLETION, PROMPT_FIELD};
        let (_t, catalog) = tiny_gpt_catalog(
            "",
            "[[case]]\nname = \"chat\"\nadd_generation_prompt = false\n[case.request]\nmode = \"chat\"\n[[case.messages]]\nrole = \"user\"\ncontent = \"hi\"\n\n[[case]]\nname = \"plain\"\n[case.request]\nprompt = \"hi\"\n",
        );
        let p = catalog.require("g").expect("g");
        assert!(p.status.is_ready(), "{:?}", p.status);
        let case = |name| {
            resolve(
                p,
                &ResolveInput {
                    case: Some(name),
                    ..Default::default()
                },
            )
            .expect("resolve")
        };
        let mut chat = case("chat");
        let plain = case("plain");
        assert!(plain.chat.is_none());
        assert_eq!(plain.request["mode"].value, MODE_COMPLETION);
        let c = chat.chat.clone().expect("chat");
        assert_eq!((c.messages.len(), c.add_generation_prompt), (1, false));
        assert!(
            !chat.request.contains_key(PROMPT_FIELD),
            "rendered by the runner"
        );
        let before = chat.identity.clone();
        if let Some(c) = chat.chat.as_mut() {
            c.prompt = Some("[user] hi".into());
            c.prompt_tokens = Some(9);
        }
        refresh_identity(p, &mut chat, crate::settings::TEST_DECLARED).expect("identity");
        assert_ne!(
            chat.identity, before,
            "the rendered prompt is part of the workload"
        );
        // Where the template was read from is not.
        let rendered = chat.identity.clone();
        if let Some(c) = chat.chat.as_mut() {
            c.template_source = Some("/somewhere/else/chat_template.jinja".into());
        }
        refresh_identity(p, &mut chat, crate::settings::TEST_DECLARED).expect("identity");
        assert_eq!(chat.identity, rendered);
    }
}
