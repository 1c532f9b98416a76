//! JavaScript's `Number(string)` and `String.prototype.trim`, as SnowLuma's action kit runs
//! them on numeric params (ECMAScript's StringNumericLiteral grammar).
//!
//! Rust's `str::parse::<f64>` is close but not the same: it accepts `inf`, `nan` and
//! `infinity` in any case, rejects `0x10`, and its idea of white space differs (U+0085 is
//! white space to Rust, U+FEFF is not). Parity matters because a value SnowLuma accepts must
//! not be refused here, and the reverse.

/// White space and line terminators as JavaScript's `trim` and `Number` strip them.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `s.trim()` in JavaScript.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `Number(s)` in JavaScript: `NaN` when the text is not a numeric literal, `0` for blank
/// text, `±Infinity` for `Infinity` or a decimal too large for a double.
pub fn js_number(s: &str) -> f64 {
    let text = js_trim(s);
    if text.is_empty() {
        return 0.0;
    }
    if let Some(n) = non_decimal(text) {
        return n;
    }
    decimal(text).unwrap_or(f64::NAN)
}

/// `0x…`, `0o…`, `0b…` (either case). JavaScript allows no sign and no separators here.
fn non_decimal(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    if bytes.len() < 3 || bytes[0] != b'0' {
        return None;
    }
    let radix = match bytes[1] {
        b'x' | b'X' => 16,
        b'o' | b'O' => 8,
        b'b' | b'B' => 2,
        _ => return None,
    };
    let digits = &text[2..];
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return Some(f64::NAN);
    }
    // Exact while the value fits in 128 bits; beyond that (a ridiculous id anyway) the
    // running product may differ from JavaScript's in the last bit, which no integer param
    // can observe because those are refused above 2^53.
    match u128::from_str_radix(digits, radix) {
        Ok(n) => Some(n as f64),
        Err(_) => Some(digits.chars().fold(0.0, |acc, c| {
            acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
        })),
    }
}

/// `[+-]? (Infinity | digits [. digits?] [exp] | . digits [exp])`.
fn decimal(text: &str) -> Option<f64> {
    let (negative, unsigned) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = if unsigned == "Infinity" {
        f64::INFINITY
    } else if is_decimal_literal(unsigned) {
        // The grammar is checked above, so Rust's correctly rounded parser sees only forms
        // both languages read the same way.
        unsigned.parse::<f64>().ok()?
    } else {
        return None;
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn is_decimal_literal(s: &str) -> bool {
    let bytes = s.as_bytes();
    let mut i = 0;
    let int_digits = count_digits(&bytes[i..]);
    i += int_digits;
    let mut frac_digits = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = count_digits(&bytes[i..]);
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_digits = count_digits(&bytes[i..]);
        if exp_digits == 0 {
            return false;
        }
        i += exp_digits;
    }
    i == bytes.len()
}

fn count_digits(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_digit()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(text: &str, expected: f64) {
        let got = js_number(text);
        assert!(
            got == expected || (got.is_nan() && expected.is_nan()),
            "Number({text:?}) = {got}, JavaScript gives {expected}"
        );
    }

    #[test]
    fn decimal_forms_match_javascript() {
        same("42", 42.0);
        same("  42\n", 42.0);
        same("+7", 7.0);
        same("-7", -7.0);
        same("1.", 1.0);
        same(".5", 0.5);
        same("-.5", -0.5);
        same("1e3", 1000.0);
        same("1E+3", 1000.0);
        same("25e-1", 2.5);
        same("007", 7.0);
        same("1e400", f64::INFINITY);
        same("\u{FEFF}12\u{3000}", 12.0);
    }

    #[test]
    fn non_decimal_forms_match_javascript() {
        same("0x1F", 31.0);
        same("0X1f", 31.0);
        same("0o17", 15.0);
        same("0b101", 5.0);
        same(" 0x10 ", 16.0);
        same("-0x10", f64::NAN);
        same("+0x10", f64::NAN);
        same("0x", f64::NAN);
        same("0xG", f64::NAN);
        same("0b2", f64::NAN);
        same("0o8", f64::NAN);
    }

    #[test]
    fn blank_and_special_text_match_javascript() {
        same("", 0.0);
        same(" \t ", 0.0);
        same("Infinity", f64::INFINITY);
        same("-Infinity", f64::NEG_INFINITY);
        same("infinity", f64::NAN);
        same("inf", f64::NAN);
        same("NaN", f64::NAN);
        same(".", f64::NAN);
        same("1e", f64::NAN);
        same("e5", f64::NAN);
        same("1_000", f64::NAN);
        same("--1", f64::NAN);
        same("1 2", f64::NAN);
        same("12abc", f64::NAN);
        same("\u{0085}1", f64::NAN);
    }
}
