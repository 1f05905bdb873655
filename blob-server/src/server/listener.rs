//! The accept loop: HTTP/1 connections with a cap, a header-read timeout and a stall timeout,
//! served by the router until shutdown.
//!
//! As Flink's `BlobServer`, at most `max_connections` connections are served at once; past
//! the cap no connection is accepted (it waits in the kernel's listen backlog, costing no
//! descriptor of this process) until one closes. A connection waiting for a request's head
//! (a slow client or an idle keep-alive one) is closed after the header-read timeout, so
//! idle sockets cannot hold the cap; a download the client stops reading is closed after the
//! stall timeout (uploads time out in the upload handler, which answers 408).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Sleep;

use super::state::ServerCore;

/// How long to wait before accepting again after `accept` failed (e.g. no descriptor left).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

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
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop, stopped) = watch::channel(());
    let mut connections = JoinSet::new();
    loop {
        if permits.available_permits() == 0 {
            tracing::warn!(
                max_connections = limits.max_connections,
                "blob server at its connection cap; new connections wait"
            );
        }
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
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
        // Small requests must not wait for Nagle's algorithm.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        let io = TokioIo::new(StallTimeout::new(tcp, limits.stall_timeout));
        let service = TowerToHyperService::new(app.clone());
        let mut stopped = stopped.clone();
        let open = OpenConnection::new(Arc::clone(&core));
        connections.spawn(async move {
            let _open = (permit, open);
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
