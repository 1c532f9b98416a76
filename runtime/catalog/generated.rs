//! The include sites of generated/ (written by build.rs from spec/; never edited by hand).

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports)]
pub mod actions {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/actions.rs"));
}

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports)]
pub mod params {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/params.rs"));
}

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports)]
pub mod search_index {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/search_index.rs"));
}

#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic, unused_imports)]
pub mod tools {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/generated/tools.rs"));
}
