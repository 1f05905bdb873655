//! Connections of the service: an accept loop that keeps at most `max_connections` open, and
//! per connection hyper's HTTP/1 server with a header-read timeout and an idle timeout.
//! `axum::serve` has neither (it sets no timer), so 200 silent sockets could hold 200
//! descriptors forever.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

use super::config::ServiceConfig;

/// The connection limits of [`ServiceConfig`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
}

/// The longest timeout honoured (a year): `Instant + Duration::MAX` would overflow.
const LONGEST_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

impl Limits {
    pub(super) fn of(config: &ServiceConfig) -> Limits {
        Limits {
            header_read_timeout: config.header_read_timeout.min(LONGEST_TIMEOUT),
            idle_timeout: config.idle_timeout.min(LONGEST_TIMEOUT),
            // tokio's semaphore takes at most u32::MAX >> 3 permits.
            max_connections: config.max_connections.clamp(1, Semaphore::MAX_PERMITS),
        }
    }
}

/// Accepts connections while fewer than `max_connections` are open (the others wait in the
/// listen backlog, holding no descriptor of ours), until `shutdown` completes; then asks every
/// connection to finish its request and close, and waits for them.
///
/// # Errors
/// None so far: accept errors (such as running out of descriptors) are logged and retried.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // EMFILE and the like: retrying at once would spin.
                    tracing::warn!(%error, "accepting a connection failed; retrying in 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Small answers must not wait for Nagle's algorithm.
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            tcp,
            peer,
            router.clone(),
            limits,
            stopped.clone(),
            slot,
        ));
    }
    let _ = stop.send(true);
    drop(listener);
    // Every open connection holds a slot until it is closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// Serves one connection until the client closes it, a timeout closes it, or the service
/// stops (after the request in progress).
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
    _slot: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Tracked {
        inner: tcp,
        activity: Arc::clone(&activity),
    });
    let requests = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let busy = Busy::begin(&requests);
        let router = router.clone();
        async move {
            let response = router.oneshot(request.map(Body::new)).await;
            drop(busy);
            response
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        let deadline = activity.idle_deadline(limits.idle_timeout);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection closed");
                }
                return;
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(deadline.into()) => {
                if activity.is_idle(limits.idle_timeout) {
                    // Dropping the connection closes the socket, also when a client stopped
                    // reading its answer (a graceful shutdown would wait for that answer).
                    tracing::debug!(%peer, "closing an idle connection");
                    return;
                }
            }
        }
    }
}

/// When a connection last moved a byte, and how many of its requests are being handled.
#[derive(Debug)]
struct Activity {
    origin: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.origin + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// When the connection would become idle: `idle` after the last byte, or `idle` from now
    /// while a request is being handled.
    fn idle_deadline(&self, idle: Duration) -> Instant {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            Instant::now() + idle
        } else {
            self.last() + idle
        }
    }

    fn is_idle(&self, idle: Duration) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && self.last().elapsed() >= idle
    }
}

/// A request being handled; the connection is not idle meanwhile.
struct Busy(Arc<Activity>);

impl Busy {
    fn begin(activity: &Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A socket that records when it last read or wrote a byte.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.touch();
        }
        result
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_of_any_length_are_usable() {
        let limits = Limits::of(&ServiceConfig {
            header_read_timeout: Duration::MAX,
            idle_timeout: Duration::MAX,
            max_connections: usize::MAX,
            ..ServiceConfig::default()
        });
        assert_eq!(limits.idle_timeout, LONGEST_TIMEOUT);
        assert_eq!(limits.header_read_timeout, LONGEST_TIMEOUT);
        assert_eq!(limits.max_connections, Semaphore::MAX_PERMITS);
        // Deadlines of the longest timeout do not overflow, busy or idle.
        let activity = Arc::new(Activity::new());
        assert!(activity.idle_deadline(limits.idle_timeout) > Instant::now());
        let busy = Busy::begin(&activity);
        assert!(activity.idle_deadline(limits.idle_timeout) > Instant::now());
        assert!(
            !activity.is_idle(Duration::ZERO),
            "a request is being handled"
        );
        drop(busy);
        assert!(activity.is_idle(Duration::ZERO));
        assert!(!activity.is_idle(limits.idle_timeout));
    }
}
