//! The byte-level vocabulary shared by `tiny-encoder` and `tiny-gpt`.
//!
//! Token id = byte value + 3; ids 0, 1 and 2 are special. 259 ids in all.

/// Padding; masked out by `attention_mask`.
pub const PAD_ID: i64 = 0;
/// Start of a sequence (`[CLS]` for the encoder, BOS for the generator).
pub const BOS_ID: i64 = 1;
/// End of a sequence (`[SEP]` for the encoder, EOS for the generator).
pub const EOS_ID: i64 = 2;
/// Offset added to a byte value to get its token id.
pub const BYTE_OFFSET: i64 = 3;
/// Number of token ids.
pub const VOCAB_SIZE: usize = 256 + BYTE_OFFSET as usize;

/// The token ids of `text`'s UTF-8 bytes, without special tokens.
pub fn encode_bytes(text: &str) -> Vec<i64> {
    text.bytes().map(|b| i64::from(b) + BYTE_OFFSET).collect()
}

/// The bytes behind byte tokens; special and out-of-range ids are skipped. Invalid UTF-8 is
/// replaced, since a sampler may stop in the middle of a multi-byte character.
pub fn decode_bytes(ids: &[i64]) -> String {
    let bytes: Vec<u8> = ids
        .iter()
        .filter_map(|&id| u8::try_from(id - BYTE_OFFSET).ok())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_specials() {
        let ids = encode_bytes("hé!");
        assert_eq!(ids.len(), 4);
        assert!(
            ids.iter()
                .all(|&i| (BYTE_OFFSET..VOCAB_SIZE as i64).contains(&i))
        );
        let mut with_specials = vec![BOS_ID];
        with_specials.extend(&ids);
        with_specials.extend([EOS_ID, PAD_ID, 999]);
        assert_eq!(decode_bytes(&with_specials), "hé!");
    }
}
