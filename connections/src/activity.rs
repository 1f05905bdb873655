//! What a connection is doing: when it last made progress (a socket wrapper records bytes
//! moved, or the server touches it when a frame does something) and how much of its work is in
//! progress, for idle timeouts and for choosing which connection to close when the cap is
//! reached.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::timeout::LONGEST_TIMEOUT;

/// When a connection last made progress, and how many of its requests (or channels) are in
/// progress. Shared between the connection's task and the cap's registry; lock-free.
#[derive(Debug)]
pub struct Activity {
    origin: Instant,
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

impl Default for Activity {
    fn default() -> Self {
        Activity::new()
    }
}

impl Activity {
    /// A connection that starts now: its start counts as its last progress.
    pub fn new() -> Activity {
        Activity {
            origin: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    /// Records progress now.
    pub fn touch(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// When the connection last made progress (its start before the first).
    pub fn last(&self) -> Instant {
        self.origin + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// When the connection would become idle: `idle` after its last progress, or `idle` from
    /// now while it is busy. Timeouts above a year count as a year.
    pub fn idle_deadline(&self, idle: Duration) -> Instant {
        let idle = idle.min(LONGEST_TIMEOUT);
        if self.is_busy() {
            Instant::now() + idle
        } else {
            self.last() + idle
        }
    }

    /// Whether it is not busy and made no progress for `idle`.
    pub fn is_idle(&self, idle: Duration) -> bool {
        !self.is_busy() && self.last().elapsed() >= idle
    }

    /// Whether any of its requests (or channels) is in progress.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > 0
    }
}

/// A request (or channel) in progress; the connection is busy meanwhile, and its end counts
/// as progress.
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Busy {
    /// Marks `activity` busy until the returned guard is dropped.
    pub fn begin(activity: &Arc<Activity>) -> Busy {
        activity.busy.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(activity))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A socket that records its traffic as progress: every byte read or written, or (with
/// [`Tracked::with_progress`]) every `bytes` bytes, so that a client trickling a byte at a time
/// does not look active.
#[derive(Debug)]
pub struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
    progress_bytes: usize,
    moved: usize,
}

impl<S> Tracked<S> {
    /// `inner`, every byte it moves recorded in `activity`.
    pub fn new(inner: S, activity: Arc<Activity>) -> Tracked<S> {
        Tracked::with_progress(inner, activity, 1)
    }

    /// `inner`, progress recorded in `activity` each time `bytes` (at least 1) more bytes have
    /// moved, in either direction.
    pub fn with_progress(inner: S, activity: Arc<Activity>, bytes: usize) -> Tracked<S> {
        Tracked {
            inner,
            activity,
            progress_bytes: bytes.max(1),
            moved: 0,
        }
    }

    fn moved(&mut self, n: usize) {
        self.moved += n;
        if self.moved >= self.progress_bytes {
            self.moved = 0;
            self.activity.touch();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) {
            let n = buf.filled().len() - before;
            if n > 0 {
                this.moved(n);
            }
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = result {
            if n > 0 {
                this.moved(n);
            }
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
        if let Poll::Ready(Ok(n)) = result {
            if n > 0 {
                this.moved(n);
            }
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
        let activity = Arc::new(Activity::new());
        assert!(activity.idle_deadline(Duration::MAX) > Instant::now());
        let busy = Busy::begin(&activity);
        assert!(activity.idle_deadline(Duration::MAX) > Instant::now());
        assert!(
            !activity.is_idle(Duration::ZERO),
            "a request is in progress"
        );
        drop(busy);
        assert!(activity.is_idle(Duration::ZERO));
        assert!(!activity.is_idle(LONGEST_TIMEOUT));
    }

    #[tokio::test]
    async fn a_trickle_below_the_progress_size_is_no_progress() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, server) = tokio::io::duplex(1024);
        let activity = Arc::new(Activity::new());
        let mut tracked = Tracked::with_progress(server, Arc::clone(&activity), 16);
        let mut client = client;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let start = activity.last();
        let mut byte = [0u8; 1];
        for _ in 0..15 {
            client.write_all(b"x").await.expect("write");
            tracked.read_exact(&mut byte).await.expect("read");
        }
        assert_eq!(activity.last(), start, "15 bytes are no progress");
        client.write_all(b"x").await.expect("write");
        tracked.read_exact(&mut byte).await.expect("read");
        assert!(activity.last() > start, "the 16th byte is");
    }
}
