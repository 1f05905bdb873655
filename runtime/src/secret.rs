//! `Secret`: 128 random bits that prove a connection belongs to what it claims: a TaskManager's
//! heartbeat connection carries the secret the JobManager gave that TaskManager at
//! registration, a data connection the secret of the job whose partitions it reads. Drawn from
//! the operating system's generator (`getrandom`), compared in constant time, never printed.

use serde::{Deserialize, Serialize};

/// A random 128-bit secret. `Debug` hides it.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Secret(pub [u8; 16]);

impl Secret {
    /// A fresh secret from the operating system's generator.
    ///
    /// # Errors
    /// When the generator fails (an unseeded system at early boot, a sandbox without it).
    pub fn random() -> Result<Secret, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Secret(bytes))
    }

    /// Whether `other` is this secret, in time independent of where they differ.
    pub fn matches(&self, other: &Secret) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_differ_match_only_themselves_and_do_not_print() {
        let a = Secret::random().expect("random");
        let b = Secret::random().expect("random");
        assert_ne!(a.0, b.0);
        assert!(a.matches(&a));
        assert!(!a.matches(&b));
        let mut near = a;
        near.0[15] ^= 1;
        assert!(!a.matches(&near));
        assert_eq!(format!("{a:?}"), "Secret(<redacted>)");
    }
}
