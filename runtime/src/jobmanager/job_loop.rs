//! The event loop of one job: it owns the job's [`Scheduler`] on a thread of its own, turns
//! messages from TaskManagers into [`Event`]s and the scheduler's [`Command`]s into messages.
//!
//! Deployment descriptors are built on rayon after each scheduler call (never inside it), and
//! encoded there too; the loop only queues the frames. Heartbeats and connections are handled
//! elsewhere, so a long call here delays scheduling, never a heartbeat answer. Speculative
//! attempts (batch jobs with speculative execution on) are tracked in `job_loop/speculative.rs`.
//!
//! Submissions are handed to a TaskManager's connection only while it has fewer than
//! `max_submissions_in_flight` unacknowledged (`job_loop/submissions.rs`); the others wait
//! here, so an acknowledgement's timeout counts from the hand-over, not from the end of a
//! queue of thousands. A failure that would recur on every attempt fails the job at once
//! ([`FailureCause::NonRecoverable`]); every restart is logged at WARN with its cause. When a
//! word count job ends, its output directory gets a `_SUCCESS` marker if it FINISHED, and none
//! otherwise.

mod event_log;
mod restore;
mod speculative;
mod submissions;
mod task_spec;
mod view;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conflux_blob_api::{BlobWriter, JobId};
use conflux_deploy::{
    encode_tdd, AllocationId, DeploymentConfig, ExecutionAttemptId, ExecutionState,
    TaskDeploymentDescriptorFactory, TaskManagerId,
};
use conflux_graph::dynamic::first_dynamic_vertex;
use conflux_graph::{
    ExecutionGraph, ExecutionVertexIndex, IntermediateResultPartitionId, JobGraph, PipelinedRegions,
};
use conflux_scheduler::{
    Command, Event, FailureCause, JobMemoryEstimate, JobStatus, Scheduler, SchedulerConfig,
    SchedulerError, SpeculativeExecutionOptions,
};
use conflux_sim::{BytesModel, ProducedBytes};
use rayon::prelude::*;

use crate::connection::encode;
use crate::cpu_time::thread_cpu_time;
use crate::jobmanager::data_stats::DataStats;
use crate::jobmanager::jobs::{Jobs, QueuedJob};
use crate::jobmanager::loop_event::LoopEvent;
use crate::jobmanager::registry::Registry;
use crate::jobmanager::rest_view;
use crate::metrics::JobManagerMetrics;
use crate::protocol::{
    JobOptions, PartitionRef, TaskMetrics, TaskState, ToTaskManager, WordCountTask,
};
use crate::report::{
    adaptive_report, descriptors_report, speculative_report, JobReport, TaskManagerReport, WallMs,
};
use crate::rss::peak_rss_bytes;
use crate::secret::Secret;
use speculative::SpeculativeRuns;
use submissions::Submissions;
use task_spec::task_spec;
use view::LoopView;

/// An event to handle, or a message to translate into one when its turn comes.
enum Pending {
    Event(Event),
    Message(LoopEvent),
}

/// Heap bytes per execution vertex the loop keeps beside the scheduler: the TaskManager of its
/// attempt, and a word count's words per count subtask (a hash table entry, doubled for the
/// table's growth).
const LOOP_BYTES_PER_VERTEX: u64 = 4 + 2 * (16 + 1) * 8 / 7;

/// The heap a job takes while it runs, estimated from its job graph in O(V + E): the
/// execution graph, regions, scheduler state and descriptors
/// ([`JobMemoryEstimate::total_bytes`]) and the loop's own per-vertex arrays.
pub(crate) fn memory_estimate(job: &JobGraph, config: &SchedulerConfig) -> u64 {
    let estimate = JobMemoryEstimate::of(job, config);
    estimate.total_bytes().saturating_add(
        estimate
            .expansion
            .execution_vertices
            .saturating_mul(LOOP_BYTES_PER_VERTEX),
    )
}

/// What [`new_scheduler`] would refuse about the options, checked at submission: the batch
/// options of a job whose undecided vertices are decided at run time.
///
/// # Errors
/// Which option is out of range.
pub(crate) fn check_scheduler_options(job: &JobGraph, options: &JobOptions) -> Result<(), String> {
    if options.default_parallelism.is_none() && job.has_undecided() {
        conflux_adaptive::BatchExecutionOptions::from(options.batch)
            .validate()
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The scheduler of a submitted job: adaptive batch when the job has undecided vertices (`-1`)
/// and `--default-parallelism` did not fix them (as `conflux run`), else one over the graph
/// built whole. A job that cannot grow at run time (a pipelined edge or co-location group after
/// its first undecided vertex) runs at the estimate, and the reason is returned.
///
/// # Errors
/// Why the graph cannot be built, or the batch options are out of range.
pub(crate) fn new_scheduler(
    mut job: JobGraph,
    options: &JobOptions,
    config: SchedulerConfig,
) -> Result<(Scheduler, Option<String>), String> {
    let decide = options.default_parallelism.is_none() && job.has_undecided();
    let estimate_reason = if decide {
        first_dynamic_vertex(&job).err().map(|e| e.to_string())
    } else {
        None
    };
    if decide && estimate_reason.is_none() {
        let scheduler = Scheduler::new_adaptive(job, options.batch.into(), config)
            .map_err(|e| e.to_string())?;
        return Ok((scheduler, None));
    }
    if let Some(reason) = &estimate_reason {
        tracing::warn!(%reason, "undecided vertices run at their estimate");
    }
    job.fix_undecided();
    let graph = ExecutionGraph::build(job).map_err(|e| e.to_string())?;
    let regions = PipelinedRegions::compute(&graph).map_err(|e| e.to_string())?;
    let scheduler = Scheduler::new(Arc::new(graph), Arc::new(regions), config);
    Ok((scheduler, estimate_reason))
}

/// What the loop needs of the JobManager.
pub(crate) struct LoopContext<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) blob_writer: Arc<dyn BlobWriter>,
    pub(crate) rpc_timeout_ms: u64,
    /// Submissions one TaskManager may have unacknowledged at once (at least 1).
    pub(crate) max_submissions_in_flight: usize,
    /// Speculative execution (off by default), for the slow task detector's period.
    pub(crate) speculative: SpeculativeExecutionOptions,
    /// The JobManager's metrics (scheduler call times, descriptor bytes).
    pub(crate) metrics: &'a JobManagerMetrics,
    /// The job table, whose view of the job is replaced when it starts.
    pub(crate) jobs: &'a Jobs,
    /// The storage directory, where each job's event log is kept (none: no log).
    pub(crate) store: Option<&'a conflux_job_store::StorageDir>,
    /// Under high availability, the leader's lease: the event log is written only while it
    /// holds.
    pub(crate) lease: Option<conflux_ha::LeaseHandle>,
    /// How long a recovered job waits for the TaskManagers that held its finished partitions,
    /// ms (Flink's `execution.batch.job-recovery.previous-worker.recovery.timeout`).
    pub(crate) recovery_timeout_ms: u64,
}

const NO_TASK_MANAGER: u32 = u32::MAX;

struct JobRun<'a> {
    ctx: &'a LoopContext<'a>,
    job: JobParts,
    scheduler: Scheduler,
    factory: TaskDeploymentDescriptorFactory,
    /// What synthetic tasks report as written, when a run-time decision reads it.
    synthetic_bytes: Option<ProducedBytes>,
    started: Instant,
    /// Per execution vertex, the TaskManager of its current attempt (where its partitions
    /// live once it finished).
    deployed_on: Vec<u32>,
    /// The slow task detector's timer and the TaskManagers of speculative attempts.
    speculative: SpeculativeRuns,
    tasks_per_task_manager: HashMap<TaskManagerId, u64>,
    participants: BTreeSet<TaskManagerId>,
    /// Submissions waiting for their TaskManager's window, and those sent and awaiting their
    /// acknowledgement with their deadlines.
    submissions: Submissions,
    /// Work in arrival order. Messages are translated when their turn comes, against the
    /// scheduler's state after the events before them.
    queue: VecDeque<Pending>,
    tasks_deployed: u64,
    rpc_timeouts: u64,
    /// Partition requests the job's tasks tried again (as their final states reported).
    partition_request_retries: u64,
    /// When the loop took the earliest TaskManager loss that restarted tasks and whose re-runs
    /// have not been submitted yet.
    failover_since: Option<Instant>,
    /// The longest time from such a loss to the first re-run attempt submitted after it.
    max_loss_to_redeploy: Option<Duration>,
    max_stall: Duration,
    /// The most thread CPU time one scheduler call used.
    max_cpu: Duration,
    first_submission: Option<Instant>,
    last_running: Option<Instant>,
    /// The data plane's numbers (word count jobs).
    data: DataStats,
    /// The last reason a task gave for failing, for the report of a failed job.
    last_task_failure: Option<String>,
    /// What the REST API shows of the job.
    view: LoopView,
    /// The cause of the last failure of any kind (a task's, a lost TaskManager, a timeout),
    /// logged with the restart it leads to.
    last_failure: Option<String>,
    /// The job's event log (with a storage directory).
    event_log: Option<event_log::JobEventLog>,
}

/// What the loop keeps of a prepared job besides its scheduler.
struct JobParts {
    id: JobId,
    /// The job's data secret: its consumers present it to the data servers of its producers.
    secret: Secret,
    name: String,
    tasks: Vec<Option<WordCountTask>>,
    options: JobOptions,
    submitted: Instant,
}

/// Runs `job` to its end on the registered TaskManagers: builds its scheduler (and with it the
/// execution graph and regions, or their initialised prefix when undecided vertices are
/// decided at run time) and drives it. `events` must be the receiving end of `sender`, which
/// the registry gets while the job runs.
pub(crate) fn run_job(
    ctx: &LoopContext<'_>,
    job: QueuedJob,
    config: SchedulerConfig,
    sender: Sender<LoopEvent>,
    events: &Receiver<LoopEvent>,
) -> JobReport {
    let QueuedJob {
        id,
        name,
        job: job_graph,
        tasks,
        options,
        submitted,
        execution_vertices,
        submitted_ms,
        secret,
        recovery,
        ..
    } = job;
    let job_name = name.clone();
    let seed = options.seed;
    let failed = |reason: String| JobReport {
        job_id: id.to_string(),
        job: job_name.clone(),
        status: JobStatus::Failed.as_str().to_owned(),
        failure_reason: Some(reason),
        tasks: execution_vertices,
        seed,
        ..JobReport::default()
    };
    let secret = match secret.map_or_else(Secret::random, Ok) {
        Ok(secret) => secret,
        Err(e) => {
            return failed(format!(
                "no data secret: the system's random generator failed: {e}"
            ))
        }
    };
    // A recovered job whose event log cannot be read fails, naming the file.
    let (recovered, replay_ms) = match recovery {
        Some(recovery) => match recovery.state {
            Ok(state) => (Some(state), Some(recovery.replay_ms)),
            Err(reason) => {
                let mut report = failed(reason);
                report.recovery_replay_ms = Some(recovery.replay_ms);
                return report;
            }
        },
        None => (None, None),
    };
    let output = options.output_dir.clone();
    if let Some(dir) = &output {
        // A marker of an earlier run must not mark this one complete.
        if let Err(e) = conflux_operators::clear_success(dir) {
            tracing::warn!(job = %id, "output directory: {e}");
        }
    }
    let (scheduler, estimate_reason) = match new_scheduler(job_graph, &options, config) {
        Ok(built) => built,
        Err(reason) => return failed(reason),
    };
    let mut scheduler = scheduler;
    // The view of the queued job gives way to one of its execution graph.
    let view = rest_view::job_view(id, scheduler.graph(), submitted_ms);
    ctx.jobs.set_view(id, Arc::clone(&view));
    let view = LoopView::new(view, &mut scheduler);
    let job = JobParts {
        id,
        secret,
        name,
        tasks,
        options,
        submitted,
    };
    let graph = Arc::clone(scheduler.graph());
    let deployment = DeploymentConfig::for_job_type(graph.job_graph().job_type());
    let offload_rule = deployment.offload_rule;
    let factory = match TaskDeploymentDescriptorFactory::new(
        &graph,
        job.id,
        deployment,
        Arc::clone(&ctx.blob_writer),
    ) {
        Ok(factory) => factory,
        Err(e) => return failed(format!("deployment descriptors: {e}")),
    };
    let synthetic_bytes = scheduler.is_adaptive().then(|| {
        let model = BytesModel {
            source_bytes: job.options.source_bytes,
            skew: job.options.skew,
        };
        ProducedBytes::new(&graph, model, job.options.seed)
    });
    let deployed_on = vec![NO_TASK_MANAGER; graph.num_execution_vertices() as usize];
    let speculative = SpeculativeRuns::new(&ctx.speculative, graph.job_graph().job_type());
    // The scheduler is the graph's only owner while it runs, so that growing it copies nothing.
    drop(graph);
    let mut run = JobRun {
        ctx,
        job,
        scheduler,
        factory,
        synthetic_bytes,
        started: Instant::now(),
        deployed_on,
        speculative,
        tasks_per_task_manager: HashMap::new(),
        participants: BTreeSet::new(),
        submissions: Submissions::new(ctx.max_submissions_in_flight),
        queue: VecDeque::new(),
        tasks_deployed: 0,
        rpc_timeouts: 0,
        partition_request_retries: 0,
        failover_since: None,
        max_loss_to_redeploy: None,
        max_stall: Duration::ZERO,
        max_cpu: Duration::ZERO,
        first_submission: None,
        last_running: None,
        data: DataStats::default(),
        last_task_failure: None,
        view,
        last_failure: None,
        event_log: None,
    };
    // Batch job recovery: the finished executions whose partitions are still held are
    // restored before the start; the log starts again from what was restored.
    let tasks_recovered = recovered.map(|state| run.restore(state));
    if let Some(store) = ctx.store {
        let mut kept = conflux_job_store::RecoveredJob::default();
        if tasks_recovered.is_some_and(|n| n > 0) {
            for v in 0..run.scheduler.graph().num_execution_vertices() {
                let v = ExecutionVertexIndex(v);
                if run.scheduler.state(v) == ExecutionState::Finished {
                    if let Some(event) = run.logged_finish(v, Vec::new()) {
                        kept.apply(&event);
                    }
                }
            }
        }
        run.event_log =
            event_log::JobEventLog::open(store, &id.to_string(), kept, ctx.lease.clone());
    }
    {
        // Registering as the current job and listing the TaskManagers happen under one lock, so
        // that no registration or loss falls between them.
        let mut registry = ctx.registry.lock();
        registry.current_job = Some(sender);
        registry.counters.max_rtt_ms = None;
        for record in registry.records.values_mut() {
            record.job_tasks = 0;
        }
        for (id, entry) in &registry.alive {
            run.participants.insert(*id);
            run.view.task_manager(entry.location);
            run.push(Event::TaskManagerRegistered {
                location: entry.location,
                slots: entry.slots,
            });
        }
    }
    let counters_before = ctx.registry.lock().counters;
    run.push(Event::Start);
    run.drive(events);
    if let Some(log) = run.event_log.take() {
        if let Some(bytes) = log.close() {
            tracing::debug!(job = %run.job.id, bytes, "event log closed");
        }
    }
    run.view.after_call(&mut run.scheduler);
    run.view.publish(&run.scheduler, true);
    let job = &run.job;
    let graph = Arc::clone(run.scheduler.graph());
    let status = run.scheduler.status();
    if let Some(dir) = &output {
        if status == JobStatus::Finished {
            if let Err(e) = conflux_operators::mark_success(dir) {
                tracing::warn!(job = %job.id, "output directory: the job FINISHED but {e}");
            }
        }
    }

    let mut registry = ctx.registry.lock();
    registry.current_job = None;
    for entry in registry.alive.values() {
        entry.outbox.send(&ToTaskManager::JobEnded(job.id));
    }
    let counters = registry.counters;
    // Every TaskManager that took part; listed are those that received tasks of this job.
    let task_manager_count = run.participants.len() as u64;
    let task_managers = run
        .participants
        .iter()
        .filter_map(|id| {
            let tasks = run.tasks_per_task_manager.get(id).copied().unwrap_or(0);
            if tasks == 0 {
                return None;
            }
            let record = registry.records.get(id).cloned().unwrap_or_default();
            let stats = record.stats;
            Some(TaskManagerReport {
                id: id.to_string(),
                slots: record.slots,
                tasks,
                // 0 is what a platform without the figure sends: unknown, not nothing.
                peak_rss_bytes: stats.map(|s| s.peak_rss_bytes).filter(|&b| b > 0),
                tdd_bytes_received: stats.map(|s| s.tdd_bytes_received),
                blob_fetches: stats.map_or(0, |s| s.blob_fetches),
                cache_hits: None,
                lost: record.lost,
            })
        })
        .collect::<Vec<_>>();
    drop(registry);
    let deploy = match (run.first_submission, run.last_running) {
        (Some(first), Some(last)) if last > first => Some(ms(last - first)),
        _ => None,
    };
    let peak_rss = peak_rss_bytes();
    JobReport {
        job_id: job.id.to_string(),
        job: job.name.clone(),
        status: status.as_str().to_owned(),
        failure_reason: run
            .scheduler
            .failure_reason()
            .map(|reason| match &run.last_task_failure {
                Some(cause) => format!("{reason}; last task failure: {cause}"),
                None => reason.to_owned(),
            }),
        wall_ms: WallMs {
            deploy,
            total: ms(job.submitted.elapsed()),
            ..WallMs::default()
        },
        tasks: u64::from(graph.num_execution_vertices()),
        tasks_deployed: run.tasks_deployed,
        restarts: run.scheduler.restarts(),
        scheduler_events: None,
        virtual_ms: None,
        max_handler_stall_ms: ms(run.max_stall),
        max_handler_cpu_ms: Some(ms(run.max_cpu)),
        peak_rss_bytes: peak_rss,
        jobmanager_peak_rss_bytes: peak_rss,
        trace_digest: format!("{:016x}", run.scheduler.trace_digest()),
        seed: job.options.seed,
        task_manager_count,
        task_managers_lost: counters.lost - counters_before.lost,
        heartbeat_timeouts: Some(counters.heartbeat_timeouts - counters_before.heartbeat_timeouts),
        rpc_timeouts: Some(run.rpc_timeouts),
        re_registrations: Some(counters.re_registrations - counters_before.re_registrations),
        partition_request_retries: Some(run.partition_request_retries),
        max_loss_to_redeploy_ms: run.max_loss_to_redeploy.map(ms),
        max_heartbeat_rtt_ms: counters.max_rtt_ms,
        descriptors: descriptors_report(offload_rule, &run.factory.stats()),
        blob_fetches: task_managers.iter().map(|t| t.blob_fetches).sum(),
        blob_cache_hits: None,
        task_managers,
        blob_server: None,
        faults_injected: None,
        killed_task_manager: None,
        kill_skipped: None,
        speculative_attempts: speculative_report(
            run.speculative.enabled(),
            run.scheduler.speculative_stats(),
        ),
        adaptive: adaptive_report(&run.scheduler, estimate_reason),
        data: run.data.report(&job.tasks, &graph),
        tasks_recovered,
        recovery_replay_ms: replay_ms,
        leader_changes: None,
        recovery_ms: None,
    }
}

/// A duration in ms as reports give it (rounded to 0.001 ms).
fn ms(duration: Duration) -> f64 {
    conflux_report::round::ms(duration)
}

/// A scheduler call using more CPU time than this is logged (debug) even when it is not the
/// longest so far: the calls beyond the work budget's intent.
const LOGGED_CALL_CPU: Duration = Duration::from_millis(2);

/// The wall and CPU time of one scheduler call.
struct CallTimer {
    wall: Instant,
    cpu: Duration,
}

impl CallTimer {
    fn start() -> CallTimer {
        CallTimer {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        }
    }

    /// Raises the maxima to this call's times; a new longest call, or one above
    /// [`LOGGED_CALL_CPU`], is logged (debug) with what it handled, `call` (only formatted then).
    fn record(
        self,
        max_wall: &mut Duration,
        max_cpu: &mut Duration,
        metrics: &JobManagerMetrics,
        call: impl FnOnce() -> String,
    ) {
        let wall = self.wall.elapsed();
        metrics.scheduler_call_seconds.observe(wall.as_secs_f64());
        let cpu = thread_cpu_time().saturating_sub(self.cpu);
        if wall > *max_wall || cpu > *max_cpu || cpu > LOGGED_CALL_CPU {
            tracing::debug!(call = %call(), ?wall, ?cpu, "longest scheduler call so far");
        }
        *max_wall = (*max_wall).max(wall);
        *max_cpu = (*max_cpu).max(cpu);
    }
}

impl JobRun<'_> {
    fn now_ms(&self) -> u64 {
        crate::connection::millis(self.started.elapsed())
    }

    fn drive(&mut self, events: &Receiver<LoopEvent>) {
        loop {
            while let Some(event) = self.next_event() {
                let now = self.now_ms();
                let taken = Instant::now();
                let call = CallTimer::start();
                let result = self.scheduler.handle(now, event.clone());
                call.record(
                    &mut self.max_stall,
                    &mut self.max_cpu,
                    self.ctx.metrics,
                    || format!("{event:?}"),
                );
                match result {
                    Ok(mut commands) => {
                        if matches!(event, Event::TaskManagerLost(_))
                            && commands.iter().any(|c| matches!(c, Command::Restart(_)))
                        {
                            self.failover_since.get_or_insert(taken);
                        }
                        self.finish_owed_work(&mut commands);
                        if self.event_log.is_some() {
                            self.log_call(&event, &commands);
                        }
                        self.apply(commands);
                        self.speculative
                            .follow(&self.scheduler, &mut self.deployed_on);
                        self.view.after_call(&mut self.scheduler);
                        self.view.publish(&self.scheduler, false);
                    }
                    // A finish whose byte report does not fit the result (a faulty
                    // TaskManager): the attempt fails, so that it runs again or the job fails
                    // with the reason, instead of waiting forever.
                    Err(e @ SchedulerError::ProducedBytes { .. }) => {
                        if let Event::TaskFinishedWithBytes(attempt, _) = event {
                            tracing::warn!(job = %self.job.id, "task finish refused: {e}");
                            self.last_task_failure = Some(e.to_string());
                            self.push(Event::TaskFailed(attempt, FailureCause::Task));
                        }
                    }
                    // Events come from the network: a late or duplicate one is logged, never
                    // fatal.
                    Err(e) => tracing::warn!(job = %self.job.id, ?event, "event refused: {e}"),
                }
            }
            if self.scheduler.status().is_terminal() {
                return;
            }
            let now = self.now_ms();
            // Due whether or not messages keep the loop busy: a busy loop is when slow tasks
            // matter.
            if self.speculative.check_due(now) {
                self.push(Event::CheckSlowTasks);
                continue;
            }
            let deadline = [
                self.scheduler.next_timer(),
                self.submissions.next_deadline(),
                self.speculative.next_check_ms(),
            ]
            .into_iter()
            .flatten()
            .min();
            // About to wait: what the REST API shows catches up, the event log is written.
            self.view.publish(&self.scheduler, true);
            if let Some(log) = &mut self.event_log {
                log.flush();
            }
            let received = match deadline {
                Some(at) => events.recv_timeout(Duration::from_millis(at.saturating_sub(now))),
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match received {
                Ok(message) => {
                    self.queue.push_back(Pending::Message(message));
                    // Take what else has arrived, so that a burst is handled in one pass.
                    while let Ok(message) = events.try_recv() {
                        self.queue.push_back(Pending::Message(message));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.expire_acks();
                    self.push(Event::Tick);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // The JobManager is shutting down.
                    self.push(Event::Cancel);
                    self.cancel_now();
                    return;
                }
            }
        }
    }

    /// Runs the work the last call left owed (the scheduler bounds each call), one bounded call
    /// at a time, appending the commands to `commands`: together they are those one unbounded
    /// call would have given. Descriptors are built only after the last (a hybrid producer may
    /// be deployed in a later call than its consumer, whose descriptors must see it).
    fn finish_owed_work(&mut self, commands: &mut Vec<Command>) {
        while self.scheduler.has_pending_work() {
            let call = CallTimer::start();
            let result = self.scheduler.continue_work();
            call.record(
                &mut self.max_stall,
                &mut self.max_cpu,
                self.ctx.metrics,
                || "continue_work".into(),
            );
            match result {
                Ok(more) => commands.extend(more),
                Err(e) => {
                    tracing::error!(job = %self.job.id, "bug: owed scheduler work failed: {e}");
                    return;
                }
            }
        }
    }

    fn cancel_now(&mut self) {
        while let Some(event) = self.next_event() {
            let now = self.now_ms();
            if let Ok(mut commands) = self.scheduler.handle(now, event) {
                self.finish_owed_work(&mut commands);
                self.apply(commands);
                self.speculative
                    .follow(&self.scheduler, &mut self.deployed_on);
                self.view.after_call(&mut self.scheduler);
            }
        }
    }

    /// Fails the tasks whose submission was not acknowledged within the RPC timeout of its
    /// hand-over, and sends what their TaskManagers' windows now have room for.
    fn expire_acks(&mut self) {
        let now = self.now_ms();
        for (attempt, task_manager) in self.submissions.expired(now) {
            if self.is_live(attempt) {
                self.rpc_timeouts += 1;
                let cause = format!(
                    "the task submission to {task_manager} was not acknowledged within {} ms",
                    self.ctx.rpc_timeout_ms
                );
                tracing::warn!(
                    job = %self.job.id,
                    vertex = attempt.vertex,
                    attempt = attempt.attempt,
                    "{cause}: the task fails"
                );
                let tm = self.task_manager_of(attempt);
                self.view.task_failed(&self.scheduler, attempt, tm, &cause);
                self.last_failure = Some(format!("{}: {cause}", self.vertex_name(attempt)));
                self.push(Event::TaskFailed(attempt, FailureCause::Task));
            }
            self.pump(task_manager);
        }
    }

    /// Sends what `task_manager`'s submission window has room for.
    fn pump(&mut self, task_manager: TaskManagerId) {
        let now = self.now_ms();
        self.submissions.pump(
            self.ctx.registry,
            task_manager,
            now,
            self.ctx.rpc_timeout_ms,
        );
    }

    /// An answer about `attempt` came from `from`: its submission window has room again.
    fn answered(&mut self, from: TaskManagerId, attempt: ExecutionAttemptId) {
        if let Some(task_manager) = self.submissions.answered_by(attempt, from) {
            self.pump(task_manager);
        }
    }

    /// `A#3` for an attempt of vertex A's subtask 3.
    fn vertex_name(&self, attempt: ExecutionAttemptId) -> String {
        let v = ExecutionVertexIndex(attempt.vertex);
        if attempt.vertex < self.scheduler.graph().num_execution_vertices() {
            self.scheduler.graph().execution_vertex_name(v)
        } else {
            format!("execution vertex {}", attempt.vertex)
        }
    }

    /// The TaskManager an attempt was deployed to (its own for a live speculative attempt), or
    /// none.
    fn task_manager_of(&self, attempt: ExecutionAttemptId) -> u32 {
        match self.speculative.runs_on(attempt) {
            Some(tm) => tm.0,
            None => self
                .deployed_on
                .get(attempt.vertex as usize)
                .copied()
                .unwrap_or(NO_TASK_MANAGER),
        }
    }

    fn is_current(&self, attempt: ExecutionAttemptId) -> bool {
        attempt.vertex < self.scheduler.graph().num_execution_vertices()
            && self.scheduler.attempt(ExecutionVertexIndex(attempt.vertex)) == attempt
    }

    /// Whether `attempt` runs or is about to, as the scheduler sees it: its vertex's current
    /// attempt in a state that is not terminal, or a live speculative attempt.
    fn is_live(&self, attempt: ExecutionAttemptId) -> bool {
        (self.is_current(attempt) && !self.state_of(attempt).is_terminal())
            || self.scheduler.is_speculative_attempt(attempt)
    }

    /// Whether a message about `attempt` comes from where it runs: this job, its current
    /// attempt on the TaskManager it was deployed to, or a live speculative attempt on its own
    /// TaskManager. Anything else (a late message of an earlier job or attempt, of a
    /// speculative attempt that lost its race, a peer that does not run it) is dropped.
    fn is_from_owner(&self, from: TaskManagerId, job: JobId, attempt: ExecutionAttemptId) -> bool {
        let owner = job == self.job.id
            && if self.is_current(attempt) {
                self.deployed_on[attempt.vertex as usize] == from.0
            } else {
                self.speculative.runs_on(attempt) == Some(from)
            };
        if !owner {
            tracing::debug!(job = %self.job.id, task_manager = %from, vertex = attempt.vertex, "message about a task it does not run dropped");
        }
        owner
    }

    fn state_of(&self, attempt: ExecutionAttemptId) -> ExecutionState {
        self.scheduler.state(ExecutionVertexIndex(attempt.vertex))
    }

    /// The next event to handle: queued messages are translated now, against the scheduler's
    /// current state; those that give none are skipped.
    fn next_event(&mut self) -> Option<Event> {
        while let Some(pending) = self.queue.pop_front() {
            match pending {
                Pending::Event(event) => return Some(event),
                Pending::Message(message) => {
                    if let Some(event) = self.translate(message) {
                        return Some(event);
                    }
                }
            }
        }
        None
    }

    fn push(&mut self, event: Event) {
        self.queue.push_back(Pending::Event(event));
    }

    /// Turns a message into a scheduler event, against the scheduler's current state; stale
    /// messages (an older attempt, a state the attempt has left) give none.
    fn translate(&mut self, event: LoopEvent) -> Option<Event> {
        match event {
            LoopEvent::TaskManagerRegistered { location, slots } => {
                self.participants.insert(location.id);
                self.view.task_manager(location);
                Some(Event::TaskManagerRegistered { location, slots })
            }
            LoopEvent::TaskManagerLost(id) => {
                self.submissions.task_manager_lost(id);
                self.last_failure = Some(format!("{id} was lost"));
                Some(Event::TaskManagerLost(id))
            }
            LoopEvent::Cancel => {
                self.view.cancelling();
                Some(Event::Cancel)
            }
            LoopEvent::Acknowledged {
                from,
                job,
                attempt,
                refused,
            } => {
                if job == self.job.id {
                    self.answered(from, attempt);
                }
                if !self.is_from_owner(from, job, attempt) {
                    return None;
                }
                let reason = refused?;
                if !self.is_live(attempt) {
                    return None;
                }
                tracing::warn!(job = %self.job.id, vertex = attempt.vertex, "task refused: {reason}");
                self.view.task_failed(
                    &self.scheduler,
                    attempt,
                    from.0,
                    &format!("task submission refused: {reason}"),
                );
                self.last_failure = Some(format!(
                    "{} was refused by {from}: {reason}",
                    self.vertex_name(attempt)
                ));
                Some(Event::TaskFailed(attempt, FailureCause::Task))
            }
            LoopEvent::TaskState {
                from,
                job,
                attempt,
                state,
                metrics,
            } => {
                if job == self.job.id {
                    self.answered(from, attempt);
                    self.partition_request_retries += metrics.partition_request_retries;
                }
                if !self.is_from_owner(from, job, attempt) {
                    return None;
                }
                let speculative = !self.is_current(attempt);
                // A speculative attempt starting is no re-run.
                if !(speculative && matches!(state, TaskState::Running)) {
                    self.data.on_state(
                        &self.job.tasks,
                        self.scheduler.graph(),
                        attempt,
                        &state,
                        &metrics,
                    );
                }
                if speculative {
                    // The scheduler tells a speculative attempt's events from stale ones.
                    return self.speculative_event(attempt, state, metrics);
                }
                let current = self.state_of(attempt);
                match state {
                    TaskState::Running if current == ExecutionState::Deploying => {
                        self.last_running = Some(Instant::now());
                        Some(Event::TaskRunning(attempt))
                    }
                    TaskState::Finished if current == ExecutionState::Running => {
                        self.view.finished(&self.scheduler, attempt, &metrics);
                        Some(self.finished_event(attempt, metrics))
                    }
                    TaskState::Failed {
                        reason,
                        partition_not_found,
                        non_recoverable,
                    } if !current.is_terminal() => Some(self.failed_event(
                        attempt,
                        &reason,
                        partition_not_found,
                        non_recoverable,
                    )),
                    _ => None,
                }
            }
        }
    }

    /// The event of a state message of a live speculative attempt (known to come from its
    /// TaskManager). The scheduler takes RUNNING, FINISHED (the first attempt of a vertex to
    /// finish wins) and FAILED of it as of any attempt.
    fn speculative_event(
        &mut self,
        attempt: ExecutionAttemptId,
        state: TaskState,
        metrics: TaskMetrics,
    ) -> Option<Event> {
        if !self.scheduler.is_speculative_attempt(attempt) {
            return None;
        }
        Some(match state {
            TaskState::Running => Event::TaskRunning(attempt),
            TaskState::Finished => {
                self.view.finished(&self.scheduler, attempt, &metrics);
                self.finished_event(attempt, metrics)
            }
            TaskState::Failed {
                reason,
                partition_not_found,
                non_recoverable,
            } => self.failed_event(attempt, &reason, partition_not_found, non_recoverable),
        })
    }

    /// A finish, with the bytes written only where a run-time decision reads them.
    fn finished_event(&self, attempt: ExecutionAttemptId, metrics: TaskMetrics) -> Event {
        if metrics.produced_bytes.is_empty() || !self.scheduler.is_adaptive() {
            Event::TaskFinished(attempt)
        } else {
            Event::TaskFinishedWithBytes(attempt, metrics.produced_bytes)
        }
    }

    /// A failure, logged and kept as the report's last task failure; a non-recoverable one
    /// (it would recur on every attempt) fails the job at once.
    fn failed_event(
        &mut self,
        attempt: ExecutionAttemptId,
        reason: &str,
        partition_not_found: Option<PartitionRef>,
        non_recoverable: bool,
    ) -> Event {
        tracing::info!(job = %self.job.id, vertex = attempt.vertex, attempt = attempt.attempt, non_recoverable, "task failed: {reason}");
        let failure = format!("{}: {reason}", self.vertex_name(attempt));
        self.last_failure = Some(failure.clone());
        self.last_task_failure = Some(failure);
        let tm = self.task_manager_of(attempt);
        self.view.task_failed(&self.scheduler, attempt, tm, reason);
        let cause = match partition_not_found {
            _ if non_recoverable => FailureCause::NonRecoverable,
            Some(p) => FailureCause::PartitionNotFound(IntermediateResultPartitionId {
                result: conflux_graph::IntermediateDataSetIndex(p.result),
                partition: p.partition,
            }),
            None => FailureCause::Task,
        };
        Event::TaskFailed(attempt, cause)
    }

    fn apply(&mut self, commands: Vec<Command>) {
        let mut deploys: Vec<(ExecutionAttemptId, AllocationId)> = Vec::new();
        let mut speculative: Vec<(ExecutionAttemptId, AllocationId)> = Vec::new();
        for command in commands {
            match command {
                Command::Deploy { tasks, .. } => deploys.extend(tasks),
                Command::DeploySpeculative { tasks } => speculative.extend(tasks),
                Command::Cancel(attempt) => {
                    // A speculative attempt on its own TaskManager; any other attempt is its
                    // vertex's current one (or was, until a speculative attempt won in this
                    // call: `deployed_on` follows the winner only after the call).
                    let tm = match self.speculative.take(attempt) {
                        Some(tm) => tm.0,
                        None => self.deployed_on[attempt.vertex as usize],
                    };
                    // A submission still waiting here is withdrawn instead: never sent.
                    if tm != NO_TASK_MANAGER && !self.submissions.withdraw(attempt) {
                        if let Some(outbox) = self.ctx.registry.outbox(TaskManagerId(tm)) {
                            outbox.send(&ToTaskManager::CancelTask(attempt));
                        }
                    }
                }
                Command::ResetVertices(vertices) => {
                    let graph = Arc::clone(self.scheduler.graph());
                    for v in vertices {
                        for p in graph.produced_partitions(v) {
                            self.factory.on_producer_reset(&graph, p);
                        }
                    }
                }
                Command::ReleaseGroup { group, partitions } => {
                    self.factory.on_group_released(group);
                    self.release(&partitions);
                }
                Command::JobStatus { status, reason } => {
                    self.view.job_status(status, reason.as_deref());
                    if status.is_terminal() {
                        self.factory.clear();
                    }
                }
                Command::Restart(vertices) => {
                    tracing::warn!(
                        job = %self.job.id,
                        restart = self.scheduler.restarts(),
                        tasks = vertices.len(),
                        cause = self.last_failure.as_deref().unwrap_or("unknown"),
                        "restarting tasks after a failure"
                    );
                }
                Command::JobVertexInitialized {
                    job_vertex,
                    parallelism,
                } => {
                    self.view.vertex_initialized(job_vertex, parallelism);
                    let graph = Arc::clone(self.scheduler.graph());
                    self.deployed_on
                        .resize(graph.num_execution_vertices() as usize, NO_TASK_MANAGER);
                    if let Err(e) = self.factory.on_vertex_initialized(&graph, job_vertex) {
                        tracing::error!(job = %self.job.id, "bug: task information: {e}");
                    }
                }
            }
        }
        for failure in self.factory.take_blob_failures() {
            tracing::warn!(job = %self.job.id, %failure, "descriptor blob operation failed");
        }
        // A deploy of this call may already be cancelled again: ship only current, deploying
        // attempts.
        deploys
            .retain(|(a, _)| self.is_current(*a) && self.state_of(*a) == ExecutionState::Deploying);
        deploys.extend(
            speculative
                .into_iter()
                .filter(|(a, _)| self.scheduler.is_speculative_attempt(*a)),
        );
        if !deploys.is_empty() {
            self.deploy(deploys);
        }
    }

    /// Tells the TaskManagers holding `partitions` to release them.
    fn release(&mut self, partitions: &[IntermediateResultPartitionId]) {
        let graph = self.scheduler.graph();
        let mut by_task_manager: HashMap<u32, Vec<PartitionRef>> = HashMap::new();
        for p in partitions {
            let producer = graph.job_graph().data_set(p.result).producer;
            let vertex = graph.execution_vertices_of(producer).start + p.partition;
            let tm = self.deployed_on[vertex as usize];
            if tm != NO_TASK_MANAGER {
                by_task_manager.entry(tm).or_default().push(PartitionRef {
                    result: p.result.0,
                    partition: p.partition,
                });
            }
        }
        for (tm, partitions) in by_task_manager {
            if let Some(outbox) = self.ctx.registry.outbox(TaskManagerId(tm)) {
                outbox.send(&ToTaskManager::ReleasePartitions {
                    job: self.job.id,
                    partitions,
                });
            }
        }
    }

    fn deploy(&mut self, deploys: Vec<(ExecutionAttemptId, AllocationId)>) {
        let graph = Arc::clone(self.scheduler.graph());
        for (a, _) in &deploys {
            if let Err(e) =
                self.factory
                    .prepare_groups(&graph, ExecutionVertexIndex(a.vertex), &self.scheduler)
            {
                tracing::warn!(job = %self.job.id, vertex = a.vertex, "descriptor groups: {e}");
            }
        }
        let factory = &self.factory;
        let scheduler = &self.scheduler;
        let (tasks, bytes, options, job_secret) = (
            &self.job.tasks,
            self.synthetic_bytes.as_ref(),
            &self.job.options,
            self.job.secret,
        );
        // A descriptor that cannot be built fails its task as any task failure; a message
        // that cannot be encoded would fail every attempt alike: non-recoverable.
        let frames: Vec<Result<bytes::Bytes, (String, FailureCause)>> = deploys
            .par_iter()
            .map(|(a, slot)| {
                let task = |e: String| (e, FailureCause::Task);
                let tdd = factory
                    .create_with(&graph, *a, *slot, scheduler)
                    .map_err(|e| task(e.to_string()))?;
                let encoded = encode_tdd(&tdd).map_err(|e| task(e.to_string()))?;
                encode(&ToTaskManager::SubmitTask {
                    tdd: bytes::Bytes::from(encoded),
                    task: task_spec(tasks, scheduler, bytes, options, *a),
                    job_secret,
                })
                .map_err(|e| (e.to_string(), FailureCause::NonRecoverable))
            })
            .collect();
        self.first_submission.get_or_insert_with(Instant::now);
        let mut per_task_manager: HashMap<TaskManagerId, u64> = HashMap::new();
        for ((attempt, slot), frame) in deploys.into_iter().zip(frames) {
            let frame = match frame {
                Ok(frame) => {
                    self.ctx.metrics.descriptor_bytes.inc_by(frame.len() as u64);
                    frame
                }
                Err((e, cause)) => {
                    tracing::warn!(job = %self.job.id, vertex = attempt.vertex, "descriptor: {e}");
                    let failure = format!("{}: {e}", self.vertex_name(attempt));
                    self.last_failure = Some(failure.clone());
                    self.last_task_failure = Some(failure);
                    self.push(Event::TaskFailed(attempt, cause));
                    continue;
                }
            };
            if self.scheduler.is_speculative_attempt(attempt) {
                self.speculative.deployed(attempt, slot.task_manager);
            } else {
                self.deployed_on[attempt.vertex as usize] = slot.task_manager.0;
                if attempt.attempt > 0 {
                    if let Some(since) = self.failover_since.take() {
                        let took = since.elapsed();
                        self.max_loss_to_redeploy = self.max_loss_to_redeploy.max(Some(took));
                    }
                }
            }
            self.tasks_deployed += 1;
            *self
                .tasks_per_task_manager
                .entry(slot.task_manager)
                .or_default() += 1;
            *per_task_manager.entry(slot.task_manager).or_default() += 1;
            self.submissions.push(slot.task_manager, attempt, frame);
        }
        for &tm in per_task_manager.keys() {
            self.pump(tm);
        }
        let mut registry = self.ctx.registry.lock();
        for (tm, n) in per_task_manager {
            if let Some(record) = registry.records.get_mut(&tm) {
                record.job_tasks += n;
            }
        }
    }
}
