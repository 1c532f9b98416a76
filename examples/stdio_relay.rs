//! The native floor of query_action as the server serves it: a stdio JSON-RPC peer that answers
//! each tool call by making the same HTTP call to the fake SnowLuma that the server makes
//! (support/direct_http.rs), then replies like `stdio_echo` (padded on request to the server's
//! reply size). It has the server's process layout (a stdio hop in front of a keep-alive HTTP
//! call) and none of its work, so the bench can tell what the hop itself costs on this machine
//! from what the server adds.
//!
//! `stdio_relay --port P --token T [--workers N]`
//!
//! With one worker (the default) each call is made on the thread that read it, as the server's
//! single-threaded runtime does. With N workers the reading thread hands calls to N threads,
//! each with its own connection, so up to N calls are in flight; replies are written as they
//! complete, each line whole.

#[path = "support/direct_http.rs"]
mod direct_http;
#[path = "support/echo_reply.rs"]
mod echo_reply;

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use direct_http::Direct;
use serde_json::Value;

fn usage() -> ! {
    eprintln!("usage: stdio_relay --port P --token T [--workers N]");
    std::process::exit(2);
}

/// For a `tools/call` request, one call to the fake; then the reply line. Panics when the
/// fake's envelope is not a success, so a broken run cannot print a figure.
fn relay(client: &mut Direct, message: &Value) -> Option<String> {
    if message["method"] == "tools/call" && message.get("id").is_some() {
        client.call();
        let envelope: Value = serde_json::from_slice(&client.body).expect("the fake's envelope");
        assert_eq!(envelope["retcode"], 0, "{envelope}");
    }
    echo_reply::reply_to(message)
}

fn write_line(stdout: &Mutex<std::io::Stdout>, reply: &str) -> bool {
    let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
    writeln!(out, "{reply}").and_then(|_| out.flush()).is_ok()
}

fn main() {
    let (mut port, mut token, mut workers) = (None, None, 1usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--port" => port = value.parse::<u16>().ok(),
            "--token" => token = Some(value),
            "--workers" => {
                workers = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .unwrap_or_else(|| usage())
            }
            _ => usage(),
        }
    }
    let (Some(port), Some(token)) = (port, token) else {
        usage()
    };
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let messages = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok());

    if workers == 1 {
        let mut client = Direct::connect(port, &token);
        for message in messages {
            if let Some(reply) = relay(&mut client, &message)
                && !write_line(&stdout, &reply)
            {
                break;
            }
        }
        return;
    }

    let (send, receive) = mpsc::channel::<Value>();
    let receive = Arc::new(Mutex::new(receive));
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let (receive, stdout, token) = (receive.clone(), stdout.clone(), token.clone());
            std::thread::spawn(move || {
                let mut client = Direct::connect(port, &token);
                loop {
                    let next = receive.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(message) = next else { break };
                    if let Some(reply) = relay(&mut client, &message)
                        && !write_line(&stdout, &reply)
                    {
                        break;
                    }
                }
            })
        })
        .collect();
    for message in messages {
        if send.send(message).is_err() {
            break;
        }
    }
    drop(send);
    for thread in threads {
        let _ = thread.join();
    }
}
