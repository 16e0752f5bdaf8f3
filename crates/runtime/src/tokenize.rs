//! Tokenizers of the text operations. `bytes`: one token per UTF-8 byte (id = byte + 3), with
//! 0 = padding, 1 = start (CLS/BOS), 2 = end (SEP/EOS); vocabulary 259. The built-in models use it.
//!
//! Runners ask the tokenizer for its start, end and padding ids ([`Tokenizer::bos`] …) and treat encoding
//! as fallible, so that a file-backed tokenizer (tokenizer.json through the `tokenizers` crate) can be added
//! as another variant without touching them.

use std::path::Path;

use anyhow::bail;

pub const PAD: i64 = 0;
pub const BOS: i64 = 1;
pub const EOS: i64 = 2;
const BYTE_OFFSET: i64 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tokenizer {
    Bytes,
}

impl Tokenizer {
    /// The built-in tokenizer `name` (`bytes`, the default).
    pub fn from_name(name: Option<&str>) -> anyhow::Result<Self> {
        Self::load(name, None)
    }

    /// The tokenizer a profile names; `manifest_dir` (the directory of MODEL.toml) anchors file-backed
    /// tokenizers.
    pub fn load(name: Option<&str>, _manifest_dir: Option<&Path>) -> anyhow::Result<Self> {
        match name.unwrap_or("bytes") {
            "bytes" => Ok(Tokenizer::Bytes),
            other => bail!("unknown tokenizer `{other}` (known: bytes)"),
        }
    }

    pub fn bos(&self) -> i64 {
        BOS
    }

    pub fn eos(&self) -> i64 {
        EOS
    }

    pub fn pad(&self) -> i64 {
        PAD
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> anyhow::Result<Vec<i64>> {
        match self {
            Tokenizer::Bytes => Ok(text.bytes().map(|b| i64::from(b) + BYTE_OFFSET).collect()),
        }
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
        }
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
        assert!(Tokenizer::from_name(Some("wordpiece")).is_err());
        assert_eq!((t.pad(), t.bos(), t.eos()), (PAD, BOS, EOS));
    }
}
