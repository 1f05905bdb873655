//! What a connection is doing: when it last moved a byte (a socket wrapper records it) and
//! how many of its requests are being handled, for the idle timeout and for choosing which
//! connection to close when the cap is reached.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// When a connection last moved a byte, and how many of its requests are being handled.
#[derive(Debug)]
pub(crate) struct Activity {
    origin: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    pub(crate) fn new() -> Activity {
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

    /// When the connection last moved a byte (its start before the first).
    pub(crate) fn last(&self) -> Instant {
        self.origin + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// When the connection would become idle: `idle` after the last byte, or `idle` from now
    /// while a request is being handled.
    pub(crate) fn idle_deadline(&self, idle: Duration) -> Instant {
        if !self.is_between_requests() {
            Instant::now() + idle
        } else {
            self.last() + idle
        }
    }

    /// Whether no request is being handled and no byte moved for `idle`.
    pub(crate) fn is_idle(&self, idle: Duration) -> bool {
        self.is_between_requests() && self.last().elapsed() >= idle
    }

    /// Whether none of the connection's requests is being handled.
    pub(crate) fn is_between_requests(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0
    }
}

/// A request being handled; the connection is not idle meanwhile.
pub(crate) struct Busy(Arc<Activity>);

impl Busy {
    pub(crate) fn begin(activity: &Arc<Activity>) -> Busy {
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
pub(crate) struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl Tracked {
    /// `tcp`, recording its traffic in `activity`.
    pub(crate) fn new(tcp: TcpStream, activity: Arc<Activity>) -> Tracked {
        Tracked {
            inner: tcp,
            activity,
        }
    }
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
