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
//! The runtime thread never waits for stderr: a line that does not fit in [`LineBuffer`]'s
//! limit while stderr is not being read is dropped whole and counted.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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

/// Stops the writer thread when dropped, after it has written every buffered line.
pub struct FlushOnDrop {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    limit: usize,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    dropped: u64,
    closing: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves only bytes behind; keep logging.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Starts the writer thread over `sink` (stderr in the server); at most `limit` bytes wait.
pub fn spawn(
    sink: impl Write + Send + 'static,
    limit: usize,
) -> io::Result<(LineBuffer, FlushOnDrop)> {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        wake: Condvar::new(),
        limit,
    });
    let worker = shared.clone();
    let thread = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || write_batches(&worker, sink))?;
    Ok((
        LineBuffer {
            shared: shared.clone(),
        },
        FlushOnDrop {
            shared,
            thread: Some(thread),
        },
    ))
}

fn write_batches(shared: &Shared, mut sink: impl Write) {
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
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
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
    fn dropping_the_guard_writes_what_is_left() {
        let (writes, received) = mpsc::channel();
        let sink = Recorder { writes, gate: None };
        let (mut log, guard) = spawn(sink, 1 << 20).unwrap();
        log.write_all(b"last words\n").unwrap();
        drop(guard);
        let all: Vec<u8> = received.try_iter().flatten().collect();
        assert_eq!(all, b"last words\n");
    }
}
