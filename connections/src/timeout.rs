//! The longest timeout the connections honour: below both the crate root that exports it and
//! the activity that caps idle timeouts with it.

/// The longest timeout honoured (a year): `Instant + Duration::MAX` would overflow.
pub const LONGEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);
