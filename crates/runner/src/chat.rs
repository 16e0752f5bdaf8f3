//! Rendering a chat case before anything is built: the template beside the profile's tokenizer, the
//! rendered prompt, its token count, and the identity that covers them (trtmc_core::chat).

use std::path::{Path, PathBuf};

use trtmc_core::case::{self, ResolvedCase, Source, Sourced};
use trtmc_core::catalog::{Profile, TokenizerSpec};
use trtmc_core::chat::{self, ChatTemplate};
use trtmc_runtime::tokenize::Tokenizer;

use crate::sources::{self, Fetch};

/// Why a chat case's prompt cannot be rendered, or a case's prompt does not fit what is built.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// Neither `chat_template.jinja` nor a `chat_template` in `tokenizer_config.json` was found.
    #[error(
        "model `{model}` has no chat template, so its case `{case}` (request.mode = \"chat\", test case field `messages`) cannot be rendered: looked for {} and the `chat_template` of {}. Put the model's template there, or make the case a completion (request.mode = \"completion\" with request.prompt)",
        jinja.display(),
        config.display()
    )]
    NoTemplate {
        /// Catalog name of the model.
        model: String,
        /// Name of the chat case.
        case: String,
        /// Where `chat_template.jinja` was looked for.
        jinja: PathBuf,
        /// The `tokenizer_config.json` whose `chat_template` was looked for.
        config: PathBuf,
    },
    /// The template files beside the tokenizer cannot be read.
    #[error("{reason}")]
    TemplateFiles {
        /// Catalog name of the model.
        model: String,
        /// Which file and what went wrong.
        reason: String,
    },
    /// The template engine failed on the case's messages (its message names the template line).
    #[error("model `{model}` case `{case}`: {source}")]
    Render {
        /// Catalog name of the model.
        model: String,
        /// Name of the chat case.
        case: String,
        /// The template engine's error.
        source: chat::ChatError,
    },
    /// The profile's `tokenizer` entry cannot be parsed, so its template files cannot be located.
    #[error("model `{model}`: {source}")]
    TokenizerSpec {
        /// Catalog name of the model.
        model: String,
        /// Why the tokenizer spec is invalid.
        source: trtmc_core::catalog::CatalogError,
    },
    /// The tokenizer cannot be loaded or cannot encode the prompt; `reason` is its error chain.
    #[error("model `{model}`: {reason}")]
    Tokenizer {
        /// Catalog name of the model.
        model: String,
        /// The tokenizer's error chain as text.
        reason: String,
    },
    /// A `file:` tokenizer cannot be read or is not valid JSON.
    #[error("model `{model}`: cannot read tokenizer {}: {why}", path.display())]
    TokenizerFile {
        /// Catalog name of the model.
        model: String,
        /// The tokenizer file, below the model's directory.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The template renders the case's messages as a prompt of no tokens.
    #[error(
        "model `{model}` case `{case}`: the chat template {template} renders the case's messages as an empty prompt"
    )]
    EmptyPrompt {
        /// Catalog name of the model.
        model: String,
        /// Name of the chat case.
        case: String,
        /// The template file, as a person finds it.
        template: String,
    },
    /// The longest prompt plus `request.max_new_tokens` exceeds the built KV cache.
    #[error(
        "model `{model}` case `{case}`: the prompt ({tokens} tokens) + request.max_new_tokens ({max_new_tokens}) exceeds the KV-cache length {limit} (build.kv_cache_length); shorten the prompt, lower request.max_new_tokens, or raise build.kv_cache_length"
    )]
    TooLong {
        /// Catalog name of the model.
        model: String,
        /// Name of the case.
        case: String,
        /// Tokens of the case's longest prompt.
        tokens: u64,
        /// The case's `request.max_new_tokens`.
        max_new_tokens: u64,
        /// The built KV-cache length (`build.kv_cache_length`), in tokens.
        limit: u64,
    },
    /// The case's workload identity cannot be refreshed with the rendered prompt.
    #[error(transparent)]
    Case(#[from] case::CaseError),
}

/// Fills in a chat case's rendered prompt (`request.prompt`), its token count and template, and
/// refreshes the workload identity. `tokenizer` is the worker form of the profile's tokenizer
/// (`bytes`, `file:PATH`, or a `hub:` spec still waiting for its download, in which case nothing is
/// done yet and `Ok(false)` says so). Other cases are left alone (`Ok(true)`). `Err` says what is
/// wrong and how to fix it: no template, or a template that fails to render (the engine's message
/// with the template line).
pub fn render_case(
    profile: &Profile,
    tokenizer: Option<&str>,
    fetch: Fetch,
    resolved: &mut ResolvedCase,
) -> Result<bool, PromptError> {
    let Some(prompt) = &resolved.chat else {
        return Ok(true);
    };
    if prompt.prompt.is_some() {
        return Ok(true);
    }
    if sources::tokenizer_pending(tokenizer) {
        return Ok(false);
    }
    let (jinja, config) = template_files(profile, tokenizer, fetch)?;
    let found = chat::template_from_files(Some(&jinja), Some(&config)).map_err(|reason| {
        PromptError::TemplateFiles {
            model: profile.name.clone(),
            reason,
        }
    })?;
    let hub = matches!(
        profile.tokenizer.as_deref().map(TokenizerSpec::parse),
        Some(Ok(TokenizerSpec::Hub(_)))
    );
    if found.is_none() && hub && fetch == Fetch::CacheOnly && !sources::hf_offline() {
        // The hub repository's template files may just not be downloaded yet.
        return Ok(false);
    }
    let Some(template) = found else {
        return Err(PromptError::NoTemplate {
            model: profile.name.clone(),
            case: resolved.case.clone(),
            jinja,
            config,
        });
    };
    let rendered = render(&template, prompt).map_err(|source| PromptError::Render {
        model: profile.name.clone(),
        case: resolved.case.clone(),
        source,
    })?;
    let tokens = Tokenizer::load(tokenizer, Some(profile.dir()))
        .and_then(|t| t.prompt_ids(&rendered, true))
        .map_err(|e| tokenizer_error(profile, &e))?;
    if tokens.is_empty() {
        return Err(PromptError::EmptyPrompt {
            model: profile.name.clone(),
            case: resolved.case.clone(),
            template: template.source.clone(),
        });
    }
    let source = template_source(profile, &template);
    if let Some(chat) = resolved.chat.as_mut() {
        chat.template_source = Some(source);
        chat.template_sha256 = Some(trtmc_core::hash::sha256_hex(template.text.as_bytes()));
        chat.prompt = Some(rendered.clone());
        chat.prompt_tokens = Some(tokens.len() as u64);
    }
    resolved.request.insert(
        chat::PROMPT_FIELD.to_string(),
        Sourced::new(rendered.into(), Source::Case),
    );
    case::refresh_identity(
        profile,
        resolved,
        trtmc_runtime::registry::declared_settings(),
    )?;
    Ok(true)
}

/// Checks before any build or worker what the worker would otherwise refuse once started: the
/// profile's tokenizer file is JSON (a Hugging Face tokenizer.json), and a generation case's longest
/// prompt plus `request.max_new_tokens` fits the KV cache it builds (`build.kv_cache_length`, when the
/// case sets one). A `hub:` tokenizer still waiting for its download is checked by the worker.
pub fn check_prompt_fits(
    profile: &Profile,
    tokenizer: Option<&str>,
    resolved: &ResolvedCase,
) -> Result<(), PromptError> {
    // A tokenizer file is JSON (a Hugging Face tokenizer.json), whatever the operation.
    if let Some(Ok(TokenizerSpec::File(rel))) = tokenizer.map(TokenizerSpec::parse) {
        let path = profile.dir().join(rel);
        let refuse = |why: String| PromptError::TokenizerFile {
            model: profile.name.clone(),
            path: path.clone(),
            why,
        };
        let bytes = trtmc_core::limits::read_outside(&path, trtmc_core::limits::FileKind::Text)
            .map_err(|e| refuse(e.to_string()))?;
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| {
            refuse(format!(
                "it is not JSON ({e}); give a Hugging Face tokenizer.json"
            ))
        })?;
    }
    let Some(limit) = resolved
        .build
        .get("kv_cache_length")
        .and_then(|v| v.value.as_u64())
    else {
        return Ok(());
    };
    let Some(tokens) = longest_prompt_tokens(profile, tokenizer, resolved)? else {
        return Ok(());
    };
    let max_new_tokens = resolved
        .request_value("max_new_tokens")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if tokens + max_new_tokens > limit {
        return Err(PromptError::TooLong {
            model: profile.name.clone(),
            case: resolved.case.clone(),
            tokens,
            max_new_tokens,
            limit,
        });
    }
    Ok(())
}

/// The tokens of a generation case's longest prompt (`request.prompt` or its rendered chat, and each
/// sample's); `None` when the case does not generate or its hub tokenizer waits for its download.
pub(crate) fn longest_prompt_tokens(
    profile: &Profile,
    tokenizer: Option<&str>,
    resolved: &ResolvedCase,
) -> Result<Option<u64>, PromptError> {
    let generates = matches!(resolved.operation.as_str(), "generate" | "generate_vl");
    if !generates || sources::tokenizer_pending(tokenizer) {
        return Ok(None);
    }
    let loaded = Tokenizer::load(tokenizer, Some(profile.dir()))
        .map_err(|e| tokenizer_error(profile, &e))?;
    let samples = resolved
        .request_value("samples")
        .and_then(serde_json::Value::as_array);
    let prompts = resolved
        .request_value(chat::PROMPT_FIELD)
        .into_iter()
        .chain(
            samples
                .into_iter()
                .flatten()
                .filter_map(|s| s.get(chat::PROMPT_FIELD)),
        )
        .filter_map(serde_json::Value::as_str);
    let mut longest = 0;
    for prompt in prompts {
        let tokens = loaded
            .prompt_ids(prompt, resolved.chat.is_some())
            .map_err(|e| tokenizer_error(profile, &e))?
            .len() as u64;
        longest = longest.max(tokens);
    }
    Ok(Some(longest))
}

/// The tokenizer's error (an error chain) for `profile`.
fn tokenizer_error(profile: &Profile, e: &anyhow::Error) -> PromptError {
    PromptError::Tokenizer {
        model: profile.name.clone(),
        reason: format!("{e:#}"),
    }
}

fn render(template: &ChatTemplate, prompt: &chat::ChatPrompt) -> Result<String, chat::ChatError> {
    chat::render(template, &prompt.messages, prompt.add_generation_prompt)
}

/// Where `chat_template.jinja` and `tokenizer_config.json` are looked for: beside the tokenizer file
/// (for a hub tokenizer, its repository's files in the cache, downloaded first when `fetch` allows),
/// or beside MODEL.toml for the byte tokenizer of the generated models.
fn template_files(
    profile: &Profile,
    tokenizer: Option<&str>,
    fetch: Fetch,
) -> Result<(PathBuf, PathBuf), PromptError> {
    let spec = tokenizer
        .map(TokenizerSpec::parse)
        .transpose()
        .map_err(|source| PromptError::TokenizerSpec {
            model: profile.name.clone(),
            source,
        })?;
    let dir: PathBuf = match spec {
        Some(TokenizerSpec::File(path)) => profile
            .dir()
            .join(path)
            .parent()
            .map_or_else(|| profile.dir().to_path_buf(), Path::to_path_buf),
        None | Some(TokenizerSpec::Bytes) | Some(TokenizerSpec::Hub(_)) => {
            profile.dir().to_path_buf()
        }
    };
    let beside = |name: &str| {
        sources::hub_tokenizer_sibling(profile, name, fetch).unwrap_or_else(|| dir.join(name))
    };
    Ok((
        beside(chat::TEMPLATE_FILE),
        beside(chat::TOKENIZER_CONFIG_FILE),
    ))
}

/// The template's origin as resolved-case.json records it: relative to MODEL.toml when it lies in the
/// catalog (so a result does not carry this machine's paths), else the path (a hub cache file).
fn template_source(profile: &Profile, template: &ChatTemplate) -> String {
    Path::new(&template.source)
        .strip_prefix(profile.dir())
        .map_or_else(|_| template.source.clone(), |rel| rel.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_looked_for_beside_the_tokenizer_file_or_the_manifest() {
        let t = tempfile::tempdir().expect("tmp");
        let d = t.path().join("m");
        std::fs::create_dir_all(d.join("tok")).expect("mkdir");
        std::fs::write(d.join("tok/tokenizer.json"), "{}").expect("write");
        std::fs::write(
            d.join("MODEL.toml"),
            "name = \"m\"\ntask_strategy = \"text_generation\"\ntokenizer = \"file:tok/tokenizer.json\"\ntest_manifests = [\"c.toml\"]\n[source]\nbuiltin = \"tiny-gpt\"\n",
        )
        .expect("write");
        std::fs::write(
            d.join("c.toml"),
            "[[case]]\nname = \"c\"\n[case.request]\nprompt = \"x\"\n",
        )
        .expect("write");
        let catalog = trtmc_core::catalog::Catalog::load(t.path()).expect("load");
        let p = catalog.require("m").expect("m");
        let (jinja, config) =
            template_files(p, Some("file:tok/tokenizer.json"), Fetch::CacheOnly).expect("files");
        assert!(jinja.ends_with("m/tok/chat_template.jinja"), "{jinja:?}");
        assert!(
            config.ends_with("m/tok/tokenizer_config.json"),
            "{config:?}"
        );
        let (jinja, _) = template_files(p, Some("bytes"), Fetch::CacheOnly).expect("files");
        assert!(jinja.ends_with("m/chat_template.jinja"), "{jinja:?}");
        let template = ChatTemplate {
            text: String::new(),
            source: d.join("tok/chat_template.jinja").display().to_string(),
            bos_token: None,
            eos_token: None,
        };
        assert_eq!(template_source(p, &template), "tok/chat_template.jinja");
    }
}
