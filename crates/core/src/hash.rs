//! SHA-256 content hashing for cache keys and case identities.

use sha2::{Digest, Sha256};

#[derive(Default)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Self {
        Self(Sha256::new())
    }
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    /// Adds a length-prefixed field so that ("ab","c") and ("a","bc") hash differently.
    pub fn field(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }
    pub fn finish_hex(self) -> String {
        hex::encode(self.0.finalize())
    }
}

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
