//! Helpers shared by the stream test files: private test directories, a server spawned
//! against the fake SnowLuma, and invoke_action over the raw JSON-lines peer.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::fake_snowluma::FakeSnowLuma;
use crate::raw_client::{RawServer, modern_meta, structured};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub struct Dirs {
    pub root: PathBuf,
    pub downloads: PathBuf,
    pub uploads: PathBuf,
}

impl Dirs {
    pub fn new(name: &str) -> Dirs {
        let root =
            std::env::temp_dir().join(format!("snowluma-mcp-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (downloads, uploads) = (root.join("downloads"), root.join("uploads"));
        std::fs::create_dir_all(&downloads).unwrap();
        std::fs::create_dir_all(&uploads).unwrap();
        // The server refuses a download directory group or others can enter.
        std::fs::set_permissions(&downloads, std::fs::Permissions::from_mode(0o700)).unwrap();
        Dirs {
            root,
            downloads,
            uploads,
        }
    }

    pub fn downloaded(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.downloads)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            // The server's quota lock file is not a download.
            .filter(|p| !p.ends_with(".snowluma-mcp.lock"))
            .collect();
        files.sort();
        files
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub fn spawn(fake: &FakeSnowLuma, dirs: &Dirs, extra: &[(&str, &str)]) -> RawServer {
    let downloads = dirs.downloads.to_string_lossy().to_string();
    let uploads = dirs.uploads.to_string_lossy().to_string();
    let mut env = vec![
        ("SNOWLUMA_MCP_MODE", "write"),
        ("SNOWLUMA_MCP_ENDPOINT", fake.url.as_str()),
        ("SNOWLUMA_MCP_DOWNLOAD_DIR", downloads.as_str()),
        ("SNOWLUMA_MCP_UPLOAD_ROOT", uploads.as_str()),
    ];
    env.extend_from_slice(extra);
    RawServer::spawn(&env)
}

pub async fn invoke(
    server: &mut RawServer,
    id: i64,
    args: Value,
    meta: Option<Value>,
) -> (Value, Value) {
    let mut meta_value = modern_meta(json!({}));
    if let Some(Value::Object(extra)) = meta {
        meta_value.as_object_mut().unwrap().extend(extra);
    }
    let response = server
        .request(
            id,
            "tools/call",
            json!({ "name": "invoke_action", "arguments": args, "_meta": meta_value }),
        )
        .await;
    let body = structured(&response);
    (response, body)
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn pseudo_random(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2654435761)
                .rotate_left(seed as u32 % 31) as u8
        })
        .collect()
}
