//! Architecture rules checked on the source so they stay true. Layering: data flows one way
//! (server -> input/preview -> exec -> tasks -> streams -> onebot -> catalog -> log format ->
//! trace -> foundation), and only `server/`
//! and `main.rs` name rmcp.

use std::path::{Path, PathBuf};

/// Top-level runtime modules, top to bottom: each may import only modules listed after it.
/// `server` (and `main.rs`) sit on top; `fuzz_api` only re-exports pieces for `fuzz/`, so
/// nothing in the runtime imports it.
const LAYERS: &[&str] = &[
    "fuzz_api",
    "server",
    "cli",
    "input",
    "preview",
    "exec",
    "tasks",
    "events",
    "streams",
    "onebot",
    "catalog",
    "log_format",
    "trace",
    "outcome",
    "config",
    "ids",
    "log_writer",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a runtime file belongs to (`runtime/exec/gate.rs` -> `exec`).
fn module_of(runtime: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(runtime).unwrap();
    let first = relative
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// Lines of code, without comments (a doc comment may mention any module).
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with("//"))
}

#[test]
fn data_flows_one_way_and_only_the_server_knows_rmcp() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let mut files = Vec::new();
    rust_files(&runtime, &mut files);
    assert!(files.len() > 10, "the runtime sources were not found");
    let mut violations = Vec::new();
    for file in &files {
        let module = module_of(&runtime, file);
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(&runtime).unwrap().display().to_string();
        let knows_rmcp = module == "server" || module == "main";
        for line in code_lines(&text) {
            if !knows_rmcp && line.contains("rmcp::") {
                violations.push(format!("{shown}: names rmcp: {line}"));
            }
            let forbidden = LAYERS
                .iter()
                .position(|m| *m == module)
                .map_or(&[][..], |i| &LAYERS[..i]);
            for upper in forbidden {
                if line.contains(&format!("crate::{upper}")) {
                    violations.push(format!("{shown}: imports {upper}: {line}"));
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_rule_table_covers_every_module() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let lib = std::fs::read_to_string(runtime.join("lib.rs")).unwrap();
    for line in code_lines(&lib) {
        if let Some(name) = line
            .strip_prefix("pub mod ")
            .and_then(|l| l.strip_suffix(';'))
        {
            assert!(
                LAYERS.contains(&name),
                "runtime module `{name}` has no layering rule in tests/architecture.rs"
            );
        }
    }
}

/// The table of error kinds (docs/error-kinds.md, linked from README) lists exactly the kinds
/// the server can report, each with the meaning the code gives it.
#[test]
fn readme_lists_every_error_kind() {
    use snowluma_mcp::outcome::ErrorKind;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/error-kinds.md"))
            .unwrap();
    let rows: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
    for kind in ErrorKind::ALL {
        let prefix = format!("| `{}` | {} |", kind.as_str(), kind.meaning());
        assert!(
            rows.iter().any(|r| r.starts_with(&prefix)),
            "docs/error-kinds.md has no row `{prefix}`"
        );
    }
    let listed = rows
        .iter()
        .filter(|r| {
            let name = r.trim_start_matches("| `").split('`').next().unwrap_or("");
            ErrorKind::ALL.iter().any(|k| k.as_str() == name)
        })
        .count();
    assert_eq!(listed, ErrorKind::ALL.len());
}
