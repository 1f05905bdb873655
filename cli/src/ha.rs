//! High availability on ZooKeeper for the cluster commands: Flink's `high-availability.*`
//! options as flags ([`HaArgs`]), finding the leader ([`leader_address`]), and the job store a
//! leading `conflux jobmanager` writes submissions to ([`FileJobStore`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use conflux_blob::JobId;
use conflux_ha::{HaOptions, JobPointers, LeaderInfo, LeaderRetrieval, Leadership};
use conflux_runtime::high_availability::{JobStore, StoreFuture};
use conflux_runtime::protocol::{JobOptions, JobSubmission};

use crate::Failure;

/// `--high-availability`: Flink's `high-availability.type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HaType {
    /// No high availability: one JobManager, named by `--jobmanager`.
    None,
    /// Leader election, leader retrieval and job store pointers on ZooKeeper.
    Zookeeper,
}

/// Flink's `high-availability.*` options for ZooKeeper.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct HaArgs {
    /// High availability (Flink's `high-availability.type`): `none`, or `zookeeper` (the
    /// leader is elected, published and found in ZooKeeper).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long = "high-availability", value_enum, default_value_t = HaType::None)]
    pub(crate) high_availability: HaType,
    /// ZooKeeper servers, HOST:PORT[,HOST:PORT...] (Flink's
    /// `high-availability.zookeeper.quorum`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long)]
    pub(crate) zookeeper_quorum: Option<String>,
    /// The root node of every cluster's nodes (Flink's `high-availability.zookeeper.path.root`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value = conflux_ha::DEFAULT_PATH_ROOT)]
    pub(crate) zookeeper_path_root: String,
    /// The cluster's id: JobManagers of one id compete for one leadership and share one job
    /// store (Flink's `high-availability.cluster-id`).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value = conflux_ha::DEFAULT_CLUSTER_ID)]
    pub(crate) cluster_id: String,
    /// ZooKeeper session timeout, ms (Flink's
    /// `high-availability.zookeeper.client.session-timeout`; the server may grant another
    /// within its bounds).
    #[arg(help_heading = crate::headings::HIGH_AVAILABILITY, long, default_value_t = conflux_ha::DEFAULT_SESSION_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub(crate) zookeeper_session_timeout: u64,
}

impl HaArgs {
    /// The options, `None` without high availability.
    ///
    /// # Errors
    /// An input error (exit 2) for `--zookeeper-quorum` without `--high-availability
    /// zookeeper`, or the reverse.
    pub(crate) fn options(&self) -> Result<Option<HaOptions>, Failure> {
        match (self.high_availability, &self.zookeeper_quorum) {
            (HaType::None, None) => Ok(None),
            (HaType::None, Some(_)) => Err(Failure::input(anyhow::anyhow!(
                "--zookeeper-quorum needs --high-availability zookeeper"
            ))),
            (HaType::Zookeeper, None) => Err(Failure::input(anyhow::anyhow!(
                "--high-availability zookeeper needs --zookeeper-quorum HOST:PORT[,HOST:PORT...]"
            ))),
            (HaType::Zookeeper, Some(quorum)) => {
                let options = HaOptions {
                    quorum: quorum.clone(),
                    path_root: self.zookeeper_path_root.clone(),
                    cluster_id: self.cluster_id.clone(),
                    storage_dir: None,
                    session_timeout_ms: self.zookeeper_session_timeout,
                };
                options
                    .validate()
                    .map_err(|e| Failure::input(anyhow::Error::new(e)))?;
                Ok(Some(options))
            }
        }
    }
}

/// How long a client or TaskManager waits for a leader to be published.
pub(crate) fn leader_wait(options: &HaOptions) -> Duration {
    Duration::from_millis(options.session_timeout_ms.saturating_mul(2)) + Duration::from_secs(30)
}

/// The JobManager to talk to: `--jobmanager`, or under high availability the leader ZooKeeper
/// publishes (with the retrieval, to follow it, and its fencing token).
///
/// # Errors
/// An input error when neither is given; a work error when ZooKeeper cannot be reached or no
/// leader is published in time.
pub(crate) async fn leader_address(
    jobmanager: Option<&str>,
    ha: &HaArgs,
) -> Result<(String, Option<(LeaderRetrieval, LeaderInfo)>), Failure> {
    match (ha.options()?, jobmanager) {
        (Some(options), _) => {
            let retrieval = LeaderRetrieval::start(&options)
                .await
                .map_err(|e| Failure::Work(e.into()))?;
            let leader = retrieval
                .await_leader(leader_wait(&options))
                .await
                .with_context(|| format!("cluster id {:?}", options.cluster_id))
                .map_err(Failure::Work)?;
            Ok((leader.rpc_address.clone(), Some((retrieval, leader))))
        }
        (None, Some(address)) => Ok((address.to_owned(), None)),
        (None, None) => Err(Failure::input(anyhow::anyhow!(
            "no JobManager: give --jobmanager HOST:PORT, or --high-availability zookeeper \
             --zookeeper-quorum HOST:PORT to find the leader"
        ))),
    }
}

/// Waits for a leader other than `previous` (a larger fencing token).
///
/// # Errors
/// A work error when none is published within `wait`.
pub(crate) async fn next_leader(
    retrieval: &LeaderRetrieval,
    previous: u64,
    wait: Duration,
) -> Result<LeaderInfo, Failure> {
    let mut rx = retrieval.subscribe();
    let found = tokio::time::timeout(
        wait,
        rx.wait_for(|l| l.as_ref().is_some_and(|l| l.fencing_token > previous)),
    )
    .await;
    match found {
        Ok(Ok(info)) => info
            .clone()
            .ok_or_else(|| Failure::Work(anyhow::anyhow!("no leader"))),
        _ => Err(Failure::Work(anyhow::anyhow!(
            "no new JobManager leader was elected within {} s",
            wait.as_secs()
        ))),
    }
}

/// The job store of a leading `conflux jobmanager`: each submission as two files under
/// `<storage dir>/<cluster-id>/jobgraphs/` and a pointer node in ZooKeeper naming them.
pub(crate) struct FileJobStore {
    dir: PathBuf,
    pointers: JobPointers,
    leadership: Arc<Leadership>,
}

impl FileJobStore {
    /// The store of `options`' cluster id under `storage_dir`, written as `leadership`.
    pub(crate) fn new(
        storage_dir: &Path,
        options: &HaOptions,
        leadership: Arc<Leadership>,
    ) -> Result<FileJobStore, Failure> {
        let dir = storage_dir
            .join(options.cluster_id.trim_matches('/'))
            .join("jobgraphs");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating the job store {}", dir.display()))
            .map_err(Failure::Work)?;
        Ok(FileJobStore {
            dir,
            pointers: JobPointers::new(options),
            leadership,
        })
    }

    /// Every stored job whose pointer exists, read back (a job whose files cannot be read is
    /// listed with the error, naming the file).
    pub(crate) async fn recoverable(
        &self,
    ) -> Result<Vec<(JobId, Result<JobSubmission, String>)>, Failure> {
        let listed = self
            .pointers
            .list(self.leadership.client())
            .await
            .map_err(|e| Failure::Work(e.into()))?;
        let mut jobs = Vec::new();
        for (job, pointer) in listed {
            let Ok(id) = job.parse::<JobId>() else {
                tracing::warn!(node = %job, "job store pointer with a name that is not a job id: skipped");
                continue;
            };
            jobs.push((id, read_job_graph_file(Path::new(&pointer))));
        }
        Ok(jobs)
    }
}

/// The options stored beside a job's file.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredOptions {
    source: String,
    options: JobOptions,
}

/// Writes `submission` as job `job`'s graph under `dir` (`<job>.job`, the file as submitted,
/// and `<job>.options.json`), each under a temporary name, synced, then renamed: a reader sees
/// whole files or none. Returns the path of the `.job` file (the pointer).
///
/// The storage side of the job store in its simplest form: the batch job recovery's job store
/// replaces it.
fn write_job_graph_file(
    dir: &Path,
    job: JobId,
    submission: &JobSubmission,
) -> Result<PathBuf, String> {
    let write = |path: &Path, bytes: &[u8]| -> Result<(), String> {
        let tmp = path.with_extension("tmp");
        let result = (|| {
            use std::io::Write as _;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        result.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("writing {}: {e}", path.display())
        })
    };
    let options = serde_json::to_vec(&StoredOptions {
        source: submission.source.clone(),
        options: submission.options.clone(),
    })
    .map_err(|e| e.to_string())?;
    let options_path = dir.join(format!("{job}.options.json"));
    write(&options_path, &options)?;
    let job_path = dir.join(format!("{job}.job"));
    write(&job_path, &submission.job)?;
    Ok(job_path)
}

/// Reads back what [`write_job_graph_file`] wrote; the error names the file.
fn read_job_graph_file(job_path: &Path) -> Result<JobSubmission, String> {
    let job = std::fs::read(job_path).map_err(|e| format!("{}: {e}", job_path.display()))?;
    let options_path = job_path.with_extension("options.json");
    let options =
        std::fs::read(&options_path).map_err(|e| format!("{}: {e}", options_path.display()))?;
    let stored: StoredOptions =
        serde_json::from_slice(&options).map_err(|e| format!("{}: {e}", options_path.display()))?;
    Ok(JobSubmission {
        job: job.into(),
        source: stored.source,
        options: stored.options,
    })
}

impl JobStore for FileJobStore {
    fn put<'a>(
        &'a self,
        job: JobId,
        submission: &'a JobSubmission,
    ) -> StoreFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let dir = self.dir.clone();
            let copy = submission.clone();
            let pointer =
                tokio::task::spawn_blocking(move || write_job_graph_file(&dir, job, &copy))
                    .await
                    .map_err(|e| e.to_string())??;
            let pointer = pointer
                .to_str()
                .ok_or_else(|| format!("{} is not UTF-8", pointer.display()))?
                .to_owned();
            self.pointers
                .put(&self.leadership, &job.to_string(), &pointer)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn remove(&self, job: JobId) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            if let Err(e) = self
                .pointers
                .remove(&self.leadership, &job.to_string())
                .await
            {
                tracing::warn!(%job, "job store pointer not removed: {e}");
                return;
            }
            for ext in ["job", "options.json"] {
                let _ = std::fs::remove_file(self.dir.join(format!("{job}.{ext}")));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_job_reads_back_and_a_torn_one_names_its_file() {
        let dir = tempfile::tempdir().expect("dir");
        let job = JobId([7; 16]);
        let submission = JobSubmission {
            job: b"{\"vertices\":[]}".to_vec().into(),
            source: "a.json".into(),
            options: JobOptions::default(),
        };
        let path = write_job_graph_file(dir.path(), job, &submission).expect("written");
        let read = read_job_graph_file(&path).expect("read");
        assert_eq!(
            (&read.job[..], &read.source, &read.options),
            (&submission.job[..], &submission.source, &submission.options)
        );
        std::fs::write(path.with_extension("options.json"), b"{\"sour").expect("torn");
        let e = read_job_graph_file(&path).expect_err("torn");
        assert!(e.contains(".options.json"), "{e}");
    }
}
