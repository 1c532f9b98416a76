//! Examples the catalog sync wrote from SnowLuma's catalog and no person has checked yet
//! (`review: true`). They are valid spec, so the build passes, but `cargo build` warns about
//! each one and CI (`tests/catalog.rs`) fails while any remains.

use crate::load::Spec;

/// One line per example still marked `review: true`, in file order.
pub fn pending(spec: &Spec) -> Vec<String> {
    spec.actions
        .iter()
        .flat_map(|source| {
            source
                .value
                .examples
                .iter()
                .enumerate()
                .filter(|(_, example)| example.review)
                .map(move |(i, _)| {
                    let field = format!("examples[{i}].review");
                    let (line, column) = source.locations.find(&field);
                    format!(
                        "{}:{line}:{column}: action `{}`: example {i} was written by catalog-sync and needs review; check it, then delete its `review: true`",
                        source.path, source.value.name
                    )
                })
        })
        .collect()
}
