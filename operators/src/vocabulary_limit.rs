//! The largest vocabulary a word count may ask for: below both the vocabulary and the error
//! that reports a size above it.

/// The largest vocabulary: the source's integer Zipf weights keep their precision up to it.
pub const MAX_VOCABULARY_SIZE: u32 = 1 << 24;
