//! The accept loop: at most `max_connections` connections open (closing the longest idle one
//! to make room, `conflux-connections`' cap), and per connection hyper's HTTP/1 server with a
//! header-read timeout and an idle timeout. `axum::serve` has neither (it sets no timer), so
//! 200 silent sockets could hold 200 descriptors forever.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use conflux_connections::{Activity, Busy, ConnectionCap, Slot, Tracked, LONGEST_TIMEOUT};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

/// The bounds of one server's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest time a connection may take to send a request's head, counted from when the
    /// server starts waiting for it (a new connection, or the previous answer sent), in
    /// hyper's sense: slow or silent clients are disconnected.
    pub header_read_timeout: Duration,
    /// A connection that moves no byte for this long while none of its requests is being
    /// handled is closed: idle keep-alive connections, and clients that stop reading their
    /// answer (an answer's body is sent after its handler returned).
    pub idle_timeout: Duration,
    /// Most open connections. A new connection beyond it closes the open one that moved no
    /// byte for the longest time and handles no request; when all handle requests, it waits
    /// and the connections behind it wait in the listen backlog, holding none of the
    /// server's descriptors.
    pub max_connections: usize,
}

impl Limits {
    /// The limits, made usable: timeouts of at most a year, and 1 to tokio's most semaphore
    /// permits (`u32::MAX >> 3`) connections.
    pub fn new(
        header_read_timeout: Duration,
        idle_timeout: Duration,
        max_connections: usize,
    ) -> Limits {
        Limits {
            header_read_timeout,
            idle_timeout,
            max_connections,
        }
        .clamped()
    }

    fn clamped(self) -> Limits {
        Limits {
            header_read_timeout: self.header_read_timeout.min(LONGEST_TIMEOUT),
            idle_timeout: self.idle_timeout.min(LONGEST_TIMEOUT),
            max_connections: self.max_connections.clamp(1, Semaphore::MAX_PERMITS),
        }
    }
}

/// How many connections a server has open now (accepted and being served), shared with its
/// owner for statistics and metrics.
#[derive(Clone, Debug, Default)]
pub struct OpenConnections(Arc<AtomicU64>);

impl OpenConnections {
    /// Connections open now.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts one connection in [`OpenConnections`] while it lives.
struct Counted(OpenConnections);

impl Counted {
    fn new(open: &OpenConnections) -> Counted {
        open.0.fetch_add(1, Ordering::Relaxed);
        Counted(open.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves `router` on `listener` until `shutdown` completes, with at most `max_connections`
/// open: when a new connection finds them all taken, the one that moved no byte for the
/// longest time and handles no request is closed to make room (so silent sockets cannot lock
/// clients out); when all handle requests, the new one waits (and the ones behind it wait in
/// the listen backlog, holding no descriptor of ours). `open_connections` counts the
/// connections being served. On shutdown the listener is closed, every connection is asked to
/// finish its request and close, and waited for.
///
/// # Errors
/// None so far: accept errors (such as running out of descriptors) are logged and retried.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    open_connections: OpenConnections,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let limits = limits.clamped();
    let cap = ConnectionCap::new(limits.max_connections);
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
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
        let activity = Arc::new(Activity::new());
        if cap.open() >= cap.max_connections() {
            tracing::debug!(%peer, "connection cap reached: closing the longest idle connection");
        }
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = cap.admit(Arc::clone(&activity)) => slot,
        };
        // Small answers must not wait for Nagle's algorithm.
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            Tracked::new(tcp, Arc::clone(&activity)),
            peer,
            router.clone(),
            limits,
            Watch {
                activity,
                slot,
                stop: stopped.clone(),
                _counted: Counted::new(&open_connections),
            },
        ));
    }
    let _ = stop.send(true);
    drop(listener);
    // Every open connection holds a slot until it is closed.
    cap.all_closed().await;
    Ok(())
}

/// What ends a connection besides its client: its activity (idle timeout), its slot in the cap
/// (closed to make room), and the server's stop; and its place in the open count.
struct Watch {
    activity: Arc<Activity>,
    slot: Slot,
    stop: watch::Receiver<bool>,
    _counted: Counted,
}

/// Serves one connection until the client closes it, a timeout closes it, it is closed to make
/// room, or the server stops (after the request in progress).
async fn connection(
    io: Tracked<TcpStream>,
    peer: SocketAddr,
    router: Router,
    limits: Limits,
    mut watch: Watch,
) {
    let requests = Arc::clone(&watch.activity);
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
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let mut stopping = false;
    loop {
        let deadline = watch.activity.idle_deadline(limits.idle_timeout);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection closed");
                }
                return;
            }
            _ = watch.stop.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            () = watch.slot.close_requested() => {
                tracing::debug!(%peer, "closed to make room for a new connection");
                return;
            }
            () = tokio::time::sleep_until(deadline.into()) => {
                if watch.activity.is_idle(limits.idle_timeout) {
                    // Dropping the connection closes the socket, also when a client stopped
                    // reading its answer (a graceful shutdown would wait for that answer).
                    tracing::debug!(%peer, "closing an idle connection");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_of_any_length_are_usable() {
        let limits = Limits::new(Duration::MAX, Duration::MAX, usize::MAX);
        assert_eq!(limits.idle_timeout, LONGEST_TIMEOUT);
        assert_eq!(limits.header_read_timeout, LONGEST_TIMEOUT);
        assert_eq!(limits.max_connections, Semaphore::MAX_PERMITS);
        assert_eq!(
            Limits::new(Duration::ZERO, Duration::ZERO, 0).max_connections,
            1
        );
    }
}
