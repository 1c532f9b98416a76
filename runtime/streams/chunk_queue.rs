//! A download's chunks handled in order on one blocking-pool thread while the runtime thread
//! reads the next frames.
//!
//! Decoding, hashing and writing a chunk took as long as receiving and parsing its frame, and
//! the two used to alternate: a chunk went to the blocking pool, the stream waited for it to
//! come back, and only then was the next frame read. Measured on the 2-core bench machine (64
//! MiB in 64 KiB chunks, bench_driver's download row), that ran at 204 MiB/s, 0.55x a native
//! client doing the same work in one thread; overlapped, at about 300 MiB/s.
//!
//! At most [`WAITING`] chunks wait besides the one being handled, so a download holds at most
//! two encoded chunks, as many as before plus one. A queue dropped or finished with `abandon`
//! skips the chunks still waiting, so cancelling a download on a slow disk does not first write
//! what was queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::StreamFailure;

/// Chunks that may wait while the worker handles one.
const WAITING: usize = 1;

/// What the worker leaves: its state and whether every chunk it took was handled.
pub type Finished<W> = (W, Result<(), StreamFailure>);

pub struct ChunkQueue<W> {
    sender: Option<mpsc::Sender<String>>,
    worker: JoinHandle<Finished<W>>,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// What the handler returned for the last chunk it handled (bytes written so far).
    done: AtomicU64,
    /// Set when the queue is given up: the worker stops before its next chunk.
    abandoned: AtomicBool,
}

impl<W: Send + 'static> ChunkQueue<W> {
    /// Starts the worker. `handle` gets each chunk in order and returns the bytes written so far;
    /// its first failure stops the worker.
    pub fn start<H>(mut state: W, mut handle: H) -> ChunkQueue<W>
    where
        H: FnMut(&mut W, String) -> Result<u64, StreamFailure> + Send + 'static,
    {
        let (sender, mut receiver) = mpsc::channel::<String>(WAITING);
        let shared = Arc::new(Shared::default());
        let seen = shared.clone();
        let worker = tokio::task::spawn_blocking(move || {
            while let Some(chunk) = receiver.blocking_recv() {
                if seen.abandoned.load(Ordering::Acquire) {
                    break;
                }
                match handle(&mut state, chunk) {
                    Ok(done) => seen.done.store(done, Ordering::Release),
                    Err(failure) => return (state, Err(failure)),
                }
            }
            (state, Ok(()))
        });
        ChunkQueue {
            sender: Some(sender),
            worker,
            shared,
        }
    }

    /// Queues one chunk, waiting while the queue is full. `false` when the worker has stopped
    /// (a chunk failed): [`ChunkQueue::finish`] then gives its failure.
    pub async fn push(&mut self, chunk: String) -> bool {
        match &self.sender {
            Some(sender) => sender.send(chunk).await.is_ok(),
            None => false,
        }
    }

    /// What the handler returned for the last chunk handled so far.
    pub fn done(&self) -> u64 {
        self.shared.done.load(Ordering::Acquire)
    }

    /// Waits for the worker: after every queued chunk, or with `abandon` after the chunk it is
    /// handling. `None` if the worker panicked (its state is gone with it).
    pub async fn finish(mut self, abandon: bool) -> Option<Finished<W>> {
        if abandon {
            self.shared.abandoned.store(true, Ordering::Release);
        }
        drop(self.sender.take());
        (&mut self.worker).await.ok()
    }
}

impl<W> Drop for ChunkQueue<W> {
    fn drop(&mut self) {
        self.shared.abandoned.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ErrorKind;
    use crate::streams::StreamError;

    fn refuse() -> StreamFailure {
        StreamFailure::refused(ErrorKind::BadFrame, "refused", "none")
    }

    #[tokio::test]
    async fn chunks_are_handled_in_order_and_the_state_comes_back() {
        let mut queue = ChunkQueue::start(Vec::new(), |seen: &mut Vec<String>, chunk| {
            seen.push(chunk);
            Ok(seen.len() as u64)
        });
        for i in 0..20 {
            assert!(queue.push(format!("c{i}")).await);
        }
        let (seen, outcome) = queue.finish(false).await.expect("the worker ends");
        assert!(outcome.is_ok());
        let expected: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
        assert_eq!(seen, expected);
    }

    #[tokio::test]
    async fn the_first_failure_stops_the_worker_and_is_given_back() {
        let mut queue = ChunkQueue::start(0u64, |handled: &mut u64, chunk| {
            if chunk == "bad" {
                return Err(refuse());
            }
            *handled += 1;
            Ok(*handled)
        });
        assert!(queue.push("a".into()).await);
        assert!(queue.push("bad".into()).await);
        // The worker stops on "bad"; within a few pushes the queue says so.
        let mut refused = false;
        for _ in 0..10 {
            if !queue.push("b".into()).await {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(refused, "a stopped worker refuses chunks");
        assert_eq!(queue.done(), 1);
        let (handled, outcome) = queue.finish(false).await.expect("the worker ends");
        assert_eq!(handled, 1, "nothing after the failed chunk was handled");
        let failure = outcome.unwrap_err();
        assert!(
            matches!(
                failure.error,
                StreamError::Refused {
                    kind: ErrorKind::BadFrame,
                    ..
                }
            ),
            "{failure:?}"
        );
    }

    #[tokio::test]
    async fn an_abandoned_queue_skips_the_chunks_still_waiting() {
        let (started, mut wait) = tokio::sync::mpsc::unbounded_channel::<()>();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let mut queue = ChunkQueue::start(0u64, move |handled: &mut u64, _chunk| {
            let _ = started.send(());
            // The worker stays on this chunk until the test lets it go.
            let _ = held.recv();
            *handled += 1;
            Ok(*handled)
        });
        assert!(queue.push("first".into()).await);
        wait.recv().await.expect("the worker took the first chunk");
        // The worker is busy with the first chunk: this one waits in the queue.
        assert!(queue.push("second".into()).await);
        let mut finishing = std::pin::pin!(queue.finish(true));
        // One poll runs `finish` up to its wait: the queue is marked abandoned and closed.
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(finishing.as_mut(), cx))
        })
        .await;
        assert!(first.is_pending(), "the worker is still held");
        release.send(()).unwrap();
        // Were the waiting chunk handled, the worker would block on a second release.
        drop(release);
        let (handled, outcome) = finishing.await.expect("the worker ends");
        assert!(outcome.is_ok());
        assert_eq!(handled, 1, "the waiting chunk was skipped");
    }
}
