//! Running async work from the synchronous `BlobWriter` / `BlobReader` methods.

use std::future::Future;

use tokio::runtime::Handle;

/// Runs `fut` to completion on `handle`'s runtime and returns its output, from any thread.
///
/// Outside a runtime this is `handle.block_on`. Inside one (a worker or `spawn_blocking`
/// thread), `block_on` would panic, so the future is driven from a scoped helper thread and the
/// caller blocks until it is done, as it would on any synchronous I/O. The runtime's I/O driver
/// is run by its own threads, so this needs a multi-thread runtime or a current-thread runtime
/// that some other thread keeps running.
///
/// Like `std::thread::spawn`, panics if the operating system cannot start a thread.
pub(crate) fn block_on<F>(handle: &Handle, fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if Handle::try_current().is_err() {
        return handle.block_on(fut);
    }
    std::thread::scope(|scope| match scope.spawn(|| handle.block_on(fut)).join() {
        Ok(output) => output,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
