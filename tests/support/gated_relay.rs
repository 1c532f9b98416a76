//! A TCP relay between the server and the fake SnowLuma that passes requests at once but
//! holds every answer until the test opens its gate: the transfers it carries stay running,
//! holding their transfer slots, for exactly as long as the test needs, with no timing.

#![allow(dead_code)]

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct GatedRelay {
    /// `http://127.0.0.1:PORT/`, to use as SNOWLUMA_MCP_ENDPOINT.
    pub url: String,
    gate: watch::Sender<bool>,
}

impl GatedRelay {
    /// Relays to `127.0.0.1:target_port`, gate closed.
    pub async fn start(target_port: u16) -> GatedRelay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind relay");
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let (gate, _) = watch::channel(false);
        let opened = gate.subscribe();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let opened = opened.clone();
                tokio::spawn(async move {
                    let Ok(upstream) = TcpStream::connect(("127.0.0.1", target_port)).await else {
                        return;
                    };
                    relay(client, upstream, opened).await;
                });
            }
        });
        GatedRelay { url, gate }
    }

    /// Lets every held and later answer through.
    pub fn open(&self) {
        self.gate.send_replace(true);
    }
}

async fn relay(client: TcpStream, upstream: TcpStream, mut opened: watch::Receiver<bool>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let requests = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let answers = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match upstream_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if opened.wait_for(|open| *open).await.is_err() {
                break;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    tokio::join!(requests, answers);
}
