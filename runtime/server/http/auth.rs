//! Bearer-token authentication of HTTP clients. The presented token's digest is compared with
//! every configured token's digest in constant time (see `config::principals`), and the token
//! is then removed from the request, so nothing downstream (rmcp hands handlers the request's
//! headers) can log it.
//!
//! The Bearer parsing is ten lines kept by hand rather than `headers::Authorization<Bearer>`
//! (issue 35): that crate would add a base64 crate and `mime` to the binary for this alone,
//! and its token() keeps surrounding spaces that clients send and we accept.

use http::HeaderMap;
use http::header::AUTHORIZATION;

use crate::config::principals::{Credentials, Principal};

/// The principal whose token the request carries as exactly one `Authorization: Bearer
/// <token>`; `None` when it carries none or an unknown one. Without configured tokens
/// (loopback only) every request is the principal `default`.
pub fn principal(expected: Option<&Credentials>, headers: &HeaderMap) -> Option<Principal> {
    let Some(expected) = expected else {
        return Some(Principal::default_principal());
    };
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return None;
    };
    expected.identify(bearer(value.as_bytes())?)
}

/// The credentials of a `Bearer` authorization (scheme matched case-insensitively).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    let token = &rest[start..];
    let end = token.iter().rposition(|b| *b != b' ')? + 1;
    Some(&token[..end])
}

/// Drops every credential header before the request goes further.
pub fn strip_credentials(headers: &mut HeaderMap) {
    headers.remove(AUTHORIZATION);
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn token() -> Credentials {
        Credentials::for_tests(&[("default", "s3cret"), ("bot", "b0t")])
    }

    fn authorized(expected: Option<&Credentials>, headers: &HeaderMap) -> bool {
        principal(expected, headers).is_some()
    }

    fn with(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn matrix() {
        let t = token();
        assert!(authorized(Some(&t), &with(&["Bearer s3cret"])));
        assert!(authorized(Some(&t), &with(&["bearer  s3cret "])));
        assert!(!authorized(Some(&t), &with(&[])));
        assert!(!authorized(Some(&t), &with(&["Bearer s3cre"])));
        assert!(!authorized(Some(&t), &with(&["Bearer s3cret2"])));
        assert!(!authorized(Some(&t), &with(&["Basic s3cret"])));
        assert!(!authorized(Some(&t), &with(&["Bearer"])));
        assert!(!authorized(
            Some(&t),
            &with(&["Bearer s3cret", "Bearer s3cret"])
        ));
        assert!(authorized(None, &with(&[])));
        let bot = principal(Some(&t), &with(&["Bearer b0t"])).unwrap();
        assert_eq!(bot.name(), "bot");
        assert_eq!(principal(None, &with(&[])).unwrap().name(), "default");
    }
}
