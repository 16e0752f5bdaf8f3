//! Tokenizers of the text operations.
//!
//! - `bytes`: one token per UTF-8 byte (id = byte + 3), with 0 = padding, 1 = start (CLS/BOS),
//!   2 = end (SEP/EOS); vocabulary 259. The generated models use it.
//! - `file:PATH`: a Hugging Face `tokenizer.json` (BPE, WordPiece, Unigram, …) read with the
//!   `tokenizers` crate; PATH is relative to MODEL.toml unless absolute. The runner turns a profile's
//!   `hub:FILE` into `file:` with the cached path before the worker starts.
//!
//! Runners add the start/end/padding tokens themselves ([`Tokenizer::bos`] …), so encoding never adds
//! the file's special tokens (its post-processor's template is not applied).

use std::path::Path;

use anyhow::{Context, bail};
use trtmc_core::catalog::TokenizerSpec;

/// The byte vocabulary's padding id.
const PAD: i64 = 0;
/// The byte vocabulary's begin-of-sequence id.
const BOS: i64 = 1;
/// The byte vocabulary's end-of-sequence id.
const EOS: i64 = 2;
const BYTE_OFFSET: i64 = 3;

/// Special tokens looked up by content in a tokenizer file, most specific first. GPT-2 style
/// vocabularies have one `<|endoftext|>` for all three roles.
const BOS_TOKENS: &[&str] = &[
    "<s>",
    "[CLS]",
    "<|begin_of_text|>",
    "<bos>",
    "<|startoftext|>",
    "<|endoftext|>",
];
const EOS_TOKENS: &[&str] = &["</s>", "[SEP]", "<|end_of_text|>", "<eos>", "<|endoftext|>"];
const PAD_TOKENS: &[&str] = &["<pad>", "[PAD]", "<|pad|>", "<|endoftext|>"];

/// Turns text into token ids and back for the text operations.
#[derive(Debug, Clone)]
pub enum Tokenizer {
    /// The embedded models' byte vocabulary: each byte is one token after the special ids.
    Bytes,
    /// A Hugging Face `tokenizer.json`.
    File(Box<FileTokenizer>),
}

/// A `tokenizer.json` with the ids of the special tokens the runners add.
#[derive(Debug, Clone)]
pub struct FileTokenizer {
    inner: tokenizers::Tokenizer,
    /// The file, absolute: a reference runner reads the same one.
    path: std::path::PathBuf,
    bos: i64,
    eos: i64,
    pad: i64,
}

impl Tokenizer {
    /// The tokenizer a worker request names (`bytes` when none); `manifest_dir` (the directory of
    /// MODEL.toml) anchors relative `file:` paths.
    pub fn load(name: Option<&str>, manifest_dir: Option<&Path>) -> anyhow::Result<Self> {
        let Some(name) = name else {
            return Ok(Tokenizer::Bytes);
        };
        match TokenizerSpec::parse(name).map_err(anyhow::Error::msg)? {
            TokenizerSpec::Bytes => Ok(Tokenizer::Bytes),
            TokenizerSpec::File(rel) => {
                let path = match manifest_dir {
                    Some(dir) => dir.join(rel),
                    None => rel,
                };
                Ok(Tokenizer::File(Box::new(FileTokenizer::open(&path)?)))
            }
            TokenizerSpec::Hub(_) => bail!(
                "tokenizer `{name}` was not resolved to a cached file before the worker started (a runner bug: resolve hub: tokenizers with the model source)"
            ),
        }
    }

    /// The id that starts a sequence.
    pub fn bos(&self) -> i64 {
        match self {
            Tokenizer::Bytes => BOS,
            Tokenizer::File(f) => f.bos,
        }
    }

    /// The id that ends generation.
    pub fn eos(&self) -> i64 {
        match self {
            Tokenizer::Bytes => EOS,
            Tokenizer::File(f) => f.eos,
        }
    }

    /// The id that pads shorter sequences of a batch.
    pub fn pad(&self) -> i64 {
        match self {
            Tokenizer::Bytes => PAD,
            Tokenizer::File(f) => f.pad,
        }
    }

    /// What a reference runner needs to tokenize as this tokenizer does: `{"kind": "bytes"}` or
    /// `{"kind": "file", "path": ABSOLUTE}`, with the `bos`, `eos` and `pad` ids the runners add.
    pub fn reference_spec(&self) -> serde_json::Value {
        let mut spec = match self {
            Tokenizer::Bytes => serde_json::json!({"kind": "bytes"}),
            Tokenizer::File(f) => {
                serde_json::json!({"kind": "file", "path": f.path.to_string_lossy()})
            }
        };
        spec["bos"] = self.bos().into();
        spec["eos"] = self.eos().into();
        spec["pad"] = self.pad().into();
        spec
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> anyhow::Result<Vec<i64>> {
        match self {
            Tokenizer::Bytes => Ok(text.bytes().map(|b| i64::from(b) + BYTE_OFFSET).collect()),
            Tokenizer::File(f) => {
                let encoding = f
                    .inner
                    .encode(text, false)
                    .map_err(|e| anyhow::anyhow!("cannot tokenize {text:?}: {e}"))?;
                Ok(encoding.get_ids().iter().map(|&i| i64::from(i)).collect())
            }
        }
    }

    /// The ids a generator is fed for a prompt: a completion prompt gets the start token first; a chat
    /// prompt is a rendered chat template, which wrote the special tokens it wants (its `bos_token`
    /// among them) itself, as `transformers`' `apply_chat_template` tokenizes it.
    pub fn prompt_ids(&self, text: &str, chat: bool) -> anyhow::Result<Vec<i64>> {
        let mut ids = if chat { Vec::new() } else { vec![self.bos()] };
        ids.extend(self.encode(text)?);
        Ok(ids)
    }

    /// Text of `ids`; special tokens are skipped and invalid UTF-8 replaced.
    pub fn decode(&self, ids: &[i64]) -> String {
        match self {
            Tokenizer::Bytes => {
                let bytes: Vec<u8> = ids
                    .iter()
                    .filter(|&&i| (BYTE_OFFSET..BYTE_OFFSET + 256).contains(&i))
                    .map(|&i| (i - BYTE_OFFSET) as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Tokenizer::File(f) => {
                // Ids outside the vocabulary (a model larger than its tokenizer) are skipped by
                // the decoder; negative ones here.
                let ids: Vec<u32> = ids.iter().filter_map(|&i| u32::try_from(i).ok()).collect();
                f.inner
                    .decode(&ids, true)
                    .unwrap_or_else(|e| format!("<cannot decode: {e}>"))
            }
        }
    }
}

impl FileTokenizer {
    fn open(path: &Path) -> anyhow::Result<Self> {
        let bytes = trtmc_core::limits::read_outside(path, trtmc_core::limits::FileKind::Text)
            .with_context(|| format!("cannot read tokenizer {}", path.display()))?;
        let inner = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| {
                format!(
                    "cannot read tokenizer {} (a Hugging Face tokenizer.json is expected)",
                    path.display()
                )
            })?;
        let find = |role: &str, names: &[&str]| -> anyhow::Result<i64> {
            names
                .iter()
                .find_map(|n| inner.token_to_id(n))
                .map(i64::from)
                .with_context(|| {
                    format!(
                        "tokenizer {} has no {role} token (looked for {})",
                        path.display(),
                        names.join(", ")
                    )
                })
        };
        let bos = find("start", BOS_TOKENS)?;
        let eos = find("end", EOS_TOKENS)?;
        let pad = find("padding", PAD_TOKENS).unwrap_or(eos);
        Ok(Self {
            inner,
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            bos,
            eos,
            pad,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let t = Tokenizer::Bytes;
        let ids = t.encode("héllo").expect("encode");
        assert_eq!(ids.len(), 6);
        assert_eq!(ids[0], i64::from(b'h') + 3);
        assert_eq!(t.decode(&[BOS, ids[0], EOS]), "h");
        assert_eq!(t.decode(&ids), "héllo");
        assert!(Tokenizer::load(Some("wordpiece"), None).is_err());
        assert_eq!((t.pad(), t.bos(), t.eos()), (PAD, BOS, EOS));
        assert_eq!(
            t.reference_spec(),
            serde_json::json!({"kind": "bytes", "bos": BOS, "eos": EOS, "pad": PAD})
        );
        // A chat prompt is fed as its template wrote it; a completion gets the start token first.
        assert_eq!(
            t.prompt_ids("hi", false).expect("completion"),
            [BOS, 107, 108]
        );
        assert_eq!(t.prompt_ids("hi", true).expect("chat"), [107, 108]);
    }

    /// A WordPiece tokenizer.json in the shape BERT checkpoints ship: lower-casing normalizer,
    /// whitespace/punctuation pre-tokenizer, `##` continuations.
    fn wordpiece_json() -> String {
        let vocab = [
            "[PAD]", "[CLS]", "[SEP]", "[UNK]", "fast", "engine", "##s", "run", "##ning", "!",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), serde_json::Value::from(i)))
            .collect();
        let special = |id: usize, content: &str| {
            serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        };
        serde_json::json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [special(0, "[PAD]"), special(1, "[CLS]"), special(2, "[SEP]"), special(3, "[UNK]")],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": null,
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 100, "vocab": vocab}
        })
        .to_string()
    }

    #[test]
    fn wordpiece_file_encodes_subwords_and_finds_bert_specials() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("tokenizer.json"), wordpiece_json()).expect("write");
        let t = Tokenizer::load(Some("file:tokenizer.json"), Some(dir.path())).expect("load");
        assert_eq!((t.pad(), t.bos(), t.eos()), (0, 1, 2));
        let ids = t.encode("Fast engines running!").expect("encode");
        assert_eq!(ids, vec![4, 5, 6, 7, 8, 9]);
        assert_eq!(t.encode("zebra").expect("encode"), vec![3], "unknown word");
        assert_eq!(t.decode(&[1, 4, 5, 6, 2]), "fast engines");
        // A reference runner is told the same file (absolute) and special ids.
        let spec = t.reference_spec();
        assert_eq!(spec["kind"], "file");
        assert_eq!(
            spec["path"].as_str().map(Path::new),
            Some(dir.path().join("tokenizer.json").as_path())
        );
        assert_eq!(
            (&spec["bos"], &spec["eos"], &spec["pad"]),
            (&1.into(), &2.into(), &0.into())
        );
        // An absolute path ignores the manifest directory.
        let abs = format!("file:{}", dir.path().join("tokenizer.json").display());
        assert!(Tokenizer::load(Some(&abs), Some(Path::new("/nonexistent"))).is_ok());
    }

    #[test]
    fn bad_tokenizer_files_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing =
            Tokenizer::load(Some("file:nope.json"), Some(dir.path())).expect_err("missing file");
        assert!(format!("{missing:#}").contains("nope.json"), "{missing:#}");
        std::fs::write(dir.path().join("bad.json"), "{\"model\": ").expect("write");
        let bad = Tokenizer::load(Some("file:bad.json"), Some(dir.path())).expect_err("malformed");
        assert!(format!("{bad:#}").contains("bad.json"), "{bad:#}");
        let no_specials = wordpiece_json()
            .replace("[CLS]", "[X1]")
            .replace("[SEP]", "[X2]");
        std::fs::write(dir.path().join("plain.json"), no_specials).expect("write");
        let err =
            Tokenizer::load(Some("file:plain.json"), Some(dir.path())).expect_err("no start token");
        assert!(format!("{err:#}").contains("no start token"), "{err:#}");
        let hub = Tokenizer::load(Some("hub:tokenizer.json"), None).expect_err("unresolved");
        assert!(hub.to_string().contains("not resolved"), "{hub}");
    }
}
