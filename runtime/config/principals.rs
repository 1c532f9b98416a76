//! Who may use the HTTP transport: named client tokens. The single token
//! (`SNOWLUMA_MCP_HTTP_TOKEN` / `SNOWLUMA_MCP_HTTP_TOKEN_FILE`) is the principal `default`;
//! `SNOWLUMA_MCP_HTTP_TOKENS_FILE` adds one principal per `name token` line. Only SHA-256
//! digests of the tokens are kept, and a presented token is compared with every digest in
//! constant time, so neither its content nor its length shows in the time an answer takes.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::ConfigError;

/// The setting naming the tokens file.
pub const TOKENS_FILE_SETTING: &str = "SNOWLUMA_MCP_HTTP_TOKENS_FILE";
/// The name of the principal the single token stands for (and of everyone on stdio or an
/// unauthenticated loopback listener).
pub const DEFAULT_PRINCIPAL: &str = "default";
/// The longest principal name.
const MAX_NAME: usize = 64;

/// The name of a client that owns work on this server: what the logs show and what tasks,
/// event resources and input prompts are bound to. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal(Arc<str>);

impl Principal {
    pub fn new(name: &str) -> Principal {
        Principal(Arc::from(name))
    }

    /// The principal of the single token, of stdio and of a token-less loopback listener.
    pub fn default_principal() -> Principal {
        Principal::new(DEFAULT_PRINCIPAL)
    }

    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({})", self.0)
    }
}

/// The principal an owner key belongs to (see `Call::owner`): the key up to its first `/`
/// (a legacy HTTP session's key is `principal/session-id`; `/` is never in a principal's name).
pub fn principal_of(owner: &str) -> &str {
    owner.split('/').next().unwrap_or(owner)
}

/// The owner key of a legacy HTTP session opened by `principal`.
pub fn session_owner(principal: &Principal, session_id: &str) -> String {
    format!("{principal}/{session_id}")
}

/// Each principal's part of a process-wide limit while two or more principals can use the
/// server (`SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT`), so one cannot exhaust it for the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub percent: u8,
}

impl Share {
    /// The most of `limit` one principal may hold: `percent` % of it rounded up, at least one.
    pub fn of(self, limit: usize) -> usize {
        (limit * usize::from(self.percent)).div_ceil(100).max(1)
    }

    /// How a refusal names the share: "its share, N (P % of LIMIT, SNOWLUMA_MCP_...)".
    pub fn describe(self, limit: usize) -> String {
        format!(
            "its share, {} ({} % of {limit}, SNOWLUMA_MCP_PRINCIPAL_SHARE_PERCENT)",
            self.of(limit),
            self.percent
        )
    }
}

/// One principal's token, as its digest.
#[derive(Clone)]
struct Credential {
    principal: Principal,
    digest: [u8; 32],
}

/// Every token the HTTP transport accepts. Never printed.
#[derive(Clone, Default)]
pub struct Credentials {
    entries: Vec<Credential>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|c| c.principal.name()).collect();
        write!(f, "Credentials({names:?}, tokens <redacted>)")
    }
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

impl Credentials {
    /// The principal whose token was presented. Every digest is compared, whatever matched,
    /// so the time taken says nothing about which entry (if any) did.
    pub fn identify(&self, presented: &[u8]) -> Option<Principal> {
        let presented = digest(presented);
        let mut found = None;
        for credential in &self.entries {
            if bool::from(credential.digest.ct_eq(&presented)) {
                found = Some(credential.principal.clone());
            }
        }
        found
    }

    /// The principals' names, in the order they were configured.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|c| c.principal.name())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[cfg(test)]
    pub fn for_tests(pairs: &[(&str, &str)]) -> Credentials {
        let mut credentials = Credentials::default();
        for (name, token) in pairs {
            credentials.entries.push(Credential {
                principal: Principal::new(name),
                digest: digest(token.as_bytes()),
            });
        }
        credentials
    }

    /// Adds the single token as the principal `default`.
    pub fn with_default_token(token: &str) -> Credentials {
        Credentials {
            entries: vec![Credential {
                principal: Principal::default_principal(),
                digest: digest(token.as_bytes()),
            }],
        }
    }

    /// Adds the principals of a tokens file's text (`path` is only shown in errors).
    /// Refused, with the line number and never the token, on a malformed line, a name or a
    /// token seen before (the single token counts as the name `default`).
    pub fn add_tokens_file(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let bad = |line: usize, why: &str| {
            ConfigError(format!(
                "{TOKENS_FILE_SETTING} {} line {line}: {why}; each line is `name token` (name: \
                 1 to {MAX_NAME} letters, digits, `.`, `_` or `-`; token: printable ASCII without \
                 spaces), blank lines and lines starting with # are ignored",
                path.display()
            ))
        };
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut fields = line.split_ascii_whitespace();
            let (Some(name), Some(token), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad(
                    line_no,
                    "the line does not hold exactly a name and a token",
                ));
            };
            let name_ok = name.len() <= MAX_NAME
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !name_ok {
                return Err(bad(
                    line_no,
                    "the name has a character other than a-z A-Z 0-9 . _ - or is too long",
                ));
            }
            if !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(bad(line_no, "the token is not printable ASCII"));
            }
            if self.entries.iter().any(|c| c.principal.name() == name) {
                return Err(bad(
                    line_no,
                    &format!(
                        "the name `{name}` is given twice (the single SNOWLUMA_MCP_HTTP_TOKEN is `{DEFAULT_PRINCIPAL}`)"
                    ),
                ));
            }
            let digest = digest(token.as_bytes());
            if let Some(other) = self.entries.iter().find(|c| c.digest == digest) {
                return Err(bad(
                    line_no,
                    &format!(
                        "this token is also the token of `{}`; give every principal its own token",
                        other.principal
                    ),
                ));
            }
            self.entries.push(Credential {
                principal: Principal::new(name),
                digest,
            });
        }
        if self.entries.is_empty() {
            return Err(ConfigError(format!(
                "{TOKENS_FILE_SETTING} {} names no principal; add `name token` lines",
                path.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Credentials, ConfigError> {
        let mut c = Credentials::default();
        c.add_tokens_file(Path::new("/t"), text).map(|()| c)
    }

    #[test]
    fn shares_round_up_and_owners_name_their_principal() {
        let half = Share { percent: 50 };
        assert_eq!(
            (half.of(16), half.of(4), half.of(256), half.of(2)),
            (8, 2, 128, 1)
        );
        assert_eq!(Share { percent: 10 }.of(4), 1);
        assert_eq!(Share { percent: 1 }.of(2), 1);
        let alice = Principal::new("alice");
        assert_eq!(principal_of(&session_owner(&alice, "session-3")), "alice");
        assert_eq!(principal_of("alice"), "alice");
    }

    #[test]
    fn names_tokens_and_comments() {
        let c = parse("# team\nalice  tok-a\n\nbot tok-b\n").unwrap();
        assert_eq!(c.names().collect::<Vec<_>>(), ["alice", "bot"]);
        assert_eq!(c.identify(b"tok-b").unwrap().name(), "bot");
        assert_eq!(c.identify(b"tok-a").unwrap().name(), "alice");
        assert!(c.identify(b"tok-").is_none());
        assert!(c.identify(b"").is_none());
    }

    #[test]
    fn refusals_name_the_line_and_never_the_token() {
        for (text, line, why) in [
            ("a x\nb\n", "line 2", "exactly a name and a token"),
            ("a x\nb y z\n", "line 2", "exactly a name and a token"),
            ("a x-secret\na y-secret\n", "line 2", "given twice"),
            (
                "a same-secret\n\nb same-secret\n",
                "line 3",
                "also the token of `a`",
            ),
            ("bad/name x-secret\n", "line 1", "character"),
            ("# nothing\n", "names no principal", ""),
        ] {
            let error = parse(text).unwrap_err().0;
            assert!(error.contains(line), "{error}");
            assert!(error.contains(why), "{error}");
            assert!(!error.contains("secret"), "the token leaked: {error}");
        }
        let mut c = Credentials::with_default_token("t1");
        let error = c
            .add_tokens_file(Path::new("/t"), "default t2\n")
            .unwrap_err()
            .0;
        assert!(
            error.contains("line 1") && error.contains("`default`"),
            "{error}"
        );
    }
}
