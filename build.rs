//! Regenerates generated/ from spec/ whenever the spec changes. Writes nothing else, and
//! rewrites only files whose contents changed.

use std::path::Path;

fn main() {
    // Read when the script runs, not when it is compiled (`env!`): a build script compiled in
    // one checkout and reused from a shared or copied target dir would otherwise regenerate
    // that other checkout's generated/ from its spec/.
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir);
    println!("cargo::rerun-if-changed=spec");
    // A deleted or hand-edited generated file is put back on the next build.
    println!("cargo::rerun-if-changed=generated");
    match snowluma_mcp_codegen::run(&root.join("spec"), &root.join("generated")) {
        Ok(generated) => {
            for name in generated.written {
                println!("cargo::warning=regenerated generated/{name}; review and commit it");
            }
            for line in generated.to_review {
                println!("cargo::warning={line}");
            }
        }
        Err(error) => {
            eprintln!("{error}");
            for line in error.to_string().lines() {
                println!("cargo::error={line}");
            }
            std::process::exit(1);
        }
    }
}
