//! SHA-256 content hashing for cache keys and case identities.

use sha2::{Digest, Sha256};

/// An incremental SHA-256 whose result is written as lowercase hex.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    /// A hasher that has seen no bytes.
    pub fn new() -> Self {
        Self(Sha256::new())
    }
    /// Adds `bytes` as they are: no length prefix, so two calls hash like one call on both joined.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    /// The SHA-256 of everything added, as 64 lowercase hex digits.
    pub fn finish_hex(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// SHA-256 of `bytes` as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Hasher::new();
    h.update(bytes);
    h.finish_hex()
}

/// Hash of a JSON value in canonical form (object keys sorted, as serde_json's default map does).
pub fn json_hash(value: &serde_json::Value) -> String {
    sha256_hex(value.to_string().as_bytes())
}

/// SHA-256 of a file, streamed.
pub fn file_sha256(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finish_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_file_matches_the_standard_vector() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("m");
        std::fs::write(&p, b"abc").expect("write");
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(file_sha256(&p).expect("hash"), abc);
        assert_eq!(sha256_hex(b"abc"), abc);
    }
}
