//! A JobManager of fixed data: jobs driven through a [`JobRecorder`] as a job loop would, one
//! TaskManager; and a server over it on a free loopback port.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use conflux_blob_api::JobId;
use conflux_rest::body::{Plan, PlanInput, PlanNode};
use conflux_rest::{
    job_vertex_id, slot_sharing_group_id, CancelOutcome, ExecutionState, IoCounts, JobInfo,
    JobRecorder, JobSnapshot, JobStatus, JobType, JobView, RestBackend, TaskManagerStatus,
    VertexInfo,
};

pub(crate) const TM: u32 = 0;
pub(crate) const DATA: &str = "127.0.0.1:40667";
pub(crate) const T0: i64 = 1_796_428_322_362;

/// A job `source -> sink` of parallelism 2 each.
pub(crate) fn two_vertex_job(id: u8, name: &str, job_type: JobType) -> Arc<JobView> {
    let job = JobId([id; 16]);
    let (source, sink) = (job_vertex_id("source"), job_vertex_id("sink"));
    let vertex = |id, name: &str| VertexInfo {
        id,
        name: name.into(),
        max_parallelism: 128,
        slot_sharing_group_id: slot_sharing_group_id(job, "default"),
    };
    let node = |id: conflux_rest::HexId, inputs: Option<Vec<PlanInput>>| PlanNode {
        id: id.to_string(),
        parallelism: 2,
        operator: String::new(),
        operator_strategy: String::new(),
        description: "a vertex".into(),
        inputs,
        optimizer_properties: serde_json::Map::new(),
    };
    let info = JobInfo {
        id: job,
        name: name.into(),
        job_type,
        vertices: vec![vertex(source, "Source"), vertex(sink, "Sink")],
        plan: Plan {
            jid: conflux_rest::HexId::from(job).to_string(),
            name: name.into(),
            job_type: job_type.as_str().into(),
            nodes: vec![
                node(source, None),
                node(
                    sink,
                    Some(vec![PlanInput {
                        num: 0,
                        id: source.to_string(),
                        ship_strategy: "HASH".into(),
                        exchange: "pipelined_bounded".into(),
                    }]),
                ),
            ],
        },
    };
    let view = Arc::new(JobView::new(
        info,
        JobSnapshot::submitted(T0, &[2, 2]),
        &[2, 2],
    ));
    view.add_location(TM, DATA.parse().unwrap());
    view
}

/// Every subtask of `job` through SCHEDULED, DEPLOYING and RUNNING from `t`.
pub(crate) fn run_all(r: &mut JobRecorder, t: i64) {
    r.set_status(JobStatus::Running, t);
    for vertex in 0..2 {
        let mut update = r.vertex(vertex).unwrap();
        for subtask in 0..2 {
            update.set_state(subtask, ExecutionState::Scheduled, 0, TM, t + 10);
            update.set_state(subtask, ExecutionState::Deploying, 0, TM, t + 20);
            update.set_state(subtask, ExecutionState::Running, 0, TM, t + 30);
        }
    }
}

/// Every subtask of `job` FINISHED at `t` with some I/O.
pub(crate) fn finish_all(r: &mut JobRecorder, t: i64) {
    for vertex in 0..2 {
        let mut update = r.vertex(vertex).unwrap();
        for subtask in 0..2 {
            update.finished_io(
                subtask,
                IoCounts {
                    read_bytes: 100 * u64::from(subtask),
                    write_bytes: 200,
                    read_records: 3,
                    write_records: 4,
                },
            );
            update.set_state(subtask, ExecutionState::Finished, 0, TM, t);
        }
    }
}

/// The backend: jobs by submission, one TaskManager of 4 slots.
pub(crate) struct FakeBackend {
    pub(crate) jobs: Mutex<Vec<(Arc<JobView>, Option<JobRecorder>)>>,
}

impl FakeBackend {
    /// A running streaming job, a finished batch job, a failed one and a cancelled one.
    pub(crate) fn four_jobs() -> Arc<FakeBackend> {
        let running = two_vertex_job(1, "streaming forever", JobType::Streaming);
        let mut r = JobRecorder::new(Arc::clone(&running));
        run_all(&mut r, T0 + 100);
        r.publish(0, vec![(TM, 2)]);

        let finished = two_vertex_job(2, "batch word count", JobType::Batch);
        let mut f = JobRecorder::new(Arc::clone(&finished));
        run_all(&mut f, T0 + 100);
        finish_all(&mut f, T0 + 5_000);
        f.set_status(JobStatus::Finished, T0 + 5_001);
        f.publish(0, Vec::new());

        let failed = two_vertex_job(3, "failing job", JobType::Streaming);
        let mut x = JobRecorder::new(Arc::clone(&failed));
        run_all(&mut x, T0 + 100);
        x.vertex(0)
            .unwrap()
            .set_state(1, ExecutionState::Failed, 0, TM, T0 + 900);
        x.task_failed(0, 1, 0, TM, "boom at 500", T0 + 900);
        x.set_status(JobStatus::Failing, T0 + 901);
        for vertex in 0..2 {
            let mut update = x.vertex(vertex).unwrap();
            for subtask in 0..2 {
                if (vertex, subtask) != (0, 1) {
                    update.set_state(subtask, ExecutionState::Canceled, 0, TM, T0 + 902);
                }
            }
        }
        x.job_failed("restarts exhausted (no restart strategy)", T0 + 903);
        x.set_status(JobStatus::Failed, T0 + 903);
        x.publish(0, Vec::new());

        let cancelled = two_vertex_job(4, "cancelled job", JobType::Streaming);
        let mut c = JobRecorder::new(Arc::clone(&cancelled));
        run_all(&mut c, T0 + 100);
        c.cancelling(T0 + 2_000);
        for vertex in 0..2 {
            let mut update = c.vertex(vertex).unwrap();
            for subtask in 0..2 {
                update.set_state(subtask, ExecutionState::Canceled, 0, TM, T0 + 2_001);
            }
        }
        c.set_status(JobStatus::Canceled, T0 + 2_002);
        c.publish(0, Vec::new());

        Arc::new(FakeBackend {
            jobs: Mutex::new(vec![
                (running, Some(r)),
                (finished, None),
                (failed, None),
                (cancelled, None),
            ]),
        })
    }
}

impl RestBackend for FakeBackend {
    fn jobs(&self) -> Vec<Arc<JobView>> {
        self.jobs
            .lock()
            .unwrap()
            .iter()
            .map(|(j, _)| Arc::clone(j))
            .collect()
    }

    fn job(&self, id: JobId) -> Option<Arc<JobView>> {
        self.jobs().into_iter().find(|j| j.info().id == id)
    }

    fn task_managers(&self) -> Vec<TaskManagerStatus> {
        vec![TaskManagerStatus {
            id: TM,
            data_address: DATA.parse().unwrap(),
            slots: 4,
            slots_in_use: vec![(JobId([1; 16]), 2)],
            last_heartbeat_ms: T0 + 20_000,
        }]
    }

    fn cancel(&self, id: JobId) -> CancelOutcome {
        let mut jobs = self.jobs.lock().unwrap();
        let Some((view, recorder)) = jobs.iter_mut().find(|(j, _)| j.info().id == id) else {
            return CancelOutcome::Unknown;
        };
        let status = view.snapshot().status;
        if status.is_globally_terminal() && status != JobStatus::Canceled {
            return CancelOutcome::AlreadyEnded(status);
        }
        if let Some(r) = recorder {
            r.cancelling(conflux_rest::now_ms());
            r.publish(0, Vec::new());
        }
        CancelOutcome::Accepted
    }

    fn configuration(&self) -> Vec<(String, String)> {
        vec![
            ("rest.port".into(), "8081".into()),
            ("jobmanager.rpc.port".into(), "6123".into()),
        ]
    }

    fn metrics(&self) -> String {
        "# TYPE flink_jobmanager_numRunningJobs gauge\nflink_jobmanager_numRunningJobs{host=\"localhost\"} 1\n# EOF\n".into()
    }
}

/// A server over `backend` on a free loopback port, stopped when dropped.
pub(crate) struct Server {
    pub(crate) address: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Server {
    pub(crate) fn start(backend: Arc<dyn RestBackend>) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let limits = conflux_http::Limits::new(
            std::time::Duration::from_secs(5),
            std::time::Duration::from_secs(5),
            16,
        );
        runtime.spawn(conflux_http::serve(
            listener,
            conflux_rest::router(backend),
            limits,
            conflux_http::OpenConnections::default(),
            async move {
                let _ = stopped.await;
            },
        ));
        Server {
            address,
            runtime: Some(runtime),
            stop: Some(stop),
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        }
    }
}
