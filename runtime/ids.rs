//! Random identifiers and lower-case hex, shared by trace ids, stream ids, download file names
//! and checksums.

use std::fmt::Write as _;

/// `N` random bytes, never all zero (W3C trace ids must not be). The OS random source failing
/// is not a reason to fail a call.
pub fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if getrandom::fill(&mut bytes).is_err() || bytes.iter().all(|b| *b == 0) {
        bytes[N - 1] = 1;
    }
    bytes
}

/// `N` random bytes as `2 * N` lower-case hex digits.
pub fn random_hex<const N: usize>() -> String {
    hex(&random::<N>())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}
