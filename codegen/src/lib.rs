//! snowluma-mcp-codegen: spec/ (YAML) -> generated/ (Rust and JSON).
//!
//! Stages: [`load`] reads the YAML into the [`model`], [`validate`] checks the whole catalog
//! and collects every error, [`ir::lower`] builds the checked catalog, and [`emit`] turns it
//! into file contents. [`run`] writes only the files whose contents changed.

pub mod emit;
pub mod error;
pub mod ir;
pub mod load;
pub mod locate;
pub mod model;
pub mod review;
pub mod schema;
pub mod sync;
pub mod validate;

use std::path::Path;

pub use emit::GeneratedFile;
pub use error::{SpecError, SpecErrors};

/// Checks the spec and returns the generated files, or every error found.
pub fn generate(spec_dir: &Path) -> Result<Vec<GeneratedFile>, SpecErrors> {
    checked(spec_dir).map(|(files, _)| files)
}

fn checked(spec_dir: &Path) -> Result<(Vec<GeneratedFile>, Vec<String>), SpecErrors> {
    let spec = load::load(spec_dir)?;
    let mut errors = validate::validate(&spec);
    if !errors.is_empty() {
        errors.sort();
        return Err(SpecErrors(errors));
    }
    Ok((emit::emit_all(&ir::lower(&spec)), review::pending(&spec)))
}

/// What [`run`] did.
#[derive(Debug, Default)]
pub struct Generated {
    /// The generated files whose contents changed and were written.
    pub written: Vec<&'static str>,
    /// One line per example still marked `review: true` (file:line:column, action, example).
    pub to_review: Vec<String>,
}

/// Generates into `out_dir`, rewriting only files whose contents changed.
pub fn run(spec_dir: &Path, out_dir: &Path) -> Result<Generated, Box<dyn std::error::Error>> {
    let (files, to_review) = checked(spec_dir)?;
    std::fs::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    for file in files {
        let path = out_dir.join(file.name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(file.contents.as_str()) {
            std::fs::write(&path, &file.contents)?;
            written.push(file.name);
        }
    }
    Ok(Generated { written, to_review })
}
