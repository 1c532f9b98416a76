//! A throw-away certificate authority for TLS tests: a CA and a `localhost`/`127.0.0.1` server
//! certificate signed by it, generated with rcgen when the test runs (nothing is committed).
//! The CA's PEM file is what a user would put in `SNOWLUMA_MCP_CA_FILE`.
#![allow(dead_code)] // each includer uses a different part of the API

use std::path::PathBuf;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

pub struct TestCa {
    /// For the fakes' TLS listeners.
    pub server_config: Arc<rustls::ServerConfig>,
    /// The CA certificate as PEM, written to `ca_file`.
    pub ca_pem: String,
    pub ca_file: PathBuf,
    dir: tempfile::TempDir,
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "snowluma-mcp test CA");
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("server params");
        let leaf_key = KeyPair::generate().expect("server key");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("server certificate");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone(), ca_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )
            .expect("server TLS config");

        let dir = tempfile::tempdir().expect("temp dir");
        let ca_file = dir.path().join("snowluma-ca.pem");
        let ca_pem = ca_cert.pem();
        std::fs::write(&ca_file, &ca_pem).expect("write CA file");
        TestCa {
            server_config: Arc::new(server_config),
            ca_pem,
            ca_file,
            dir,
        }
    }

    pub fn ca_file_str(&self) -> &str {
        self.ca_file.to_str().expect("temp paths are UTF-8")
    }
}
