//! Kept over tracing-appender's non_blocking: with it (and log_format.rs replaced) docs replies measured 14-26 % slower on one CPU (scripts/bench.sh, 2026-12-04).
//! The log's way to stderr: lines are appended to a bounded buffer and a writer thread of its
//! own writes them out in batches.
//!
//! Why not one hand-off per line (tracing-appender's `non_blocking`): at the default `info`
//! level every tool call logs a line, and waking a thread per line cost a futex wake, a context
//! switch and a few `sched_yield`s per call — on a 2-core machine that time is taken from the
//! client and SnowLuma. Here only a line that finds the buffer empty wakes the thread, and the
//! thread lets [`BATCH_WINDOW`] pass before it takes the buffer, so a busy server wakes it at
//! most a few hundred times a second, and an idle one never.
//!
//! The thread need not exist from the first line: [`deferred`] hands out the buffer at once
//! and the thread is started later ([`LineBuffer::start_writer`]), so that starting it does
//! not delay the process's first answers. The server starts it once the client's first
//! requests are likely answered; measured on a cold start (spawn -> initialize -> tools/list),
//! the thread's creation, its malloc arena and its stack cost about 0.4 ms of the server's
//! 3.9 ms of CPU. Lines logged before then wait in the buffer like any other batch, and a
//! process that ends before the thread exists writes them on its way out.
//!
//! The runtime thread never waits for stderr: a line that does not fit in [`LineBuffer`]'s
//! limit while stderr is not being read is dropped whole and counted.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long the writer thread lets lines gather before it writes them: short enough that a
/// person watching the log sees no delay, long enough to take a burst in one write.
pub const BATCH_WINDOW: Duration = Duration::from_millis(10);

/// A handle the fmt layer writes through; cheap to clone.
#[derive(Clone)]
pub struct LineBuffer {
    shared: Arc<Shared>,
}

/// Writes every buffered line when dropped: stops the writer thread after it has written
/// them, or, when the thread never started, writes them itself.
pub struct FlushOnDrop {
    shared: Arc<Shared>,
}

type Sink = Box<dyn Write + Send>;

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    limit: usize,
    /// The sink, until the writer thread takes it.
    sink: Mutex<Option<Sink>>,
    /// The writer thread, once started.
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    dropped: u64,
    closing: bool,
}

/// A panic while holding one of the locks leaves only bytes behind; keep logging.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// A buffer over `sink` (stderr in the server) holding at most `limit` bytes, and its writer
/// thread already running.
pub fn spawn(
    sink: impl Write + Send + 'static,
    limit: usize,
) -> io::Result<(LineBuffer, FlushOnDrop)> {
    let (buffer, flush) = deferred(sink, limit);
    buffer.start_writer()?;
    Ok((buffer, flush))
}

/// A buffer over `sink` holding at most `limit` bytes, whose writer thread starts when
/// [`LineBuffer::start_writer`] is called (if never, the lines are written at drop).
pub fn deferred(sink: impl Write + Send + 'static, limit: usize) -> (LineBuffer, FlushOnDrop) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        wake: Condvar::new(),
        limit,
        sink: Mutex::new(Some(Box::new(sink))),
        thread: Mutex::new(None),
    });
    (
        LineBuffer {
            shared: shared.clone(),
        },
        FlushOnDrop { shared },
    )
}

fn write_batches(shared: &Shared) {
    let Some(mut sink) = lock(&shared.sink).take() else {
        return; // FlushOnDrop wrote the lines itself
    };
    let mut batch = Vec::new();
    loop {
        let mut state = shared.lock();
        while state.pending.is_empty() && !state.closing {
            state = shared.wake.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        if state.pending.is_empty() {
            return; // closing, and everything is written
        }
        if !state.closing {
            // Let the rest of a burst join this write; closing cuts the wait short.
            state = shared
                .wake
                .wait_timeout_while(state, BATCH_WINDOW, |s| !s.closing)
                .map(|(state, _)| state)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        std::mem::swap(&mut state.pending, &mut batch);
        drop(state);
        // Nowhere to report a failing stderr; the lines are lost either way.
        let _ = sink.write_all(&batch).and_then(|()| sink.flush());
        batch.clear();
        if batch.capacity() > shared.limit {
            batch = Vec::new();
        }
    }
}

impl LineBuffer {
    /// Starts the writer thread; does nothing if it was started before or the lines were
    /// already written at drop. Lines buffered so far go out in its first batch.
    pub fn start_writer(&self) -> io::Result<()> {
        let mut thread = lock(&self.shared.thread);
        if thread.is_some() || lock(&self.shared.sink).is_none() {
            return Ok(());
        }
        let worker = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_batches(&worker))?;
        *thread = Some(handle);
        Ok(())
    }

    /// Lines dropped so far because the buffer was full.
    pub fn dropped_lines(&self) -> u64 {
        self.shared.lock().dropped
    }
}

impl Write for LineBuffer {
    /// One call is one formatted event (tracing's fmt layer writes each event with a single
    /// `write_all`), so a line is kept or dropped whole.
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        let mut state = self.shared.lock();
        if state.pending.len() + line.len() > self.shared.limit {
            state.dropped += 1;
            return Ok(line.len());
        }
        let was_empty = state.pending.is_empty();
        state.pending.extend_from_slice(line);
        drop(state);
        if was_empty {
            self.shared.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for LineBuffer {
    type Writer = LineBuffer;

    fn make_writer(&'a self) -> LineBuffer {
        self.clone()
    }
}

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        let mut thread = lock(&self.shared.thread);
        if let Some(handle) = thread.take() {
            drop(thread);
            let _ = handle.join();
            return;
        }
        // No writer thread ever ran: write what is left here, on the way out (still holding
        // the thread slot, so none can start meanwhile).
        if let Some(mut sink) = lock(&self.shared.sink).take() {
            let pending = std::mem::take(&mut self.shared.lock().pending);
            let _ = sink.write_all(&pending).and_then(|()| sink.flush());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A sink that hands each write to the test, blocking on the first until the test lets go.
    struct Recorder {
        writes: mpsc::Sender<Vec<u8>>,
        gate: Option<mpsc::Receiver<()>>,
    }

    impl Write for Recorder {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.writes.send(bytes.to_vec()).unwrap();
            if let Some(gate) = self.gate.take() {
                let _ = gate.recv();
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A sink that hands each write to the test without ever blocking.
    fn ungated() -> (Recorder, mpsc::Receiver<Vec<u8>>) {
        let (writes, received) = mpsc::channel();
        (Recorder { writes, gate: None }, received)
    }

    fn recorder() -> (Recorder, mpsc::Receiver<Vec<u8>>, mpsc::Sender<()>) {
        let (writes, received) = mpsc::channel();
        let (open, gate) = mpsc::channel();
        let sink = Recorder {
            writes,
            gate: Some(gate),
        };
        (sink, received, open)
    }

    #[test]
    fn lines_written_while_the_sink_is_busy_go_out_in_one_write_in_order() {
        let (sink, writes, open) = recorder();
        let (mut log, guard) = spawn(sink, 1 << 20).unwrap();
        log.write_all(b"first\n").unwrap();
        // The writer thread is now stuck in the sink with the first line.
        assert_eq!(writes.recv().unwrap(), b"first\n");
        for i in 0..100 {
            log.write_all(format!("line {i}\n").as_bytes()).unwrap();
        }
        open.send(()).unwrap();
        drop(guard);
        let rest: Vec<Vec<u8>> = writes.try_iter().collect();
        let expected: String = (0..100).map(|i| format!("line {i}\n")).collect();
        assert_eq!(
            rest,
            vec![expected.into_bytes()],
            "one batch, every line, in order"
        );
        assert_eq!(log.dropped_lines(), 0);
    }

    #[test]
    fn a_full_buffer_drops_whole_lines_and_counts_them() {
        let (sink, writes, open) = recorder();
        let (mut log, guard) = spawn(sink, 20).unwrap();
        log.write_all(b"0123456789\n").unwrap();
        assert_eq!(writes.recv().unwrap(), b"0123456789\n");
        log.write_all(b"abcdefghi\n").unwrap(); // 10 bytes: fits
        log.write_all(b"this line is too long\n").unwrap(); // dropped whole
        log.write_all(b"0123456789\n").unwrap(); // 10 + 11 > 20: dropped
        log.write_all(b"z\n").unwrap(); // fits
        open.send(()).unwrap();
        drop(guard);
        let rest: Vec<u8> = writes.try_iter().flatten().collect();
        assert_eq!(rest, b"abcdefghi\nz\n");
        assert_eq!(log.dropped_lines(), 2);
    }

    #[test]
    fn lines_logged_before_the_writer_starts_go_out_in_its_first_write() {
        let (sink, received) = ungated();
        let (mut log, guard) = deferred(sink, 1 << 20);
        log.write_all(b"ready\n").unwrap();
        log.write_all(b"initialize\n").unwrap();
        assert!(
            received.try_recv().is_err(),
            "nothing is written before the thread starts"
        );
        log.start_writer().unwrap();
        log.start_writer().unwrap(); // a second start changes nothing
        assert_eq!(received.recv().unwrap(), b"ready\ninitialize\n");
        log.write_all(b"later\n").unwrap();
        drop(guard);
        let rest: Vec<Vec<u8>> = received.try_iter().collect();
        assert_eq!(rest, vec![b"later\n".to_vec()], "each line written once");
    }

    #[test]
    fn a_process_that_ends_before_the_writer_starts_writes_its_lines_at_drop() {
        let (sink, received) = ungated();
        let (mut log, guard) = deferred(sink, 1 << 20);
        log.write_all(b"ready\n").unwrap();
        log.write_all(b"stopped\n").unwrap();
        drop(guard);
        assert_eq!(
            received.try_iter().collect::<Vec<_>>(),
            vec![b"ready\nstopped\n".to_vec()]
        );
        // The sink is gone; a late start must not spawn a thread that has nothing to write to.
        log.start_writer().unwrap();
        assert!(log.shared.thread.lock().unwrap().is_none());
    }

    #[test]
    fn dropping_the_guard_writes_what_is_left() {
        let (sink, received) = ungated();
        let (mut log, guard) = spawn(sink, 1 << 20).unwrap();
        log.write_all(b"last words\n").unwrap();
        drop(guard);
        let all: Vec<u8> = received.try_iter().flatten().collect();
        assert_eq!(all, b"last words\n");
    }
}
