//! TLS for `https://` endpoints and `wss:` event sockets: one rustls `ClientConfig`, built at
//! start-up and shared by the HTTP client and the WebSocket client.
//!
//! Trusted roots are the operating system's (`rustls-native-certs`: the distribution's CA
//! bundle, honouring `SSL_CERT_FILE`/`SSL_CERT_DIR`, so an administrator's changes apply and
//! nothing is frozen into the binary, as `webpki-roots` would be), plus the CA certificates in
//! `SNOWLUMA_MCP_CA_FILE` for a private proxy or a self-signed SnowLuma front end.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::ConfigError;

/// A CA file larger than this is not a PEM bundle anyone meant to pass.
const MAX_CA_FILE_BYTES: u64 = 4 << 20;

/// The shared TLS client configuration.
#[derive(Clone)]
pub struct Tls {
    config: Arc<rustls::ClientConfig>,
    ca_file: Option<PathBuf>,
}

impl Tls {
    /// Every certificate in `ca_file`, plus the system roots when `system_roots` (a configured
    /// URL is https or wss; otherwise nothing would use them, and reading the system store is
    /// the slowest part of start-up). A missing, unreadable or certificate-less CA file is an
    /// error naming the setting, whichever URLs are configured.
    pub fn load(ca_file: Option<&Path>, system_roots: bool) -> Result<Tls, ConfigError> {
        let mut roots = RootCertStore::empty();
        if system_roots {
            // Unparsable system certificates are skipped: one bad file in /etc/ssl must not
            // stop the server.
            let system = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(system.certs);
        }
        if let Some(path) = ca_file {
            for certificate in read_ca_file(path)? {
                roots.add(certificate).map_err(|e| {
                    ca_error(
                        path,
                        &format!("holds a certificate rustls cannot use as a CA ({e})"),
                    )
                })?;
            }
        }
        // `ring` is the one provider compiled in; naming it avoids depending on a process-wide
        // default being installed.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError(format!("cannot set up TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Tls {
            config: Arc::new(config),
            ca_file: ca_file.map(Path::to_path_buf),
        })
    }

    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        self.config.clone()
    }

    /// Whether `SNOWLUMA_MCP_CA_FILE` was given (error messages differ).
    pub fn has_ca_file(&self) -> bool {
        self.ca_file.is_some()
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

/// A TLS failure found in an error's source chain (hyper-rustls and tungstenite wrap rustls's
/// error in `io::Error`s, whose `source()` skips the wrapped error itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFailure {
    /// The peer's certificate was refused (untrusted issuer, wrong host name, expired...).
    pub certificate: bool,
    /// rustls's description.
    pub detail: String,
}

impl TlsFailure {
    pub fn find(error: &(dyn std::error::Error + 'static)) -> Option<TlsFailure> {
        let mut next = Some(error);
        while let Some(error) = next {
            // The connectors nest io::Errors (e.g. Other around InvalidData around rustls's error).
            let mut inner: &(dyn std::error::Error + 'static) = error;
            while let Some(wrapped) = inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
            {
                inner = wrapped;
            }
            if let Some(rustls_error) = inner.downcast_ref::<rustls::Error>() {
                return Some(TlsFailure {
                    certificate: matches!(
                        rustls_error,
                        rustls::Error::InvalidCertificate(_)
                            | rustls::Error::NoCertificatesPresented
                    ),
                    detail: rustls_error.to_string(),
                });
            }
            next = error.source();
        }
        None
    }

    /// One sentence for an error message: what failed and that nothing was sent.
    pub fn describe(&self, peer: &str) -> String {
        if self.certificate {
            format!(
                "the TLS certificate of {peer} could not be verified ({}); nothing was sent",
                self.detail
            )
        } else {
            format!(
                "the TLS handshake with {peer} failed ({}); nothing was sent",
                self.detail
            )
        }
    }

    /// What to do about it.
    pub fn next_step(&self) -> &'static str {
        if self.certificate {
            "if SnowLuma sits behind a private TLS proxy or uses its own CA, put that CA's PEM \
             certificate in SNOWLUMA_MCP_CA_FILE (or --ca-file) and restart; otherwise check that \
             the URL's host name matches the certificate"
        } else {
            "check that the address really serves TLS (use http:// or ws:// for a plain \
             SnowLuma port) and that its certificate is trusted (SNOWLUMA_MCP_CA_FILE)"
        }
    }
}

fn ca_error(path: &Path, problem: &str) -> ConfigError {
    ConfigError(format!(
        "SNOWLUMA_MCP_CA_FILE {} {problem}; point it (or --ca-file) at a PEM file holding the \
         CA certificate(s) of SnowLuma's TLS front end, or unset it",
        path.display()
    ))
}

fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let metadata = std::fs::metadata(path)
        .map_err(|e| ca_error(path, &format!("cannot be read ({})", e.kind())))?;
    if !metadata.is_file() {
        return Err(ca_error(path, "is not a regular file"));
    }
    if metadata.len() > MAX_CA_FILE_BYTES {
        return Err(ca_error(
            path,
            &format!("is larger than {} MiB", MAX_CA_FILE_BYTES >> 20),
        ));
    }
    let pem = std::fs::read(path)
        .map_err(|e| ca_error(path, &format!("cannot be read ({})", e.kind())))?;
    let certificates = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ca_error(path, &format!("is not valid PEM ({e})")))?;
    if certificates.is_empty() {
        return Err(ca_error(
            path,
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(contents: Option<&[u8]>) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        if let Some(contents) = contents {
            std::fs::write(&path, contents).unwrap();
        }
        Tls::load(Some(&path), false).unwrap_err().to_string()
    }

    #[test]
    fn a_missing_empty_or_certificate_less_ca_file_names_the_setting() {
        for (contents, expected) in [
            (None, "cannot be read"),
            (Some(&b""[..]), "holds no PEM certificate"),
            (
                Some(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
                "holds no PEM certificate",
            ),
        ] {
            let message = problem(contents);
            assert!(message.contains("SNOWLUMA_MCP_CA_FILE"), "{message}");
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn a_directory_is_not_a_ca_file() {
        let dir = tempfile::tempdir().unwrap();
        let message = Tls::load(Some(dir.path()), false).unwrap_err().to_string();
        assert!(message.contains("not a regular file"), "{message}");
    }

    #[test]
    fn without_a_ca_file_the_system_roots_load() {
        let tls = Tls::load(None, true).unwrap();
        assert!(!tls.has_ca_file());
    }
}
