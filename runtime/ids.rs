//! Random identifiers and lower-case hex, shared by trace ids, session and resource ids,
//! stream ids, download file names, task ids and checksums.
//!
//! Identifiers come from the operating system's random source only. When it fails, the work
//! that needed the id fails with [`RandomUnavailable`]: a fallback (a constant, a counter, the
//! clock) would make ids predictable, and some of them guard files and resources.

use std::fmt;

/// The operating system's random source failed (or kept returning zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomUnavailable;

impl RandomUnavailable {
    /// Said to the MCP client, after what could not be done.
    pub const MESSAGE: &'static str = "the operating system's random source failed, so no \
        unpredictable identifier could be made; nothing was sent";
    pub const NEXT_STEP: &'static str = "check the host's random source (getrandom: /dev/urandom \
        or the getrandom system call, e.g. blocked by a seccomp filter), then call again";
}

impl fmt::Display for RandomUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::MESSAGE)
    }
}

impl std::error::Error for RandomUnavailable {}

impl From<RandomUnavailable> for std::io::Error {
    fn from(error: RandomUnavailable) -> std::io::Error {
        std::io::Error::other(error)
    }
}

/// `N` random bytes from the OS, never all zero (W3C trace ids must not be).
pub fn random<const N: usize>() -> Result<[u8; N], RandomUnavailable> {
    random_from(fill_from_pool)
}

/// Bytes fetched from the OS ahead of need, per thread, so that a tool call's two trace ids
/// cost no system call of their own (one `getrandom` serves about ten calls). Every byte is
/// handed out once and zeroed as it leaves.
struct Pool {
    bytes: [u8; 256],
    used: usize,
}

thread_local! {
    static POOL: std::cell::RefCell<Pool> =
        const { std::cell::RefCell::new(Pool { bytes: [0; 256], used: 256 }) };
}

fn fill_from_pool(out: &mut [u8]) -> bool {
    POOL.with_borrow_mut(|pool| {
        if out.len() > pool.bytes.len() {
            return getrandom::fill(out).is_ok();
        }
        if pool.used + out.len() > pool.bytes.len() {
            if getrandom::fill(&mut pool.bytes).is_err() {
                return false;
            }
            pool.used = 0;
        }
        let taken = &mut pool.bytes[pool.used..pool.used + out.len()];
        out.copy_from_slice(taken);
        taken.fill(0);
        pool.used += out.len();
        true
    })
}

/// `N` random bytes as `2 * N` lower-case hex digits.
pub fn random_hex<const N: usize>() -> Result<String, RandomUnavailable> {
    random::<N>().map(|bytes| hex(&bytes))
}

/// [`random`] over any source (`fill` returns false on failure), so tests can make it fail.
/// All zeros is retried a few times: from a working source that is practically impossible, so
/// repeated zeros mean a broken one.
fn random_from<const N: usize>(
    mut fill: impl FnMut(&mut [u8]) -> bool,
) -> Result<[u8; N], RandomUnavailable> {
    let mut bytes = [0u8; N];
    for _ in 0..3 {
        if !fill(&mut bytes) {
            return Err(RandomUnavailable);
        }
        if bytes.iter().any(|b| *b != 0) {
            return Ok(bytes);
        }
    }
    Err(RandomUnavailable)
}

pub fn hex(bytes: &[u8]) -> String {
    // A table instead of `write!("{:02x}")`: every call's trace and span ids go through here.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_source_is_an_error_not_a_fallback_id() {
        assert_eq!(random_from::<8>(|_| false), Err(RandomUnavailable));
    }

    #[test]
    fn a_source_stuck_at_zero_is_an_error() {
        let mut calls = 0;
        let result = random_from::<16>(|bytes| {
            calls += 1;
            bytes.fill(0);
            true
        });
        assert_eq!(result, Err(RandomUnavailable));
        assert_eq!(calls, 3);
    }

    #[test]
    fn a_working_source_gives_its_bytes() {
        let bytes = random_from::<4>(|bytes| {
            bytes.copy_from_slice(&[1, 2, 3, 4]);
            true
        });
        assert_eq!(bytes, Ok([1, 2, 3, 4]));
        let a = random_hex::<16>().unwrap();
        let b = random_hex::<16>().unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn pooled_bytes_are_never_handed_out_twice() {
        // Far more than one pool's worth, in the sizes the server asks for.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            assert!(seen.insert(random::<16>().unwrap().to_vec()));
            assert!(seen.insert(random::<8>().unwrap().to_vec()));
        }
        let big = random::<512>().unwrap();
        assert!(big.iter().any(|b| *b != 0));
    }

    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xab, 0xff, 0x10]), "000fabff10");
        assert_eq!(random_hex::<8>().unwrap().len(), 16);
    }

    #[test]
    fn the_error_says_nothing_was_sent() {
        let io: std::io::Error = RandomUnavailable.into();
        assert!(io.to_string().contains("random source failed"));
        assert!(RandomUnavailable.to_string().contains("nothing was sent"));
    }
}
