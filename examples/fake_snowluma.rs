//! The fake SnowLuma as a process, for python tests and benchmarks.
//!
//! `cargo run --example fake_snowluma -- [--token T] [--port N]
//!  [--generated NAME:SIZE[:SEED]]... [--url-file URL=PATH]... [--app-version V]
//!  [--drop-uploads]`
//!
//! Binds 127.0.0.1 only, prints exactly one line
//! `FAKE_SNOWLUMA_URL=http://127.0.0.1:PORT/` on stdout, then serves until
//! stdin closes or the process is killed. A `--generated` file is downloaded
//! with `file` = `/tmp/snowluma-stream/download/NAME`. A `--url-file` is served as SnowLuma
//! serves a URL body without Content-Length: `file_size` 0 and chunks of varying size (the
//! bytes are read from PATH at start-up). Requests are not
//! recorded here (nothing could read them), so memory stays flat.

#[path = "../tests/support/fake_snowluma.rs"]
mod fake_snowluma;

use std::io::{Read, Write};
use std::process::ExitCode;

use fake_snowluma::{FakeOptions, FakeSnowLuma};

fn usage(problem: &str) -> ExitCode {
    eprintln!("fake_snowluma: {problem}");
    eprintln!(
        "usage: fake_snowluma [--token T] [--port N] [--generated NAME:SIZE[:SEED]]... \
         [--url-file URL=PATH]... [--app-version V] [--drop-uploads]"
    );
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut opts = FakeOptions {
        record_requests: false,
        ..FakeOptions::default()
    };
    let mut generated: Vec<(String, u64, u8)> = Vec::new();
    let mut url_files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut version = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--token" => match value("--token") {
                Ok(t) => opts.token = Some(t),
                Err(e) => return usage(&e),
            },
            "--port" => match value("--port").map(|p| p.parse::<u16>()) {
                Ok(Ok(p)) => opts.port = p,
                _ => return usage("--port needs a number 0-65535"),
            },
            "--generated" => {
                let spec = match value("--generated") {
                    Ok(s) => s,
                    Err(e) => return usage(&e),
                };
                let mut parts = spec.split(':');
                let name = parts.next().unwrap_or("").to_string();
                let size = parts.next().and_then(|s| s.parse::<u64>().ok());
                let seed = parts.next().map_or(Some(0), |s| s.parse::<u8>().ok());
                match (name.is_empty() || name.contains('/'), size, seed) {
                    (false, Some(size), Some(seed)) => generated.push((name, size, seed)),
                    _ => return usage("--generated needs NAME:SIZE[:SEED]"),
                }
            }
            "--url-file" => {
                let spec = match value("--url-file") {
                    Ok(s) => s,
                    Err(e) => return usage(&e),
                };
                let Some((url, path)) = spec.split_once('=') else {
                    return usage("--url-file needs URL=PATH");
                };
                match std::fs::read(path) {
                    Ok(bytes) => url_files.push((url.to_string(), bytes)),
                    Err(e) => return usage(&format!("--url-file: cannot read {path}: {e}")),
                }
            }
            "--app-version" => match value("--app-version") {
                Ok(v) => version = Some(v),
                Err(e) => return usage(&e),
            },
            "--drop-uploads" => opts.keep_upload_bytes = false,
            other => return usage(&format!("unknown argument {other}")),
        }
    }

    let fake = FakeSnowLuma::start_with(opts).await;
    for (name, size, seed) in &generated {
        fake.add_generated_file(name, *size, *seed);
    }
    for (url, bytes) in url_files {
        fake.add_url_file(&url, bytes, false);
    }
    if let Some(v) = version {
        fake.set_version(&v);
    }
    {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "FAKE_SNOWLUMA_URL={}", fake.url)
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::FAILURE;
        }
    }

    // Serve until stdin reaches EOF (the parent closed it or exited).
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 4096];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = eof_tx.send(());
    });
    let _ = eof_rx.await;
    fake.shutdown();
    ExitCode::SUCCESS
}
