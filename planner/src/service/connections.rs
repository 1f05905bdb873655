//! Connections of the service: an accept loop that keeps at most `max_connections` open
//! (closing the longest idle one to make room), and per connection hyper's HTTP/1 server with
//! a header-read timeout and an idle timeout. The cap and each connection's activity (bytes
//! moved, requests in progress) are `conflux-connections`', shared with the blob server and the
//! data server. `axum::serve` has neither (it sets no timer), so 200 silent sockets could hold 200
//! descriptors forever.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use conflux_connections::{Activity, Busy, ConnectionCap, Slot, Tracked, LONGEST_TIMEOUT};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

use super::config::ServiceConfig;

/// The connection limits of [`ServiceConfig`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    header_read_timeout: Duration,
    idle_timeout: Duration,
    max_connections: usize,
}

impl Limits {
    pub(super) fn of(config: &ServiceConfig) -> Limits {
        Limits {
            header_read_timeout: config.header_read_timeout.min(LONGEST_TIMEOUT),
            idle_timeout: config.idle_timeout.min(LONGEST_TIMEOUT),
            // tokio's semaphore takes at most u32::MAX >> 3 permits.
            max_connections: config
                .max_connections
                .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
        }
    }
}

/// Accepts connections until `shutdown` completes, with at most `max_connections` open: when
/// a new connection finds them all taken, the one that moved no byte for the longest time and
/// handles no request is closed to make room (so silent sockets cannot lock clients out);
/// when all handle requests, the new one waits (and the ones behind it wait in the listen
/// backlog, holding no descriptor of ours). On shutdown every connection is asked to finish
/// its request and close, and waited for.
///
/// # Errors
/// None so far: accept errors (such as running out of descriptors) are logged and retried.
pub(super) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
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
            },
        ));
    }
    let _ = stop.send(true);
    drop(listener);
    // Every open connection holds a slot until it is closed.
    cap.all_closed().await;
    Ok(())
}

/// What ends a connection besides its client: its activity (idle timeout), its entry in the
/// registry (closed to make room), and the service's stop.
struct Watch {
    activity: Arc<Activity>,
    slot: Slot,
    stop: watch::Receiver<bool>,
}

/// Serves one connection until the client closes it, a timeout closes it, it is closed to make
/// room, or the service stops (after the request in progress).
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
    use std::time::Instant;

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
        assert_eq!(limits.max_connections, tokio::sync::Semaphore::MAX_PERMITS);
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
