//! Resident memory and open file descriptors of the server, from /proc: probed on demand by
//! the phases (at fixed fractions of their work) and every 100 ms by a sampler thread (for the
//! maximum between probes).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One reading of the server process.
#[derive(Clone, Copy, Debug, Default)]
pub struct Probe {
    pub rss_kib: u64,
    pub hwm_kib: u64,
    pub fds: u64,
}

/// Reads /proc/<pid>; `None` once the process is gone.
pub fn probe(pid: u32) -> Option<Probe> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some(Probe {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
        fds,
    })
}

/// Samples every 100 ms until stopped; `take` hands over the samples since the last take, so
/// each phase gets its own maximum.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Probe>>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    pub fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let thread = {
            let (stop, samples) = (stop.clone(), samples.clone());
            std::thread::Builder::new()
                .name("soak-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(p) = probe(pid) {
                            samples.lock().unwrap_or_else(|e| e.into_inner()).push(p);
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
                .expect("spawn the sampler")
        };
        Sampler {
            stop,
            samples,
            thread: Some(thread),
        }
    }

    /// The samples taken since the previous call.
    pub fn take(&self) -> Vec<Probe> {
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The probes of one phase: at its start, after warm-up, at 25/50/75 % of its work and at its
/// end, plus the sampler's readings in between.
#[derive(Default)]
pub struct Curve {
    pub marks: Vec<(&'static str, Probe)>,
    pub samples: usize,
    pub max: Probe,
}

/// Fractions of a phase's work at which it is probed, with their labels.
pub const MARKS: [(&str, f64); 4] = [
    ("warm-up", 0.05),
    ("25%", 0.25),
    ("50%", 0.50),
    ("75%", 0.75),
];

impl Curve {
    /// Probes now under `label`; a vanished process is probed as zeros (the phase fails anyway).
    pub fn mark(&mut self, label: &'static str, pid: u32) {
        let p = probe(pid).unwrap_or_default();
        self.marks.push((label, p));
    }

    /// Probes at each fraction of [`MARKS`] that `done` of `total` units has reached since the
    /// last call (phases advance one call or one batch of events at a time).
    pub fn progress(&mut self, done: usize, total: usize, pid: u32) {
        for (label, fraction) in MARKS {
            let at = ((total as f64 * fraction).ceil() as usize).max(1);
            if done >= at && !self.marks.iter().any(|(l, _)| *l == label) {
                self.mark(label, pid);
            }
        }
    }

    /// Folds the sampler's readings and the marks into the maximum.
    pub fn finish(&mut self, samples: Vec<Probe>) {
        self.samples = samples.len();
        for p in samples.iter().chain(self.marks.iter().map(|(_, p)| p)) {
            self.max.rss_kib = self.max.rss_kib.max(p.rss_kib);
            self.max.hwm_kib = self.max.hwm_kib.max(p.hwm_kib);
            self.max.fds = self.max.fds.max(p.fds);
        }
    }

    pub fn get(&self, label: &str) -> Option<Probe> {
        self.marks
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, p)| *p)
    }
}
