//! catalog-sync: compares SnowLuma's machine-readable catalog with spec/, prints what moved,
//! and with `--write` does the mechanical part of bringing spec/ in step (README, "Adding an
//! action"). Stages: [`upstream`] reads SnowLuma's catalog.json, [`diff`] compares, [`render`]
//! prints, [`write`] edits spec/ in place.

pub mod diff;
pub mod differences;
pub mod kept;
pub mod render;
pub mod upstream;
pub mod write;

use std::path::Path;

pub use diff::Report;
use upstream::UpstreamCatalog;

/// The upstream catalog spec/ was last synced from; prose is compared against it.
pub const BASELINE_FILE: &str = "upstream-catalog.json";

/// Compares the upstream catalog `upstream_text` with the spec in `spec_dir`.
pub fn compare(spec_dir: &Path, upstream_text: &str) -> Result<Report, String> {
    let upstream = UpstreamCatalog::parse(upstream_text)?;
    let spec = crate::load::load(spec_dir).map_err(|e| e.to_string())?;
    let baseline = match std::fs::read_to_string(spec_dir.join(BASELINE_FILE)) {
        Ok(text) => {
            Some(UpstreamCatalog::parse(&text).map_err(|e| format!("spec/{BASELINE_FILE}: {e}"))?)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read spec/{BASELINE_FILE}: {e}")),
    };
    let differences = differences::load(spec_dir)?;
    Ok(diff::compare(
        &spec,
        &upstream,
        baseline.as_ref(),
        &differences,
    ))
}
