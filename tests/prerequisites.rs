//! `scripts/prerequisites.sh`, which `scripts/test.sh` runs first: with a PATH of stand-ins it
//! passes when everything is there, and names each missing or too old tool with how to install
//! it (before this check, a missing node surfaced minutes into the suite as
//! `node: command not found`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A directory of executable stand-ins; each prints `output` and exits 0.
struct StubPath(PathBuf);

impl StubPath {
    fn new(name: &str, tools: &[(&str, &str)]) -> StubPath {
        let dir =
            std::env::temp_dir().join(format!("snowluma-prereq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (tool, output) in tools {
            let path = dir.join(tool);
            std::fs::write(&path, format!("#!/bin/sh\necho '{output}'\nexit 0\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        StubPath(dir)
    }

    fn run(&self) -> Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/prerequisites.sh");
        Command::new("/bin/bash")
            .arg(script)
            .env_clear()
            .env("PATH", &self.0)
            .env("CHROMIUM_PATH", self.0.join("chromium"))
            .output()
            .expect("run scripts/prerequisites.sh")
    }
}

impl Drop for StubPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ALL: &[(&str, &str)] = &[
    ("cargo", "cargo 1.88.0"),
    ("cc", "cc"),
    ("python3", "Python 3.11.2"),
    ("node", "v20.11.1"),
    ("npm", "10.2.4"),
    ("chromium", "Chromium 120"),
];

fn without(names: &[&str]) -> Vec<(&'static str, &'static str)> {
    ALL.iter()
        .copied()
        .filter(|(tool, _)| !names.contains(tool))
        .collect()
}

#[test]
fn everything_present_passes_quietly() {
    let output = StubPath::new("all", ALL).run();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
}

#[test]
fn a_missing_node_is_named_with_how_to_install_it() {
    let output = StubPath::new("no-node", &without(&["node", "npm"])).run();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("missing prerequisites"), "{text}");
    assert!(
        text.contains("node 20 or newer: apt-get install nodejs"),
        "{text}"
    );
    assert!(
        text.contains("npm (") && text.contains("apt-get install npm"),
        "{text}"
    );
    assert!(!text.contains("command not found"), "{text}");
    assert!(!text.contains("python3"), "only what is missing: {text}");
}

#[test]
fn an_old_node_and_a_missing_chromium_and_c_toolchain_are_all_listed() {
    let mut tools = without(&["node", "chromium", "cc"]);
    tools.push(("node", "v18.19.0"));
    let output = StubPath::new("old-node", &tools).run();
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("node 20 or newer (found 18.19.0)"), "{text}");
    assert!(text.contains("apt-get install chromium"), "{text}");
    assert!(text.contains("apt-get install build-essential"), "{text}");
}
