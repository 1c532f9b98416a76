//! Random identifiers and lower-case hex, shared by trace ids, stream ids, download file names
//! and checksums.

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
    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xab, 0xff, 0x10]), "000fabff10");
        assert_eq!(super::random_hex::<8>().len(), 16);
    }
}
