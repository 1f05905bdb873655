//! [`S3Config`] and the builder of its client.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::AmazonS3Builder;
use object_store::prefix::PrefixStore;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};

/// Retries of one request: at most 3, within 30 s, so an unreachable endpoint fails in bounded
/// time.
const MAX_RETRIES: usize = 3;
/// The whole time a request may spend retrying.
const RETRY_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to open a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time of one request, body included (large multipart parts need minutes on slow links).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// An S3-compatible bucket (AWS S3, MinIO, `s3s-fs`, ...). `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// The endpoint URL, e.g. `http://127.0.0.1:9000`; `None` means AWS for `region`.
    /// Requests use path style (`<endpoint>/<bucket>/<key>`).
    pub endpoint: Option<String>,
    /// The bucket; it must exist.
    pub bucket: String,
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key (never printed by `Debug`).
    pub secret_access_key: String,
    /// The region, e.g. `us-east-1` (S3-compatible servers mostly ignore it).
    pub region: String,
    /// Whether a plain `http://` endpoint is allowed (test servers on loopback); off by
    /// default.
    pub allow_http: bool,
    /// A key prefix inside the bucket (e.g. `<cluster-id>/blob`, as Flink's
    /// `<high-availability.storageDir>/<cluster-id>/blob`); `None` for the bucket's root.
    pub prefix: Option<String>,
}

/// The S3 client refused a configuration.
#[derive(Debug, thiserror::Error)]
#[error("S3 bucket {bucket}: {source}")]
pub struct S3ConfigError {
    /// The bucket of the refused configuration.
    pub bucket: String,
    /// What the client said.
    #[source]
    pub source: object_store::Error,
}

impl S3Config {
    /// A bucket with these credentials, region `us-east-1`, no endpoint (AWS), https only, no
    /// prefix.
    pub fn new(
        bucket: impl Into<String>,
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
    ) -> S3Config {
        S3Config {
            endpoint: None,
            bucket: bucket.into(),
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            region: "us-east-1".to_owned(),
            allow_http: false,
            prefix: None,
        }
    }

    /// The client of this bucket, under [`S3Config::prefix`] when one is set. Path-style
    /// requests (S3-compatible servers on loopback have no per-bucket DNS names); each request
    /// is retried at most 3 times within 30 s, connects within 10 s and completes within 300 s.
    /// No request is made here.
    ///
    /// # Errors
    /// [`S3ConfigError`] when the client refuses the settings. An `http://` endpoint without
    /// [`S3Config::allow_http`] is refused by the first request, not here.
    pub fn build(&self) -> Result<Arc<dyn ObjectStore>, S3ConfigError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&self.bucket)
            .with_access_key_id(&self.access_key_id)
            .with_secret_access_key(&self.secret_access_key)
            .with_region(&self.region)
            .with_virtual_hosted_style_request(false)
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: MAX_RETRIES,
                retry_timeout: RETRY_TIMEOUT,
            })
            // Client options replace earlier ones, `allow_http` included: set them together.
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(self.allow_http)
                    .with_connect_timeout(CONNECT_TIMEOUT)
                    .with_timeout(REQUEST_TIMEOUT),
            );
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let s3 = builder.build().map_err(|source| S3ConfigError {
            bucket: self.bucket.clone(),
            source,
        })?;
        Ok(match &self.prefix {
            Some(prefix) => Arc::new(PrefixStore::new(s3, prefix.as_str())),
            None => Arc::new(s3),
        })
    }

    /// The endpoint for messages: the URL, or `aws` when none is set.
    pub fn endpoint_name(&self) -> &str {
        self.endpoint.as_deref().unwrap_or("aws")
    }
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field("region", &self.region)
            .field("allow_http", &self.allow_http)
            .field("prefix", &self.prefix)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret() {
        let config = S3Config::new("bucket", "key-id", "very-secret");
        let printed = format!("{config:?}");
        assert!(!printed.contains("very-secret"), "{printed}");
        assert!(printed.contains("key-id"), "{printed}");
    }

    #[test]
    fn a_prefixed_loopback_bucket_builds_without_a_request() {
        let mut config = S3Config::new("bucket", "id", "secret");
        config.endpoint = Some("http://127.0.0.1:9".to_owned());
        config.allow_http = true;
        config.prefix = Some("cluster/blob".to_owned());
        let store = config.build().expect("a valid configuration builds");
        // The prefix wraps the client, so every key lands under it.
        assert_eq!(store.to_string(), "PrefixObjectStore(cluster/blob)");
    }
}
