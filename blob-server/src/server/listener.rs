//! The accept loop: HTTP/1 connections with a cap, a header-read timeout and a stall timeout,
//! served by the router until shutdown.
//!
//! As Flink's `BlobServer`, at most `max_connections` connections are served at once. When a
//! new connection finds them all taken, the one that made no progress for the longest time is
//! closed to make room (`conflux-connections`' cap, shared with the planning service and the
//! data server): idle ones first (waiting for a request's head), then ones whose request moved
//! less than [`PROGRESS_BYTES`] for [`STALLED_AFTER`] (a client trickling its upload). Only
//! when every connection is making progress does the new one wait (and those behind it wait in
//! the kernel's listen backlog, costing no descriptor of this process). A connection waiting
//! for a request's head is also closed after the header-read timeout, a download the client
//! stops reading after the stall timeout, and an upload that sends too little per idle
//! timeout gets 408 (the upload handler).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use conflux_connections::{Activity, Busy, ConnectionCap, Tracked};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Sleep;

use super::state::ServerCore;

/// How long to wait before accepting again after `accept` failed (e.g. no descriptor left).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Bytes a connection must move (either way) to count as making progress: a trickle of fewer
/// bytes does not keep it from being closed to make room.
pub(crate) const PROGRESS_BYTES: usize = 16 * 1024;

/// A connection whose request made no progress for this long may be closed to make room when
/// the cap is reached.
pub(crate) const STALLED_AFTER: Duration = Duration::from_secs(2);

/// The limits of the accept loop.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// Connections served at once.
    pub(super) max_connections: usize,
    /// Time for a request's head, from when the connection waits for one.
    pub(super) header_read_timeout: Duration,
    /// Time a response may wait for the client to take more of it.
    pub(super) stall_timeout: Duration,
}

/// Serves `app` on `listener` within `limits` until `shutdown` fires (or its sender is
/// dropped); then stops accepting, lets open connections finish their requests, and returns
/// once they are closed.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    core: Arc<ServerCore>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let cap = ConnectionCap::new(limits.max_connections).shedding_stalled(STALLED_AFTER);
    let (stop, stopped) = watch::channel(());
    let mut connections = JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot accept a connection; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        let activity = Arc::new(Activity::new());
        if cap.open() >= cap.max_connections() {
            tracing::debug!(
                max_connections = cap.max_connections(),
                "blob server at its connection cap: closing the least active connection"
            );
        }
        let slot = tokio::select! {
            _ = &mut shutdown => break,
            slot = cap.admit(Arc::clone(&activity)) => slot,
        };
        // Small requests must not wait for Nagle's algorithm.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let io = TokioIo::new(Tracked::with_progress(
            StallTimeout::new(tcp, limits.stall_timeout),
            Arc::clone(&activity),
            PROGRESS_BYTES,
        ));
        let requests = Arc::clone(&activity);
        let app = app.clone();
        let service = hyper::service::service_fn(move |request| {
            // The connection is busy while a request is handled; its end is progress.
            let busy = Busy::begin(&requests);
            let service = TowerToHyperService::new(app.clone());
            async move {
                let response = hyper::service::Service::call(&service, request).await;
                drop(busy);
                response
            }
        });
        let mut stopped = stopped.clone();
        let open = OpenConnection::new(Arc::clone(&core));
        connections.spawn(async move {
            let _open = open;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .serve_connection(io, service);
            tokio::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                _ = stopped.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
                () = slot.close_requested() => {
                    tracing::debug!(peer = %peer, "blob connection closed to make room for another");
                    return;
                }
            };
            if let Err(e) = served {
                tracing::debug!(peer = %peer, error = %e, "blob connection closed");
            }
        });
    }
    drop(listener);
    stop.send(()).ok();
    while connections.join_next().await.is_some() {}
}

/// Counts a connection in [`ServerStats::open_connections`](crate::ServerStats) while it
/// lives.
struct OpenConnection(Arc<ServerCore>);

impl OpenConnection {
    fn new(core: Arc<ServerCore>) -> OpenConnection {
        core.counters
            .open_connections
            .fetch_add(1, Ordering::Relaxed);
        OpenConnection(core)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0
            .counters
            .open_connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// A stream whose writes fail with [`io::ErrorKind::TimedOut`] once one has waited for the
/// peer longer than `limit`: a client that stops reading a download loses its connection
/// instead of holding it (and the open blob file) forever. Reads are not limited here: the
/// header-read timeout and the upload handler bound them.
#[derive(Debug)]
struct StallTimeout {
    inner: TcpStream,
    limit: Duration,
    /// Armed while a write is pending; dropped when one makes progress.
    timer: Option<Pin<Box<Sleep>>>,
}

impl StallTimeout {
    fn new(inner: TcpStream, limit: Duration) -> StallTimeout {
        StallTimeout {
            inner,
            limit,
            timer: None,
        }
    }

    /// Called when a write is pending: `Pending` until the stall has lasted `limit`.
    fn poll_stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("client took nothing for {} ms", limit.as_millis()),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Pending => self.poll_stall(cx),
            ready => {
                self.timer = None;
                ready
            }
        }
    }
}

impl AsyncRead for StallTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for StallTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progressed(result, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progressed(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.progressed(result, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
