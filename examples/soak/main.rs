//! The soak run: a bounded, loopback-only load on the release server over stdio, watching its
//! memory and file descriptors. A script, not a test (scripts/soak.sh builds and runs it).
//!
//! `target/release/examples/soak [--calls N] [--events N] [--downloads N] [--deadline-secs N]`
//!
//! One server (write mode, events on, typed tools for a few categories, a private download
//! directory with a small quota) is driven through three phases on one stdio connection:
//! 1. mixed `tools/call` requests, 16 in flight (calls.rs);
//! 2. events from the WebSocket fake through 16 event resources (events.rs);
//! 3. stream downloads, 4 at once, each verified (downloads.rs).
//!
//! The fake SnowLuma (HTTP) and its event socket run in this process (tests/support); the
//! driver is not what is measured. A sampler reads /proc/<server>/status and /proc/<server>/fd
//! every 100 ms, and each phase probes at its start, after warm-up (5 %), at 25/50/75 % and at
//! its end. The exit status is non-zero when the server died, a reply was lost or unexpected,
//! the open descriptors grew by more than a few between phase ends, or the server's stderr
//! holds a panic. A watchdog kills the server when the deadline passes, so a hang ends the
//! run instead of blocking it.

#[path = "../../tests/support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "../../tests/support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "../support/peer.rs"]
mod peer;

mod calls;
mod downloads;
mod events;
mod sampler;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use fake_snowluma::{FakeOptions, FakeSnowLuma, Fault};
use fake_snowluma_ws::{FakeEventSocket, WsOptions};
use peer::{Peer, initialize, release_dir};
use sampler::{Curve, Sampler};

const TOKEN: &str = "soak-token-7d2a41";
const IN_FLIGHT: usize = 16;
const STREAMS: usize = 4;
/// Open descriptors may differ this much between phase ends (pooled HTTP connections to the
/// fake come and go); more is a leak.
const FD_BOUND: u64 = 8;

struct Options {
    calls: usize,
    events: usize,
    downloads: usize,
    deadline: Duration,
}

fn options() -> Options {
    let mut opts = Options {
        calls: 20_000,
        events: 50_000,
        downloads: 200,
        deadline: Duration::from_secs(300),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|v| *v > 0);
        let Some(value) = value else {
            eprintln!("usage: soak [--calls N] [--events N] [--downloads N] [--deadline-secs N]");
            std::process::exit(2);
        };
        match arg.as_str() {
            "--calls" => opts.calls = value,
            "--events" => opts.events = value,
            "--downloads" => opts.downloads = value,
            "--deadline-secs" => opts.deadline = Duration::from_secs(value as u64),
            other => {
                eprintln!("soak: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    opts
}

/// The server's stdio connection, every line parsed: replies are returned, notifications
/// counted by method, anything else (a reply without a numeric id) counted as stray.
pub struct Client {
    pub peer: Peer,
    pub notifications: BTreeMap<String, u64>,
    pub stray: Vec<String>,
}

impl Client {
    /// The next reply: its id and the whole message.
    pub fn reply(&mut self) -> (u64, Value) {
        loop {
            let line = self.peer.read_line();
            let message: Value = match serde_json::from_slice(line) {
                Ok(message) => message,
                Err(e) => {
                    self.stray.push(format!("not JSON ({e})"));
                    continue;
                }
            };
            if let Some(id) = message.get("id") {
                match id.as_u64() {
                    Some(id) => return (id, message),
                    None => self.stray.push(truncated(&message)),
                }
            } else if let Some(method) = message["method"].as_str() {
                *self.notifications.entry(method.to_string()).or_default() += 1;
            } else {
                self.stray.push(truncated(&message));
            }
        }
    }

    /// One request, waiting for its reply (nothing else may be in flight).
    pub fn call(&mut self, method: &str, params: &Value) -> Value {
        let id = self.peer.send(method, params);
        self.peer.flush();
        let (got, reply) = self.reply();
        assert_eq!(got, id, "{method}: a reply for another request");
        reply
    }
}

fn truncated(message: &Value) -> String {
    let text = message.to_string();
    text[..text.len().min(300)].to_string()
}

/// What one phase did and saw.
pub struct PhaseReport {
    pub name: &'static str,
    pub unit: &'static str,
    pub done: usize,
    pub elapsed: Duration,
    /// Replies by kind, as checked.
    pub tally: BTreeMap<&'static str, u64>,
    pub notes: Vec<String>,
    pub problems: Vec<String>,
    /// How many problems there were in all (only the first few are kept).
    pub problem_count: usize,
    pub curve: Curve,
}

impl PhaseReport {
    fn new(name: &'static str, unit: &'static str) -> PhaseReport {
        PhaseReport {
            name,
            unit,
            done: 0,
            elapsed: Duration::ZERO,
            tally: BTreeMap::new(),
            notes: Vec::new(),
            problems: Vec::new(),
            problem_count: 0,
            curve: Curve::default(),
        }
    }

    pub fn count(&mut self, label: &'static str) {
        *self.tally.entry(label).or_default() += 1;
    }

    pub fn problem(&mut self, problem: String) {
        self.problem_count += 1;
        if self.problems.len() < 10 {
            self.problems.push(problem);
        }
    }

    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}

/// Kills the server with SIGKILL when the deadline passes, so a hung read in the driver ends
/// (the read sees end of file and the driver fails, cleaning up as it unwinds).
struct Watchdog {
    disarmed: Arc<AtomicBool>,
}

impl Watchdog {
    fn arm(pid: u32, deadline: Duration) -> Watchdog {
        let disarmed = Arc::new(AtomicBool::new(false));
        let flag = disarmed.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + deadline;
            while Instant::now() < until {
                if flag.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if !flag.load(Ordering::Relaxed) {
                eprintln!("soak: deadline of {deadline:?} passed; killing the server");
                if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        });
        Watchdog { disarmed }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarmed.store(true, Ordering::Relaxed);
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn print_tables(reports: &[PhaseReport], total: Duration) {
    println!();
    println!("| phase | work | elapsed | rate |");
    println!("|---|---|---|---|");
    for r in reports {
        println!(
            "| {} | {} {} | {:.1} s | {:.0} {}/s |",
            r.name,
            r.done,
            r.unit,
            r.elapsed.as_secs_f64(),
            r.done as f64 / r.elapsed.as_secs_f64().max(1e-9),
            r.unit
        );
    }
    println!("| total | | {:.1} s | |", total.as_secs_f64());

    let labels = ["start", "warm-up", "25%", "50%", "75%", "end"];
    println!();
    println!(
        "| phase | metric | {} | max (samples) |",
        labels.join(" | ")
    );
    println!("|---|---|{}---|", "---|".repeat(labels.len()));
    for r in reports {
        let cells = |f: &dyn Fn(sampler::Probe) -> String| {
            labels
                .iter()
                .map(|l| r.curve.get(l).map_or("-".to_string(), f))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        println!(
            "| {} | RSS MiB | {} | {} ({}) |",
            r.name,
            cells(&|p| mib(p.rss_kib)),
            mib(r.curve.max.rss_kib),
            r.curve.samples
        );
        println!(
            "| {} | open fds | {} | {} |",
            r.name,
            cells(&|p| p.fds.to_string()),
            r.curve.max.fds
        );
    }
    if let Some(last) = reports.last().and_then(|r| r.curve.get("end")) {
        println!("\npeak RSS over the run (VmHWM): {} MiB", mib(last.hwm_kib));
    }

    for r in reports {
        println!("\n{}:", r.name);
        let tally: Vec<String> = r.tally.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("  replies: {}", tally.join(", "));
        for note in &r.notes {
            println!("  {note}");
        }
        for problem in &r.problems {
            println!("  PROBLEM: {problem}");
        }
        if r.problem_count > r.problems.len() {
            println!("  ... {} problems in all", r.problem_count);
        }
    }
}

/// Lines of the server's stderr that report a panic, an error or a warning.
fn scan_stderr(path: &Path) -> (Vec<String>, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let panics: Vec<String> = text
        .lines()
        .filter(|l| l.contains("panicked") || l.contains("RUST_BACKTRACE"))
        .map(str::to_string)
        .collect();
    let errors = text.lines().filter(|l| l.contains("ERROR")).count();
    let warnings = text.lines().filter(|l| l.contains("WARN")).count();
    (panics, errors, warnings)
}

fn main() -> ExitCode {
    let opts = options();
    let server = release_dir().join("snowluma-mcp");
    assert!(
        server.exists(),
        "missing {server:?}: run `cargo build --release --examples --bins` first"
    );
    let work = tempfile::Builder::new()
        .prefix("snowluma-mcp-soak-")
        .tempdir()
        .expect("a temporary directory");
    let download_dir = work.path().join("downloads");
    std::fs::create_dir(&download_dir).expect("the download directory");
    std::fs::set_permissions(&download_dir, std::fs::Permissions::from_mode(0o700))
        .expect("chmod 700");
    let stderr_path = work.path().join("server.stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("the stderr file");

    let fake = FakeSnowLuma::start_blocking(FakeOptions {
        token: Some(TOKEN.into()),
        record_requests: false,
        keep_upload_bytes: false,
        ..FakeOptions::default()
    });
    fake.set_fault(Some(calls::FAULTY_ACTION), Fault::ServerError);
    let sources = downloads::register(&fake);
    let ws = FakeEventSocket::start(WsOptions {
        token: Some(TOKEN.into()),
        ..WsOptions::default()
    });

    let dir_text = download_dir.to_string_lossy().into_owned();
    let peer = Peer::spawn_with(
        &server,
        &[
            ("SNOWLUMA_MCP_MODE", "write"),
            ("SNOWLUMA_MCP_ENDPOINT", &fake.url),
            // The token only ever travels in the environment.
            ("SNOWLUMA_MCP_TOKEN", TOKEN),
            ("SNOWLUMA_MCP_EVENTS_URL", &ws.url),
            ("SNOWLUMA_MCP_DOWNLOAD_DIR", &dir_text),
            ("SNOWLUMA_MCP_MAX_FILE_BYTES", "2097152"),
            ("SNOWLUMA_MCP_DIR_QUOTA_BYTES", "8388608"),
            ("SNOWLUMA_MCP_MAX_STREAMS", "4"),
            ("SNOWLUMA_MCP_TIMEOUT_MS", "10000"),
            ("SNOWLUMA_MCP_STREAM_IDLE_MS", "10000"),
            (
                "SNOWLUMA_MCP_TOOLSETS",
                "info,message,group_info,friend,stream",
            ),
            ("SNOWLUMA_MCP_LOG", "warn"),
        ],
        Stdio::from(stderr),
    );
    let pid = peer.pid();
    let watchdog = Watchdog::arm(pid, opts.deadline);
    let mut client = Client {
        peer,
        notifications: BTreeMap::new(),
        stray: Vec::new(),
    };
    let began = Instant::now();
    initialize(&mut client.peer, "soak");
    let sampler = Sampler::start(pid);
    println!(
        "soak: server pid {pid}; {} calls ({IN_FLIGHT} in flight), {} events through 16 \
         resources, {} downloads ({STREAMS} at once); deadline {:?}",
        opts.calls, opts.events, opts.downloads, opts.deadline
    );

    let mut reports = Vec::new();
    let mut died = None;
    let phases: [(&str, &str); 3] = [
        ("calls", "calls"),
        ("events", "events"),
        ("downloads", "downloads"),
    ];
    for (index, (name, unit)) in phases.into_iter().enumerate() {
        let mut report = PhaseReport::new(name, unit);
        sampler.take();
        match index {
            0 => calls::run(&mut client, opts.calls, IN_FLIGHT, &mut report),
            1 => events::run(&mut client, &ws, opts.events, &mut report),
            _ => downloads::run(
                &mut client,
                &sources,
                &download_dir,
                opts.downloads,
                STREAMS,
                &mut report,
            ),
        }
        report.curve.finish(sampler.take());
        println!(
            "soak: {name} done in {:.1} s ({} problems)",
            report.elapsed.as_secs_f64(),
            report.problem_count
        );
        reports.push(report);
        if let Some(status) = client.peer.exited() {
            died = Some(status);
            break;
        }
    }
    drop(sampler);
    let total = began.elapsed();
    drop(watchdog);
    let Client {
        peer,
        notifications,
        stray,
    } = client;
    let exit = peer.close();
    drop(ws);
    drop(fake);

    print_tables(&reports, total);
    let mut failures: Vec<String> = Vec::new();
    let notes: Vec<String> = notifications
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("\nnotifications: {}", notes.join(", "));
    if !stray.is_empty() {
        failures.push(format!("{} stray lines, first: {}", stray.len(), stray[0]));
    }
    if let Some(status) = died {
        failures.push(format!("the server died during the run: {status}"));
    }
    match exit {
        Some(status) if status.success() => {}
        Some(status) => failures.push(format!("the server exited with {status} at the end")),
        None => failures.push("the server did not exit within 10 s of stdin closing".into()),
    }
    for r in &reports {
        if r.problem_count > 0 {
            failures.push(format!("{}: {} problems", r.name, r.problem_count));
        }
    }
    // Descriptors between phase ends: the first phase's end is the baseline.
    let ends: Vec<u64> = reports
        .iter()
        .filter_map(|r| r.curve.get("end").map(|p| p.fds))
        .collect();
    if let Some(base) = ends.first() {
        for (r, fds) in reports.iter().zip(&ends).skip(1) {
            if *fds > base + FD_BOUND {
                failures.push(format!(
                    "open descriptors grew from {base} to {fds} by the end of {}",
                    r.name
                ));
            }
        }
    }
    let (panics, errors, warnings) = scan_stderr(&stderr_path);
    println!(
        "server stderr: {errors} ERROR lines, {warnings} WARN lines, {} panic lines",
        panics.len()
    );
    for line in panics.iter().take(5) {
        println!("  {line}");
    }
    if !panics.is_empty() {
        failures.push("the server's stderr reports a panic".into());
    }
    if errors > 0 {
        let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        for line in text.lines().filter(|l| l.contains("ERROR")).take(5) {
            println!("  {line}");
        }
    }
    if reports.len() < phases.len() {
        failures.push("not every phase ran".into());
    }

    if failures.is_empty() {
        println!("\nsoak: PASS in {:.1} s", total.as_secs_f64());
        ExitCode::SUCCESS
    } else {
        for failure in &failures {
            println!("soak: FAIL: {failure}");
        }
        ExitCode::FAILURE
    }
}
