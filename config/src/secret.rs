//! A secret value (the JobManager's shared token, an S3 secret key): its `Debug` and `Display`
//! print [`Secret::HIDDEN`], so that neither a log line nor an error can carry it.

use std::fmt;

/// Text that is never shown. Only [`Secret::reveal`] gives it back.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// What is shown instead of a secret (Flink's `GlobalConfiguration.HIDDEN_CONTENT`).
    pub const HIDDEN: &'static str = "******";

    /// Wraps `text`.
    pub fn new(text: String) -> Secret {
        Secret(text)
    }

    /// The secret itself, for the one place that uses it.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Secret::HIDDEN)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Secret::HIDDEN)
    }
}

/// Whether Flink would hide the value of `key` (its `GlobalConfiguration.isSensitive`: the key
/// contains `password`, `secret`, `token` or another sensitive word, any case).
pub fn is_sensitive(key: &str) -> bool {
    const WORDS: [&str; 8] = [
        "password",
        "secret",
        "token",
        "fs.azure.account.key",
        "apikey",
        "api-key",
        "auth-params",
        "service-key",
    ];
    let key = key.to_ascii_lowercase();
    WORDS.iter().any(|w| key.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints() {
        let s = Secret::new("hunter2".into());
        assert_eq!(
            format!("{s} {s:?} {:?}", Some(&s)),
            "****** ****** Some(******)"
        );
        assert_eq!(s.reveal(), "hunter2");
        assert!(is_sensitive("conflux.token"));
        assert!(is_sensitive("s3.secret-key"));
        assert!(!is_sensitive("rest.port"));
    }
}
