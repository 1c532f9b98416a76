//! Fixture specs, found by glob: each `fixtures/good/*` must generate (one snapshot per
//! generated file), each `fixtures/bad/*` must fail (one snapshot of the error text).
//! Adding a case needs no Rust edit.

use std::path::{Path, PathBuf};

fn cases(kind: &str) -> Vec<PathBuf> {
    let pattern = format!(
        "{}/tests/fixtures/{kind}/*/spec",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut found: Vec<PathBuf> = glob::glob(&pattern)
        .expect("valid glob")
        .flatten()
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no fixtures under {pattern}");
    found
}

fn case_name(spec: &Path) -> String {
    spec.parent()
        .and_then(Path::file_name)
        .unwrap()
        .to_string_lossy()
        .to_string()
}

#[test]
fn good_fixtures_generate_deterministic_output() {
    for spec in cases("good") {
        let name = case_name(&spec);
        let first = snowluma_mcp_codegen::generate(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        let second = snowluma_mcp_codegen::generate(&spec).unwrap();
        for (a, b) in first.iter().zip(&second) {
            assert_eq!(
                a.contents, b.contents,
                "{name}/{} differs between two runs",
                a.name
            );
            insta::assert_snapshot!(format!("{name}__{}", a.name), a.contents);
        }
    }
}

#[test]
fn bad_fixtures_fail_with_located_errors() {
    for spec in cases("bad") {
        let name = case_name(&spec);
        let errors = match snowluma_mcp_codegen::generate(&spec) {
            Ok(_) => panic!("{name}: expected spec errors, got none"),
            Err(errors) => errors,
        };
        for error in &errors.0 {
            assert!(error.file.starts_with("spec/"), "{name}: {error}");
            assert!(error.line >= 1 && error.column >= 1, "{name}: {error}");
        }
        insta::assert_snapshot!(format!("bad__{name}"), errors.to_string());
    }
}

#[test]
fn run_writes_only_changed_files() {
    let spec = cases("good").remove(0);
    // Removed on drop, also when an assertion below fails.
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("generated");
    let written = snowluma_mcp_codegen::run(&spec, &out).unwrap();
    assert_eq!(written.len(), 5, "first run writes every file");
    let again = snowluma_mcp_codegen::run(&spec, &out).unwrap();
    assert!(
        again.is_empty(),
        "an unchanged spec rewrites nothing, wrote {again:?}"
    );
    std::fs::write(out.join("catalog.json"), "edited by hand").unwrap();
    let repaired = snowluma_mcp_codegen::run(&spec, &out).unwrap();
    assert_eq!(repaired, vec!["catalog.json"]);
}
