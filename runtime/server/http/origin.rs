//! DNS-rebinding protection: which `Host` and `Origin` values a request may carry. Only the
//! request's own `Host` (or, without one, the URI authority) is read; `X-Forwarded-Host`,
//! `Forwarded` and the like are never trusted, since any client can send them.

use http::HeaderMap;
use http::header::{HOST, ORIGIN};
use http::uri::Authority;

use crate::config::http::PublicOrigin;

/// Names that always mean this machine.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Why a request was refused before anything else looked at it.
#[derive(Debug, PartialEq, Eq)]
pub enum OriginRefusal {
    /// No `Host`, or one that is not `host[:port]`.
    MalformedHost,
    HostNotAllowed,
    OriginNotAllowed,
}

/// The hosts and origins this server answers to.
pub struct OriginPolicy {
    public: Option<PublicOrigin>,
    /// Exact `Origin` values accepted: the public origin and this server's own loopback ones.
    origins: Vec<String>,
}

impl OriginPolicy {
    pub fn new(public: Option<PublicOrigin>, listen_port: u16) -> OriginPolicy {
        let mut origins: Vec<String> = LOOPBACK_HOSTS
            .iter()
            .map(|host| format!("http://{host}:{listen_port}"))
            .collect();
        if let Some(public) = &public {
            origins.push(public.origin.clone());
        }
        OriginPolicy { public, origins }
    }

    /// `Host` must name loopback (any port: a rebinding attacker's page cannot use these
    /// names) or the public origin's host on its port.
    pub fn check_host(
        &self,
        headers: &HeaderMap,
        uri_authority: Option<&str>,
    ) -> Result<(), OriginRefusal> {
        let mut hosts = headers.get_all(HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(value), None) => value.to_str().map_err(|_| OriginRefusal::MalformedHost)?,
            (None, _) => uri_authority.ok_or(OriginRefusal::MalformedHost)?,
            (Some(_), Some(_)) => return Err(OriginRefusal::MalformedHost),
        };
        let (name, port) = split_host(host).ok_or(OriginRefusal::MalformedHost)?;
        if LOOPBACK_HOSTS.contains(&name.as_str()) {
            return Ok(());
        }
        match &self.public {
            Some(public) if public.host == name && port.is_none_or(|p| p == public.port) => Ok(()),
            _ => Err(OriginRefusal::HostNotAllowed),
        }
    }

    /// A present `Origin` must be exactly one this server is reached at; an absent one is a
    /// non-browser client and passes.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), OriginRefusal> {
        for value in headers.get_all(ORIGIN) {
            let allowed = value
                .to_str()
                .is_ok_and(|origin| self.origins.iter().any(|o| o == origin));
            if !allowed {
                return Err(OriginRefusal::OriginNotAllowed);
            }
        }
        Ok(())
    }
}

/// `host[:port]` into a lower-case host (IPv6 kept in brackets) and the port, if any, read
/// with `http`'s authority parser. Stricter than an authority on three counts: no user info,
/// a port present is a number, and the host is letters, digits and `-._` (or an IPv6 literal).
fn split_host(text: &str) -> Option<(String, Option<u16>)> {
    let authority: Authority = text.trim().parse().ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let name = authority.host();
    let port = match &authority.as_str()[name.len()..] {
        "" => None,
        colon_port => Some(colon_port.strip_prefix(':')?.parse::<u16>().ok()?),
    };
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._[]:".contains(&b));
    if !valid_name {
        return None;
    }
    Some((name.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn policy() -> OriginPolicy {
        let public = crate::config::http::parse_public_origin("https://mcp.example.com").unwrap();
        OriginPolicy::new(Some(public), 3001)
    }

    #[test]
    fn hosts() {
        let p = policy();
        for ok in [
            "localhost:3001",
            "127.0.0.1:9",
            "[::1]:3001",
            "LOCALHOST",
            "mcp.example.com",
            "mcp.example.com:443",
        ] {
            assert_eq!(
                p.check_host(&headers(&[("host", ok)]), None),
                Ok(()),
                "{ok}"
            );
        }
        for bad in ["evil.example", "mcp.example.com:8443", "127.0.0.2:3001"] {
            assert_eq!(
                p.check_host(&headers(&[("host", bad)]), None),
                Err(OriginRefusal::HostNotAllowed),
                "{bad}"
            );
        }
        for malformed in ["", "a b", "[::1", "localhost:x"] {
            assert_eq!(
                p.check_host(&headers(&[("host", malformed)]), None),
                Err(OriginRefusal::MalformedHost),
                "{malformed}"
            );
        }
        // Forwarded headers are not read.
        let forwarded = headers(&[("host", "evil.example"), ("x-forwarded-host", "localhost")]);
        assert_eq!(
            p.check_host(&forwarded, None),
            Err(OriginRefusal::HostNotAllowed)
        );
    }

    #[test]
    fn origins() {
        let p = policy();
        assert_eq!(p.check_origin(&headers(&[])), Ok(()));
        for ok in ["https://mcp.example.com", "http://localhost:3001"] {
            assert_eq!(p.check_origin(&headers(&[("origin", ok)])), Ok(()), "{ok}");
        }
        for bad in [
            "https://evil.example",
            "http://mcp.example.com",
            "https://mcp.example.com:8443",
            "http://localhost:3002",
            "null",
        ] {
            assert_eq!(
                p.check_origin(&headers(&[("origin", bad)])),
                Err(OriginRefusal::OriginNotAllowed),
                "{bad}"
            );
        }
    }
}
