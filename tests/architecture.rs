//! Architecture rules checked on the source so they stay true. Layering: data flows one way
//! (server -> tools -> input/preview -> exec -> tasks -> streams -> onebot -> catalog -> log
//! format -> trace -> foundation), only `server/` names rmcp (`main.rs` included: it calls
//! what `server` exports), and no two files of one module import each other, directly or
//! around a circle.

#[path = "support/module_graph.rs"]
mod module_graph;

use std::path::{Path, PathBuf};

/// Top-level runtime modules, top to bottom: each may import only modules listed after it.
/// `server` (and `main.rs`) sit on top; `fuzz_api` only re-exports pieces for `fuzz/`, so
/// nothing in the runtime imports it.
const LAYERS: &[&str] = &[
    "fuzz_api", "server", "tools", "cli", "paging", "input", "preview", "exec", "guard", "tasks",
    "events", "streams", "onebot", "catalog", "trace", "outcome", "config", "ids",
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
        let knows_rmcp = module == "server";
        for line in code_lines(&text) {
            if !knows_rmcp && names_rmcp(line) {
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

/// A path into rmcp (`rmcp::…`, `use rmcp;`, `rmcp::{…}`), not the word in a string such as a
/// log target's name.
fn names_rmcp(line: &str) -> bool {
    let code = module_graph::blank_literals(line);
    code.match_indices("rmcp").any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + 4..];
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && (after.starts_with("::") || after.trim_start().starts_with(';'))
    })
}

#[test]
fn no_import_circle_inside_a_module() {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let graphs = module_graph::graphs(&runtime);
    let server = graphs
        .iter()
        .find(|g| g.dir == "server")
        .expect("runtime/server is read");
    // The reader sees imports at all: the handler's file imports its siblings.
    assert!(
        server.edges["tool_call"].contains("render"),
        "the import reader missed `use super::{{…, render, …}}` in server/tool_call.rs: {:?}",
        server.edges["tool_call"]
    );
    let circles: Vec<String> = graphs
        .iter()
        .flat_map(|graph| {
            module_graph::circles(graph)
                .into_iter()
                .map(move |circle| format!("{}: {}", graph.dir, circle.join(" -> ")))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between the files of a module (move what both need into a leaf file \
         that imports neither):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_import_reader_finds_circles() {
    let text = module_graph::blank_literals(
        "use super::{a::X, b};\nlet s = \"super::c\"; // super::d\nmod tests { use super::super::e; use super::f; }\n",
    );
    assert!(
        !text.contains("super::c") && !text.contains("super::d"),
        "{text}"
    );
    let dir = std::env::temp_dir().join(format!("architecture-graph-{}", std::process::id()));
    let module = dir.join("m");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("mod.rs"), "mod a; mod b;").unwrap();
    std::fs::write(module.join("a.rs"), "use super::b::Y;\n").unwrap();
    std::fs::write(
        module.join("b.rs"),
        "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::super::a::X;\n    use super::f;\n}\n",
    )
    .unwrap();
    std::fs::write(module.join("c.rs"), "use crate::m::{a, b::Z};\n").unwrap();
    let graphs = module_graph::graphs(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let graph = graphs.iter().find(|g| g.dir == "m").unwrap();
    assert_eq!(
        graph.edges["c"].iter().collect::<Vec<_>>(),
        ["a", "b"],
        "crate:: paths and groups"
    );
    assert_eq!(
        module_graph::circles(graph),
        [vec!["a".to_string(), "b".into(), "a".into()]]
    );
    assert!(names_rmcp("use rmcp::model::Tool;"));
    assert!(names_rmcp("let (a, b) = rmcp::transport::stdio_pipes();"));
    assert!(!names_rmcp(r#"const QUIET: &[&str] = &["rmcp", "hyper"];"#));
    assert!(!names_rmcp("let my_rmcp::x = 1;"));
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
