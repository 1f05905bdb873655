//! The `--s3-*` options shared by the commands that can keep objects in an S3-compatible bucket.

/// An S3-compatible bucket to use instead of local files.
#[derive(clap::Args, Clone)]
#[command(next_help_heading = crate::headings::STORAGE)]
pub(crate) struct S3Args {
    /// Use this S3-compatible bucket (with the other --s3-* options).
    #[arg(long, requires_all = ["s3_access_key", "s3_secret_key"])]
    pub(crate) s3_bucket: Option<String>,
    /// S3 endpoint, e.g. http://127.0.0.1:9000 (default: AWS).
    #[arg(long)]
    pub(crate) s3_endpoint: Option<String>,
    /// S3 access key id.
    #[arg(long)]
    pub(crate) s3_access_key: Option<String>,
    /// S3 secret access key (`ps` shows a command line to every user of the host: prefer
    /// CONFLUX_S3_SECRET_KEY).
    #[arg(long, env = "CONFLUX_S3_SECRET_KEY", hide_env_values = true)]
    pub(crate) s3_secret_key: Option<String>,
    /// S3 region.
    #[arg(long, default_value = "us-east-1")]
    pub(crate) s3_region: String,
    /// S3 key prefix.
    #[arg(long)]
    pub(crate) s3_prefix: Option<String>,
}

impl std::fmt::Debug for S3Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Args")
            .field("s3_bucket", &self.s3_bucket)
            .field("s3_endpoint", &self.s3_endpoint)
            .field("s3_access_key", &self.s3_access_key)
            .field(
                "s3_secret_key",
                &self
                    .s3_secret_key
                    .as_ref()
                    .map(|_| conflux_config::Secret::HIDDEN),
            )
            .field("s3_region", &self.s3_region)
            .field("s3_prefix", &self.s3_prefix)
            .finish()
    }
}

impl S3Args {
    /// `(bucket, access key, secret key)` when a bucket was given.
    pub(crate) fn credentials(&self) -> Option<(&str, &str, &str)> {
        match (&self.s3_bucket, &self.s3_access_key, &self.s3_secret_key) {
            (Some(bucket), Some(key), Some(secret)) => Some((bucket, key, secret)),
            _ => None,
        }
    }

    /// Plain HTTP is allowed for an `http://` endpoint (a local test server).
    pub(crate) fn allow_http(&self) -> bool {
        self.s3_endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"))
    }
}
