//! Chat test cases through the real binary (issue 21): the shipped tiny-gpt `chat` case renders its
//! messages with the ChatML template beside MODEL.toml, records the prompt and its token count, and is a
//! workload of its own; a missing or broken template stops the run with exit 3 before any build.

use std::path::Path;
use std::process::Command;

use crate::common::*;

/// What catalog/tiny-gpt/chat_template.jinja makes of the `chat` case's two turns.
const RENDERED: &str = "<|im_start|>system\nYou are a concise assistant.<|im_end|>\n<|im_start|>user\nDescribe the quick brown fox in one line.<|im_end|>\n<|im_start|>assistant\n";

fn shipped_catalog() -> String {
    repo_root().join("catalog").display().to_string()
}

/// The `identity …` of the dry run's `chat:` line.
fn dry_run_identity(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("chat: ")?.split("identity ").nth(1))
        .unwrap_or_else(|| panic!("no chat line with an identity:\n{stdout}"))
        .trim()
        .to_string()
}

#[test]
fn the_shipped_chat_case_records_its_rendered_prompt_and_is_its_own_workload() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    let out_dir = tmp.path().join("out");
    let common_args = [
        "run",
        "--manifest-root",
        &shipped_catalog(),
        "--model",
        "tiny-gpt",
        "--case",
        "chat",
        "--case",
        "greedy",
        "--rounds",
        "1",
        "--warmup",
        "1",
        "--iterations",
        "2",
        "--set",
        "request.max_new_tokens=4",
        "--bundle-cache",
        cache.to_str().expect("utf8"),
    ];
    let mut dry = common_args.to_vec();
    dry.push("--dry-run");
    let planned = run(&dry);
    assert_eq!(code(&planned), 0, "{}", stderr(&planned));
    let plan = stdout(&planned);
    let tokens = RENDERED.len(); // tiny-gpt's tokens are the prompt's bytes
    assert!(
        plan.contains(&format!(
            "chat: {tokens} prompt tokens rendered with chat_template.jinja"
        )),
        "{plan}"
    );
    assert!(!cache.exists(), "a dry run builds nothing");

    let mut real = common_args.to_vec();
    real.extend(["-o", out_dir.to_str().expect("utf8"), "-q"]);
    let measured = run(&real);
    assert_eq!(code(&measured), 0, "{}", stderr(&measured));
    let doc = assert_result_dir_valid(&out_dir);
    let case_dir = |i: usize| out_dir.join(doc["cases"][i]["dir"].as_str().expect("dir"));
    let chat = read_json(&case_dir(0).join("resolved-case.json"));
    let greedy = read_json(&case_dir(1).join("resolved-case.json"));
    assert_eq!(chat["case"], "chat");
    assert_eq!(chat["chat"]["prompt"], RENDERED);
    assert_eq!(chat["chat"]["prompt_tokens"], tokens);
    assert_eq!(chat["chat"]["template_source"], "chat_template.jinja");
    assert_eq!(chat["chat"]["add_generation_prompt"], true);
    assert_eq!(chat["chat"]["messages"][1]["role"], "user");
    assert_eq!(chat["request"]["prompt"]["value"], RENDERED);
    assert_eq!(chat["request"]["mode"]["value"], "chat");
    assert_eq!(greedy["request"]["mode"]["value"], "completion");
    assert!(greedy.get("chat").is_none(), "{greedy}");
    assert_eq!(chat["identity"], dry_run_identity(&plan).as_str());
    assert_ne!(chat["identity"], greedy["identity"]);
    // The worker fed the rendered prompt as it is: no start token of its own in front.
    let text = std::fs::read_to_string(case_dir(0).join("observations.jsonl")).expect("obs");
    for line in text.lines() {
        let o: serde_json::Value = serde_json::from_str(line).expect("json");
        assert_eq!(o["input_tokens"], tokens, "{line}");
    }
}

/// A user catalog with one tiny-gpt chat case, and whatever template files `files` lists.
fn chat_catalog(root: &Path, files: &[(&str, &str)]) {
    let dir = root.join("chatty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("MODEL.toml"),
        "name = \"chatty\"\ntask_strategy = \"text_generation\"\ntokenizer = \"bytes\"\ntest_manifests = [\"cases.toml\"]\n[source]\nbuiltin = \"tiny-gpt\"\nseed = 1\n[build]\nkv_cache_length = 256\n",
    )
    .expect("write MODEL.toml");
    std::fs::write(
        dir.join("cases.toml"),
        "[[case]]\nname = \"chat\"\n[case.request]\nmode = \"chat\"\nmax_new_tokens = 2\n[[case.messages]]\nrole = \"user\"\ncontent = \"hi\"\n",
    )
    .expect("write cases.toml");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write template");
    }
}

fn run_chatty(root: &Path, cache: &Path, out: &Path) -> std::process::Output {
    Command::new(BIN)
        .args([
            "run",
            "--model",
            "chatty",
            "--iterations",
            "1",
            "--warmup",
            "0",
            "-q",
        ])
        .arg("--bundle-cache")
        .arg(cache)
        .arg("-o")
        .arg(out)
        .env("TRTMC_MANIFEST_ROOT", root)
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench")
}

#[test]
fn a_chat_case_without_a_usable_template_is_refused_before_any_build() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (root, cache, out) = (
        tmp.path().join("catalog"),
        tmp.path().join("cache"),
        tmp.path().join("out"),
    );
    chat_catalog(&root, &[]);
    let refused = run_chatty(&root, &cache, &out);
    assert_eq!(code(&refused), 3, "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("model `chatty` has no chat template")
            && message.contains("chat_template.jinja")
            && message.contains("tokenizer_config.json")
            && message.contains("request.mode = \"completion\""),
        "{message}"
    );
    assert!(
        !cache.exists() && !out.exists(),
        "nothing built or measured"
    );

    // The engine's error with the template's line: here the template refuses the conversation.
    chat_catalog(
        &root,
        &[(
            "chat_template.jinja",
            "{% for m in messages %}\n{% if m.role == 'user' %}{{ raise_exception('this model takes no user turns') }}{% endif %}\n{% endfor %}",
        )],
    );
    let broken = run_chatty(&root, &cache, &out);
    assert_eq!(code(&broken), 3, "{}", stderr(&broken));
    let message = stderr(&broken);
    assert!(
        message.contains("chat_template.jinja at line 2")
            && message.contains("this model takes no user turns"),
        "{message}"
    );
    assert!(
        !cache.exists() && !out.exists(),
        "nothing built or measured"
    );

    // tokenizer_config.json's template, as Hugging Face tokenizers ship it, with its special tokens.
    std::fs::remove_file(root.join("chatty/chat_template.jinja")).expect("rm");
    chat_catalog(
        &root,
        &[(
            "tokenizer_config.json",
            r#"{"bos_token": "<s>", "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"}"#,
        )],
    );
    let dry = Command::new(BIN)
        .args(["run", "--model", "chatty", "--dry-run", "--bundle-cache"])
        .arg(&cache)
        .env("TRTMC_MANIFEST_ROOT", &root)
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench");
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert!(
        stdout(&dry).contains(&format!(
            "chat: {} prompt tokens rendered with tokenizer_config.json",
            "<s>[user] hi".len()
        )),
        "{}",
        stdout(&dry)
    );
}

/// A hub model's chat template comes from its repository's `tokenizer_config.json` in the offline hub
/// cache, beside its `tokenizer.json`; the template's `bos_token` is the tokenizer's special token, so
/// the worker feeds exactly the rendered prompt's tokens.
#[test]
fn a_hub_models_template_is_read_from_the_offline_cache_beside_its_tokenizer() {
    let tmp = tempfile::tempdir().expect("tmp");
    let commit = "89abcdef0123456789abcdef0123456789abcdef";
    let repo = tmp.path().join("hf/hub/models--test--chatty");
    let snapshot = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snapshot).expect("mkdir");
    std::fs::create_dir_all(repo.join("refs")).expect("mkdir");
    std::fs::write(repo.join("refs/main"), commit).expect("ref");
    std::fs::write(
        snapshot.join("model.onnx"),
        trtmc_modelgen::generate("tiny-gpt", 1).expect("stand-in decoder"),
    )
    .expect("model");
    // The catalog's WordPiece vocabulary (257 tokens) fits tiny-gpt's embedding table.
    std::fs::copy(
        repo_root().join("catalog/assets/wordpiece/tokenizer.json"),
        snapshot.join("tokenizer.json"),
    )
    .expect("tokenizer");
    std::fs::write(
        snapshot.join("tokenizer_config.json"),
        r#"{"bos_token": "[CLS]", "eos_token": "[SEP]", "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"}"#,
    )
    .expect("config");
    let root = tmp.path().join("catalog");
    let dir = root.join("hub-chat");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("MODEL.toml"),
        "name = \"hub-chat\"\ntask_strategy = \"text_generation\"\ntokenizer = \"hub:tokenizer.json\"\ntest_manifests = [\"cases.toml\"]\n[source]\nhf_repo = \"test/chatty\"\nhf_file = \"model.onnx\"\n[build]\nkv_cache_length = 64\n",
    )
    .expect("write MODEL.toml");
    std::fs::write(
        dir.join("cases.toml"),
        "[[case]]\nname = \"chat\"\n[case.request]\nmode = \"chat\"\nmax_new_tokens = 2\n[[case.messages]]\nrole = \"user\"\ncontent = \"fast engines\"\n",
    )
    .expect("write cases.toml");
    let out = tmp.path().join("out");
    let measured = Command::new(BIN)
        .args([
            "run",
            "--model",
            "hub-chat",
            "--warmup",
            "0",
            "--iterations",
            "2",
            "-q",
        ])
        .arg("--bundle-cache")
        .arg(tmp.path().join("cache"))
        .arg("-o")
        .arg(&out)
        .env("TRTMC_MANIFEST_ROOT", &root)
        .env("HF_HOME", tmp.path().join("hf"))
        .env("HF_HUB_OFFLINE", "1")
        .env("TRTMC_TEST", "1")
        .output()
        .expect("start trtmc-bench");
    assert_eq!(code(&measured), 0, "{}", stderr(&measured));
    let doc = assert_result_dir_valid(&out);
    let case_dir = out.join(doc["cases"][0]["dir"].as_str().expect("dir"));
    let resolved = read_json(&case_dir.join("resolved-case.json"));
    let chat = &resolved["chat"];
    assert_eq!(chat["prompt"], "[CLS]fast engines[SEP]");
    assert!(
        chat["template_source"]
            .as_str()
            .is_some_and(|s| s.ends_with(&format!("{commit}/tokenizer_config.json"))),
        "{chat}"
    );
    // [CLS] fast engines [SEP]: the template's special tokens are the tokenizer's, and no start token
    // is added in front.
    assert_eq!(chat["prompt_tokens"], 4, "{chat}");
    let text = std::fs::read_to_string(case_dir.join("observations.jsonl")).expect("obs");
    for line in text.lines() {
        let o: serde_json::Value = serde_json::from_str(line).expect("json");
        assert_eq!(o["input_tokens"], 4, "{line}");
    }
}
