//! TLS for the HTTP listener (rustls): a certificate chain and its private key from PEM
//! files, read again when either file changes, so a renewed certificate (cert-manager
//! rewriting a mounted Secret) is served without a restart.
//!
//! The files are looked at, at most once per [`CHECK_EVERY`], when a client connects;
//! a change that does not load (half-written, a key that does not match) keeps the
//! certificate in use and is logged until it loads.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use parking_lot::Mutex;
use rustls::{
    crypto::CryptoProvider,
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
    ServerConfig,
};
use rustls_pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};

/// How often the files are checked for a change, at most.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What identifies one version of a file: its modification time and length.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

struct Loaded {
    key: Arc<CertifiedKey>,
    stamps: (Stamp, Stamp),
    checked: Instant,
}

/// Serves the certificate of two PEM files, reloading them when they change.
pub struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    loaded: Mutex<Loaded>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .finish()
    }
}

/// Reads and checks the chain and key (the key must match the first certificate).
fn load(
    cert_file: &Path,
    key_file: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| {
            format!(
                "cannot read the certificate file {}: {e}",
                cert_file.display()
            )
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{} is no PEM certificate chain: {e}", cert_file.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate", cert_file.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        format!(
            "cannot read a PEM private key from {}: {e}",
            key_file.display()
        )
    })?;
    CertifiedKey::from_der(chain, key, provider).map_err(|e| {
        format!(
            "the key {} does not fit the certificate {}: {e}",
            key_file.display(),
            cert_file.display()
        )
    })
}

impl ReloadingCert {
    /// Loads the files now; an error names the file and what is wrong with it.
    pub fn new(cert_file: &Path, key_file: &Path) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let stamps = (stamp(cert_file), stamp(key_file));
        let key = load(cert_file, key_file, &provider)?;
        Ok(Self {
            cert_file: cert_file.to_owned(),
            key_file: key_file.to_owned(),
            provider,
            loaded: Mutex::new(Loaded {
                key: Arc::new(key),
                stamps,
                checked: Instant::now(),
            }),
        })
    }

    /// The certificate to serve now, read again first when a file changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self.loaded.lock();
        if loaded.checked.elapsed() >= CHECK_EVERY {
            loaded.checked = Instant::now();
            let stamps = (stamp(&self.cert_file), stamp(&self.key_file));
            if stamps != loaded.stamps {
                match load(&self.cert_file, &self.key_file, &self.provider) {
                    Ok(key) => {
                        tracing::info!(cert_file = %self.cert_file.display(), "TLS certificate reloaded");
                        loaded.key = Arc::new(key);
                        loaded.stamps = stamps;
                    }
                    // Tried again at the next check; the old certificate serves meanwhile.
                    Err(error) => {
                        tracing::warn!(%error, "TLS certificate not reloaded; the previous one is served")
                    }
                }
            }
        }
        loaded.key.clone()
    }

    /// A rustls server configuration (TLS 1.2 and 1.3, no client certificates) that
    /// serves this certificate.
    pub fn server_config(self: Arc<Self>) -> Result<ServerConfig, String> {
        let provider = self.provider.clone();
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_cert_resolver(self);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}
