//! Output agreement between two runs of a model (owned by the tune work; see crates/tune).
