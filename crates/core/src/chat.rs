//! Chat test cases: a message list rendered through the model's own chat template, so a chat workload
//! measures the prompt the model's users send rather than the raw text of the turns.
//!
//! A case asks for it with `request.mode = "chat"` and its `messages`; the template comes from the
//! files beside the tokenizer, as Hugging Face `transformers` reads them: `chat_template.jinja` when
//! present, else the `chat_template` of `tokenizer_config.json` (whose `bos_token` / `eos_token` the
//! template sees either way). It is rendered with minijinja and the Python methods of minijinja-contrib
//! (`.strip()`, `.items()`, …) with the settings `transformers` uses (`trim_blocks`, `lstrip_blocks`,
//! `raise_exception`).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::{FileKind, read_outside_text};

/// The request field that selects the generation mode, and its two values.
pub const MODE_FIELD: &str = "mode";
/// `request.mode` of a chat case: the prompt is rendered from `messages` with the chat template.
pub const MODE_CHAT: &str = "chat";
/// `request.mode` of a completion case (the default): `request.prompt` is sent as written.
pub const MODE_COMPLETION: &str = "completion";
/// The request field a chat case's rendered prompt goes to (the one a completion case gives).
pub const PROMPT_FIELD: &str = "prompt";
/// The separate template file, which wins over `tokenizer_config.json`'s.
pub const TEMPLATE_FILE: &str = "chat_template.jinja";
/// The Hugging Face tokenizer settings file whose `chat_template`, `bos_token` and `eos_token` are read.
pub const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";
/// Roles a message may have.
pub const ROLES: &[&str] = &["system", "user", "assistant"];

/// One turn of a chat case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// Who speaks: one of [`ROLES`].
    pub role: String,
    /// The turn's text.
    pub content: String,
}

/// What a chat case resolved to; recorded in resolved-case.json and hashed into the workload identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatPrompt {
    /// The case's turns, in order.
    pub messages: Vec<ChatMessage>,
    /// Whether the prompt ends with the assistant's header (`transformers`' flag of the same name).
    pub add_generation_prompt: bool,
    /// Where the template came from (a file path, or `hub:REPO/FILE@REVISION`); `None` until rendered.
    #[serde(default)]
    pub template_source: Option<String>,
    /// SHA-256 of the template text.
    #[serde(default)]
    pub template_sha256: Option<String>,
    /// The rendered prompt: what the worker tokenizes (it is also the case's `request.prompt`).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Tokens of the rendered prompt, special tokens of the template included; `None` while a hub
    /// tokenizer waits for its download (a dry run without a cache).
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
}

/// A chat template with the special tokens it may refer to.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTemplate {
    /// The Jinja source of the template.
    pub text: String,
    /// The file it was read from, as a person finds it.
    pub source: String,
    /// The tokenizer's beginning-of-sequence token, which the template may insert (`bos_token`).
    pub bos_token: Option<String>,
    /// The tokenizer's end-of-sequence token, which the template may insert (`eos_token`).
    pub eos_token: Option<String>,
}

/// The chat template stored beside a tokenizer: `chat_template.jinja` (if given and present), else
/// `tokenizer_config.json`'s `chat_template`. `Ok(None)` when neither carries one.
pub fn template_from_files(
    jinja: Option<&Path>,
    config: Option<&Path>,
) -> Result<Option<ChatTemplate>, String> {
    let config_json: Option<Value> = match config.filter(|p| p.is_file()) {
        None => None,
        Some(path) => {
            let text = read_outside_text(path, FileKind::Text)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Some(
                serde_json::from_str(&text)
                    .map_err(|e| format!("{} is not JSON: {e}", path.display()))?,
            )
        }
    };
    let special = |name: &str| -> Option<String> {
        match config_json.as_ref()?.get(name)? {
            Value::String(s) => Some(s.clone()),
            // An AddedToken written out: {"content": "<s>", "lstrip": false, …}.
            Value::Object(o) => o.get("content")?.as_str().map(str::to_owned),
            _ => None,
        }
    };
    let (bos_token, eos_token) = (special("bos_token"), special("eos_token"));
    if let Some(path) = jinja.filter(|p| p.is_file()) {
        let text = read_outside_text(path, FileKind::Text)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        return Ok(Some(ChatTemplate {
            text,
            source: path.display().to_string(),
            bos_token,
            eos_token,
        }));
    }
    let (Some(path), Some(json)) = (config, &config_json) else {
        return Ok(None);
    };
    let text = match json.get("chat_template") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        // Several named templates: the one `apply_chat_template` uses without a name.
        Some(Value::Array(named)) => {
            let find = |name: &str| {
                named.iter().find_map(|t| {
                    (t.get("name")?.as_str()? == name)
                        .then(|| t.get("template")?.as_str().map(str::to_owned))
                        .flatten()
                })
            };
            find("default").ok_or_else(|| {
                let names: Vec<&str> = named
                    .iter()
                    .filter_map(|t| t.get("name")?.as_str())
                    .collect();
                format!(
                    "{}: chat_template lists named templates ({}) but none called `default`",
                    path.display(),
                    names.join(", ")
                )
            })?
        }
        Some(other) => {
            return Err(format!(
                "{}: chat_template is {other}, expected a string or a list of {{name, template}}",
                path.display()
            ));
        }
    };
    Ok(Some(ChatTemplate {
        text,
        source: path.display().to_string(),
        bos_token,
        eos_token,
    }))
}

/// Why a chat template does not render, or a case's chat fields do not fit together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChatError {
    /// The template engine refused the template or failed while rendering it.
    #[error(
        "chat template {template}{}: {detail}",
        line.map(|l| format!(" at line {l}")).unwrap_or_default()
    )]
    Engine {
        /// Where the template came from, as a person finds it.
        template: String,
        /// The template line the engine points at, if it names one.
        line: Option<usize>,
        /// The engine's message.
        detail: String,
    },
    /// The rendered prompt is not valid UTF-8.
    #[error("chat template {template}: its output is not UTF-8")]
    NotUtf8 {
        /// Where the template came from.
        template: String,
    },
    /// The rendered prompt grew past the size limit of a prompt.
    #[error(
        "chat template {template}: its output passed {most} bytes, the limit of a rendered prompt (trtmc_core::limits::MOST_TEMPLATE_OUTPUT_BYTES); fix the template's loops"
    )]
    TooLong {
        /// Where the template came from.
        template: String,
        /// The limit, in bytes.
        most: usize,
    },
    /// Rendering took more steps than the engine's budget (e.g. a runaway loop).
    #[error(
        "chat template {template}: rendering ran past its budget of {fuel} steps (trtmc_core::limits::TEMPLATE_FUEL); fix the template's loops"
    )]
    OutOfFuel {
        /// Where the template came from.
        template: String,
        /// The budget, in engine steps.
        fuel: u64,
    },
    /// A case gives `messages` for an operation that has no chat mode.
    #[error(
        "test case field `messages`: operation `{operation}` has no chat mode (only text generation renders a chat template); remove `messages`"
    )]
    NoChatMode {
        /// The operation's name.
        operation: String,
    },
    /// A `request.mode` other than `chat` or `completion`.
    #[error(
        "request.mode = `{mode}`: give `{}` (render `messages` with the model's chat template) or `{}` (the raw `prompt`)",
        MODE_CHAT,
        MODE_COMPLETION
    )]
    UnknownMode {
        /// The mode as given.
        mode: String,
    },
    /// A chat case without `messages`.
    #[error(
        "request.mode = `{}` needs the test case field `messages` (a list of {{role, content}} turns)",
        MODE_CHAT
    )]
    NoMessages,
    /// `messages` given in a case that is not in chat mode.
    #[error(
        "test case field `messages` is rendered only in chat mode: set request.mode = \"{}\" (or remove `messages` and give request.prompt)",
        MODE_CHAT
    )]
    MessagesWithoutChat,
    /// A chat case that also gives `request.prompt`, which its messages would replace.
    #[error(
        "request.prompt and `messages` both given: a chat case's prompt is rendered from its messages; remove request.prompt"
    )]
    PromptAndMessages,
    /// A message whose role is not one of [`ROLES`].
    #[error("messages[{index}].role = `{role}`: give one of {}", ROLES.join(", "))]
    Role {
        /// Index of the message in `messages`, from 0.
        index: usize,
        /// The role as given.
        role: String,
    },
}

/// Renders `messages` through `template`. `Err` is the engine's message with the template line, or
/// the budget the rendering ran past: the engine's fuel ([`crate::limits::TEMPLATE_FUEL`]) or the
/// output's size ([`crate::limits::MOST_TEMPLATE_OUTPUT_BYTES`]), so a runaway template stops at
/// once instead of running for minutes or filling memory.
pub fn render(
    template: &ChatTemplate,
    messages: &[ChatMessage],
    add_generation_prompt: bool,
) -> Result<String, ChatError> {
    let mut env = minijinja::Environment::new();
    // The settings of transformers' template environment.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    minijinja_contrib::add_to_environment(&mut env);
    env.add_function("raise_exception", raise_exception);
    env.set_fuel(Some(crate::limits::TEMPLATE_FUEL));
    let name = "chat_template";
    env.add_template(name, &template.text)
        .map_err(|e| engine_error(&template.source, &e))?;
    let ctx = minijinja::context! {
        messages => messages,
        add_generation_prompt => add_generation_prompt,
        bos_token => template.bos_token.clone().unwrap_or_default(),
        eos_token => template.eos_token.clone().unwrap_or_default(),
    };
    let mut out = CappedOutput::default();
    let rendered = env
        .get_template(name)
        .and_then(|t| t.render_captured_to(ctx, &mut out).map(|_| ()));
    match rendered {
        Ok(()) => String::from_utf8(out.bytes).map_err(|_| ChatError::NotUtf8 {
            template: template.source.clone(),
        }),
        Err(_) if out.overflowed => Err(ChatError::TooLong {
            template: template.source.clone(),
            most: crate::limits::MOST_TEMPLATE_OUTPUT_BYTES,
        }),
        Err(e) if e.kind() == minijinja::ErrorKind::OutOfFuel => Err(ChatError::OutOfFuel {
            template: template.source.clone(),
            fuel: crate::limits::TEMPLATE_FUEL,
        }),
        Err(e) => Err(engine_error(&template.source, &e)),
    }
}

/// A rendered prompt's bytes, refusing more than [`crate::limits::MOST_TEMPLATE_OUTPUT_BYTES`].
#[derive(Default)]
struct CappedOutput {
    bytes: Vec<u8>,
    overflowed: bool,
}

impl std::io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > crate::limits::MOST_TEMPLATE_OUTPUT_BYTES {
            self.overflowed = true;
            return Err(std::io::Error::other("the rendered prompt is too long"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `raise_exception(message)`, the function templates call to refuse a conversation.
fn raise_exception(message: String) -> Result<String, minijinja::Error> {
    Err(minijinja::Error::new(
        minijinja::ErrorKind::InvalidOperation,
        format!("the template raised an exception: {message}"),
    ))
}

fn engine_error(source: &str, e: &minijinja::Error) -> ChatError {
    ChatError::Engine {
        template: source.to_string(),
        line: e.line(),
        detail: e
            .detail()
            .map(str::to_owned)
            .unwrap_or_else(|| e.kind().to_string()),
    }
}

/// Checks a case's chat fields against its request and operation; `Ok(true)` for a chat case.
/// `has_mode`: whether the operation declares `request.mode`.
pub fn check_case(
    has_mode: bool,
    operation: &str,
    messages: &[ChatMessage],
    mode: Option<&Value>,
    prompt_given: bool,
) -> Result<bool, ChatError> {
    if !has_mode {
        return match messages.is_empty() {
            true => Ok(false),
            false => Err(ChatError::NoChatMode {
                operation: operation.to_string(),
            }),
        };
    }
    let chat = match mode.and_then(Value::as_str) {
        Some(MODE_CHAT) => true,
        Some(MODE_COMPLETION) | None => false,
        Some(other) => {
            return Err(ChatError::UnknownMode {
                mode: other.to_string(),
            });
        }
    };
    if chat && messages.is_empty() {
        return Err(ChatError::NoMessages);
    }
    if !chat && !messages.is_empty() {
        return Err(ChatError::MessagesWithoutChat);
    }
    if chat && prompt_given {
        return Err(ChatError::PromptAndMessages);
    }
    for (i, m) in messages.iter().enumerate() {
        if !ROLES.contains(&m.role.as_str()) {
            return Err(ChatError::Role {
                index: i,
                role: m.role.clone(),
            });
        }
    }
    Ok(chat)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ChatML template as Qwen and many fine-tunes ship it.
    const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    fn turns() -> Vec<ChatMessage> {
        vec![
            ChatMessage {
                role: "system".into(),
                content: "You are terse.".into(),
            },
            ChatMessage {
                role: "user".into(),
                content: "Name a fox.".into(),
            },
        ]
    }

    fn template(text: &str) -> ChatTemplate {
        ChatTemplate {
            text: text.into(),
            source: "t.jinja".into(),
            bos_token: Some("<s>".into()),
            eos_token: Some("</s>".into()),
        }
    }

    #[test]
    fn chatml_renders_the_expected_text_and_honours_add_generation_prompt() {
        let t = template(CHATML);
        let expected = "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nName a fox.<|im_end|>\n";
        assert_eq!(render(&t, &turns(), false).expect("render"), expected);
        assert_eq!(
            render(&t, &turns(), true).expect("render"),
            format!("{expected}<|im_start|>assistant\n")
        );
    }

    #[test]
    fn hf_idioms_render_special_tokens_python_methods_and_block_trimming() {
        // A Llama-2-like template: bos_token, .strip(), raise_exception on a bad order, and block
        // tags on their own lines that trim_blocks/lstrip_blocks remove.
        let text = "{{ bos_token }}\n{% for m in messages %}\n  {% if m.role == 'assistant' and loop.first %}{{ raise_exception('start with a user turn') }}{% endif %}\n[{{ m.role.upper() }}] {{ m.content.strip() }}{{ eos_token }}\n{% endfor %}\n";
        let t = template(text);
        let messages = vec![ChatMessage {
            role: "user".into(),
            content: "  hi  ".into(),
        }];
        assert_eq!(
            render(&t, &messages, true).expect("render"),
            "<s>\n[USER] hi</s>\n"
        );
        let wrong = vec![ChatMessage {
            role: "assistant".into(),
            content: "x".into(),
        }];
        let e = render(&t, &wrong, true)
            .expect_err("raise_exception")
            .to_string();
        assert!(
            e.contains("start with a user turn") && e.contains("t.jinja at line 3"),
            "{e}"
        );
    }

    #[test]
    fn a_template_that_fails_names_the_file_and_line() {
        let e = render(
            &template("ok\n{% for m in messages %}\n{{ m.content | nosuchfilter }}\n{% endfor %}"),
            &turns(),
            true,
        )
        .expect_err("unknown filter")
        .to_string();
        assert!(e.starts_with("chat template t.jinja at line 3:"), "{e}");
        let e = render(&template("{% if %}"), &turns(), true)
            .expect_err("syntax")
            .to_string();
        assert!(e.contains("at line 1"), "{e}");
    }

    #[test]
    fn templates_are_found_beside_the_tokenizer_jinja_first() {
        let dir = tempfile::tempdir().expect("tmp");
        let (jinja, config) = (
            dir.path().join(TEMPLATE_FILE),
            dir.path().join(TOKENIZER_CONFIG_FILE),
        );
        assert_eq!(template_from_files(Some(&jinja), Some(&config)), Ok(None));
        std::fs::write(
            &config,
            r#"{"bos_token": {"content": "<s>"}, "eos_token": "</s>"}"#,
        )
        .expect("write");
        assert_eq!(template_from_files(Some(&jinja), Some(&config)), Ok(None));
        std::fs::write(
            &config,
            r#"{"eos_token": "</s>", "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]}"#,
        )
        .expect("write");
        let t = template_from_files(Some(&jinja), Some(&config))
            .expect("ok")
            .expect("some");
        assert_eq!(
            (t.text.as_str(), t.eos_token.as_deref()),
            ("D", Some("</s>"))
        );
        std::fs::write(&jinja, "J").expect("write");
        let t = template_from_files(Some(&jinja), Some(&config))
            .expect("ok")
            .expect("some");
        assert_eq!(t.text, "J");
        assert!(t.source.ends_with(TEMPLATE_FILE), "{}", t.source);
        assert_eq!(
            t.eos_token.as_deref(),
            Some("</s>"),
            "special tokens still from the config"
        );
        std::fs::write(&config, "{").expect("write");
        assert!(template_from_files(None, Some(&config)).is_err());
    }

    #[test]
    fn case_checks_name_the_field_and_the_fix() {
        let m = turns();
        let chat = Value::from("chat");
        assert_eq!(
            check_case(true, "generate", &m, Some(&chat), false),
            Ok(true)
        );
        assert_eq!(check_case(true, "generate", &[], None, true), Ok(false));
        let e = check_case(false, "classify", &m, None, false)
            .expect_err("op")
            .to_string();
        assert!(e.contains("`messages`") && e.contains("classify"), "{e}");
        let e = check_case(true, "generate", &[], Some(&chat), false)
            .expect_err("no turns")
            .to_string();
        assert!(e.contains("needs the test case field `messages`"), "{e}");
        let e = check_case(true, "generate", &m, None, false)
            .expect_err("completion")
            .to_string();
        assert!(e.contains("request.mode = \"chat\""), "{e}");
        let e = check_case(true, "generate", &m, Some(&chat), true)
            .expect_err("both")
            .to_string();
        assert!(e.contains("remove request.prompt"), "{e}");
        let e = check_case(true, "generate", &m, Some(&Value::from("dialog")), false)
            .expect_err("mode")
            .to_string();
        assert!(e.contains("request.mode = `dialog`"), "{e}");
        let mut odd = turns();
        odd[1].role = "robot".into();
        let e = check_case(true, "generate", &odd, Some(&chat), false)
            .expect_err("role")
            .to_string();
        assert!(e.contains("messages[1].role"), "{e}");
    }
}
