//! Reading a secret (SnowLuma's access token, the HTTP transport's client token) from its
//! environment variable or from a file. A secret never comes from a flag: argv is visible to
//! every local user in `ps`.

use std::path::Path;

use super::ConfigError;

/// Where one secret may come from, and what it is for (said in errors).
pub struct SecretSource<'a> {
    /// The environment variable holding the secret itself.
    pub env: &'a str,
    /// The setting naming a file that holds it.
    pub file_setting: &'a str,
    /// What the secret is, for "set it to ..." hints.
    pub what: &'a str,
}

/// The secret from `source.env`, or the whole of `file` with one trailing newline (`\n` or
/// `\r\n`) trimmed; both at once is ambiguous. Empty counts as unset.
pub fn read_secret(
    source: &SecretSource<'_>,
    file: Option<&Path>,
) -> Result<Option<String>, ConfigError> {
    let from_env = match std::env::var(source.env) {
        Ok(secret) => Some(secret).filter(|s| !s.is_empty()),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(ConfigError(format!(
                "{} is not valid UTF-8; set it to {}",
                source.env, source.what
            )));
        }
    };
    let from_file = match file {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError(format!(
                    "{} {} cannot be read ({}); point it at a readable file holding only {}",
                    source.file_setting,
                    path.display(),
                    e.kind(),
                    source.what
                ))
            })?;
            refuse_shared_file(path, source.file_setting)?;
            let secret = text.strip_suffix('\n').unwrap_or(&text);
            let secret = secret.strip_suffix('\r').unwrap_or(secret);
            Some(secret.to_string()).filter(|s| !s.is_empty())
        }
    };
    match (from_env, from_file) {
        (Some(_), Some(_)) => Err(ConfigError(format!(
            "both {} and {} are set; keep one of them",
            source.env, source.file_setting
        ))),
        (secret, None) | (None, secret) => Ok(secret),
    }
}

/// Refuses a secret file that group or others may read (or write), like the task directory:
/// a token readable by every local user protects nothing. POSIX only.
pub fn refuse_shared_file(path: &Path, setting: &str) -> Result<(), ConfigError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).map_err(|e| {
            ConfigError(format!(
                "{setting} {} cannot be read ({}); point it at a readable file",
                path.display(),
                e.kind()
            ))
        })?;
        let mode = meta.mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(ConfigError(format!(
                "{setting} {} has permissions {mode:o}, which let group or others read it; run \
                 chmod 600 on it",
                path.display()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = (path, setting);
    Ok(())
}
