//! `cargo run -p snowluma-mcp-codegen --bin catalog-sync -- <catalog.json> [--write]
//! [--json] [--version X] [--spec DIR]`: compares SnowLuma's catalog with spec/ (see
//! README, "Adding an action"). Exit code 0: no drift; 1: drift reported; 2: usage or input
//! error.

use std::path::PathBuf;
use std::process::ExitCode;

use snowluma_mcp_codegen::sync;

const USAGE: &str =
    "usage: catalog-sync <SnowLuma catalog.json> [--write] [--json] [--version X] [--spec DIR]
  <catalog.json>  packages/mcp/src/generated/catalog.json of a SnowLuma checkout
  --write         create YAML for new actions (examples marked review: true), update changed
                  params in place, record the catalog as spec/upstream-catalog.json
  --json          print the report as JSON instead of text
  --version X     also set spec/catalog.yaml's version to X (only with --write)
  --spec DIR      the spec directory (default: spec/ of this workspace)";

struct Args {
    upstream: PathBuf,
    write: bool,
    json: bool,
    version: Option<String>,
    spec: PathBuf,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut upstream = None;
    let mut parsed = Args {
        upstream: PathBuf::new(),
        write: false,
        json: false,
        version: None,
        spec: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../spec")),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--write" => parsed.write = true,
            "--json" => parsed.json = true,
            "--version" => parsed.version = Some(args.next().ok_or("--version needs a value")?),
            "--spec" => parsed.spec = args.next().ok_or("--spec needs a directory")?.into(),
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            path if upstream.is_none() => upstream = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    parsed.upstream = upstream.ok_or("name the upstream catalog.json")?;
    if parsed.version.is_some() && !parsed.write {
        return Err("--version moves spec/catalog.yaml's version, so it needs --write".into());
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("catalog-sync: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(clean) => ExitCode::from(if clean { 0 } else { 1 }),
        Err(message) => {
            eprintln!("catalog-sync: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<bool, String> {
    let text = std::fs::read_to_string(&args.upstream)
        .map_err(|e| format!("cannot read {}: {e}", args.upstream.display()))?;
    let report = sync::compare(&args.spec, &text)?;
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        println!("{json}");
    } else {
        print!("{}", sync::render::render(&report));
    }
    if !args.write {
        if !report.is_clean() {
            eprintln!("catalog-sync: run again with --write to do the mechanical part");
        }
        return Ok(report.is_clean());
    }
    let spec = snowluma_mcp_codegen::load::load(&args.spec).map_err(|e| e.to_string())?;
    let written = sync::write::apply(&args.spec, &spec, &text, &report, args.version.as_deref())?;
    for file in &written.files {
        eprintln!("catalog-sync: wrote spec/{file}");
    }
    for (change, why) in &written.left {
        eprintln!(
            "catalog-sync: left for you: {} {}: {why}",
            change.action, change.field
        );
    }
    eprintln!(
        "catalog-sync: now run `cargo build`, review the diff of spec/ and generated/, and clear each `review: true`"
    );
    Ok(written.left.is_empty())
}
