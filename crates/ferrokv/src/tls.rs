//! TLS: builds the rustls server configuration from the `tls-*` directives
//! (Redis 7.0's src/tls.c `tlsConfigure` and redis.conf's TLS section) and
//! keeps the current one for the TLS listener, which wraps each accepted
//! socket with tokio-rustls and hands it to the same connection loop as
//! plain TCP (net/connection.rs).
//!
//! What each directive does here:
//! - `tls-cert-file`: PEM certificate chain (leaf first; an X.509 version 1
//!   leaf is accepted, as OpenSSL does); `tls-key-file`: PEM
//!   private key, PKCS#8, PKCS#1 (RSA) or SEC1 (EC). Encrypted keys
//!   (`tls-key-file-pass`) are refused: rustls has no decryption of PEM keys.
//! - `tls-ca-cert-file` / `tls-ca-cert-dir`: trusted CAs for client
//!   certificates (every PEM certificate in the file / in every file of the
//!   directory).
//! - `tls-auth-clients yes|no|optional`: `yes` requires a client certificate
//!   signed by a trusted CA, `optional` verifies one when sent, `no` does not
//!   ask for one. Read at each accept, like Redis (no reload needed).
//! - `tls-protocols`: any of `TLSv1.2 TLSv1.3` (empty = both). `TLSv1` and
//!   `TLSv1.1` are valid for Redis but not implemented by rustls: they make
//!   the configuration fail with a message saying so.
//! - `tls-ciphersuites` (TLS 1.3) and `tls-ciphers` (TLS 1.2): OpenSSL names
//!   of the suites rustls implements (below) select and order those suites;
//!   OpenSSL keywords and `!`/`-`/`+` items are ignored. A list that names
//!   none of them keeps every suite for `tls-ciphers`, and is an error for
//!   `tls-ciphersuites` (as OpenSSL fails on a list with no known suite).
//! - `tls-prefer-server-ciphers`: the server's suite order wins.
//! - `tls-session-caching`, `tls-session-cache-size` (0 = no limit),
//!   `tls-session-cache-timeout` (seconds): a server-side session cache.
//! - `tls-dh-params-file`: must be readable (as Redis checks), otherwise
//!   unused: rustls only offers ECDHE key exchange.
//! - `tls-client-cert-file`/`tls-client-key-file`: the certificate ferrokv
//!   presents on its outgoing TLS connections (a replica's link to its
//!   master with `tls-replication yes`, cluster bus links and MIGRATE with
//!   `tls-cluster yes`); without them the server pair is presented, as
//!   Redis's tls.c does. Outgoing connections verify the peer's chain
//!   against the CAs above but not its host name (OpenSSL's
//!   `SSL_VERIFY_PEER` without a host check, as Redis).

use crate::config::Config;
use parking_lot::{Mutex, RwLock};
use rustls::crypto::ring as provider;
use rustls::server::{StoresServerSessions, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `tls-auth-clients`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AuthClients {
    /// No client certificate is requested.
    No = 0,
    /// A client certificate signed by a trusted CA is required.
    Yes = 1,
    /// A client certificate is verified when the client sends one.
    Optional = 2,
}

impl AuthClients {
    /// Parses the normalised directive value (`yes` for anything unknown,
    /// Redis's default).
    pub fn parse(s: &str) -> AuthClients {
        match s {
            "no" => AuthClients::No,
            "optional" => AuthClients::Optional,
            _ => AuthClients::Yes,
        }
    }
}

/// A built TLS context: one rustls configuration per `tls-auth-clients`
/// mode, sharing certificate, key, protocols, suites and session cache, so
/// changing `tls-auth-clients` takes effect at the next accept without a
/// rebuild. The `yes`/`optional` entries are None when no CA is configured:
/// such handshakes are refused (Redis fails them for lack of a trust store).
#[derive(Debug)]
pub struct TlsContext {
    configs: [Option<Arc<ServerConfig>>; 3],
    /// The configuration of outgoing connections (None without a CA: they
    /// could verify no peer).
    client: Option<Arc<rustls::ClientConfig>>,
}

impl TlsContext {
    /// The rustls configuration for `mode`, if it can be served.
    pub fn config(&self, mode: AuthClients) -> Option<Arc<ServerConfig>> {
        self.configs[mode as usize].clone()
    }
}

/// The server's TLS state: the installed context (None until TLS is
/// configured). `tls-auth-clients` is read from the configuration at each
/// accept, as Redis does, so it needs no rebuild.
#[derive(Debug, Default)]
pub struct TlsState {
    ctx: RwLock<Option<Arc<TlsContext>>>,
}

impl TlsState {
    /// True once a context has been installed.
    pub fn is_configured(&self) -> bool {
        self.ctx.read().is_some()
    }

    /// Replaces the context (after a successful [`build`]).
    pub fn install(&self, ctx: Arc<TlsContext>) {
        *self.ctx.write() = Some(ctx);
    }

    /// A connector for an outgoing TLS connection (replication, cluster
    /// bus, MIGRATE), or the reason none can be made (TLS not configured,
    /// no CA).
    pub fn connector(&self) -> Result<tokio_rustls::TlsConnector, &'static str> {
        let ctx = self.ctx.read().clone().ok_or("TLS is not configured")?;
        ctx.client
            .clone()
            .map(tokio_rustls::TlsConnector::from)
            .ok_or("no CA certificate configured to verify the peer")
    }

    /// The rustls configuration of outgoing connections, for blocking
    /// sockets (the replica's link); errors as [`TlsState::connector`].
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, &'static str> {
        let ctx = self.ctx.read().clone().ok_or("TLS is not configured")?;
        ctx.client
            .clone()
            .ok_or("no CA certificate configured to verify the peer")
    }

    /// An acceptor for a new connection under client-authentication `mode`,
    /// or the reason none can be made (TLS not configured; client
    /// authentication on but no CA).
    pub fn acceptor(&self, mode: AuthClients) -> Result<tokio_rustls::TlsAcceptor, &'static str> {
        let ctx = self.ctx.read().clone().ok_or("TLS is not configured")?;
        ctx.config(mode)
            .map(tokio_rustls::TlsAcceptor::from)
            .ok_or("no CA certificate configured to verify client certificates")
    }
}

/// True when TLS must be configured under `config` (Redis: `tls-port`,
/// `tls-replication` or `tls-cluster` set).
pub fn enabled(config: &Config) -> bool {
    config.get_i64("tls-port") != 0
        || config.get_bool("tls-replication")
        || config.get_bool("tls-cluster")
}

/// Directives whose change rebuilds the TLS context (Redis 7.0's configs
/// with `applyTlsCfg`). `tls-auth-clients` is read per accept instead.
pub const RELOAD_DIRECTIVES: &[&str] = &[
    "tls-ca-cert-dir",
    "tls-ca-cert-file",
    "tls-cert-file",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-dh-params-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-prefer-server-ciphers",
    "tls-protocols",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-session-caching",
];

/// Builds the TLS context from the `tls-*` directives of `config`.
/// Errors: the message Redis logs for the same failure (missing cert/key
/// directive, unreadable or invalid file, CA missing while client
/// authentication is on, bad tls-protocols, unusable cipher lists).
pub fn build(config: &Config) -> Result<Arc<TlsContext>, String> {
    let cert_file = config.get("tls-cert-file");
    let key_file = config.get("tls-key-file");
    if cert_file.is_empty() {
        return Err("No tls-cert-file configured!".into());
    }
    if key_file.is_empty() {
        return Err("No tls-key-file configured!".into());
    }
    let ca_file = config.get("tls-ca-cert-file");
    let ca_dir = config.get("tls-ca-cert-dir");
    let auth = AuthClients::parse(config.get("tls-auth-clients"));
    if (auth != AuthClients::No
        || config.get_bool("tls-cluster")
        || config.get_bool("tls-replication"))
        && ca_file.is_empty()
        && ca_dir.is_empty()
    {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let versions = parse_protocols(config.get("tls-protocols"))?;
    let suites = select_suites(config.get("tls-ciphers"), config.get("tls-ciphersuites"))?;
    let mut provider = provider::default_provider();
    provider.cipher_suites = suites;
    let provider = Arc::new(provider);

    let (certs, key) = load_pair(cert_file, key_file, config.get("tls-key-file-pass"))?;
    let client_cert = config.get("tls-client-cert-file");
    let client_key = config.get("tls-client-key-file");
    let client_pair = if !client_cert.is_empty() && !client_key.is_empty() {
        let (c, k) = load_pair(
            client_cert,
            client_key,
            config.get("tls-client-key-file-pass"),
        )?;
        Some(certified_key(c, k, &provider, client_key)?)
    } else {
        None
    };
    let dh = config.get("tls-dh-params-file");
    if !dh.is_empty() {
        std::fs::read(dh).map_err(|e| format!("Failed to load {dh}: {e}"))?;
    }
    let certified = certified_key(certs, key, &provider, key_file)?;
    let roots = if ca_file.is_empty() && ca_dir.is_empty() {
        None
    } else {
        Some(Arc::new(load_roots(ca_file, ca_dir)?))
    };

    let cache: Arc<dyn StoresServerSessions> = if config.get_bool("tls-session-caching") {
        Arc::new(SessionCache::new(
            config.get_i64("tls-session-cache-size").max(0) as usize,
            Duration::from_secs(config.get_i64("tls-session-cache-timeout").max(0) as u64),
        ))
    } else {
        Arc::new(rustls::server::NoServerSessionStorage {})
    };
    let caching = config.get_bool("tls-session-caching");
    let prefer_server = config.get_bool("tls-prefer-server-ciphers");

    let make = |mode: AuthClients| -> Result<Option<Arc<ServerConfig>>, String> {
        let verifier = match (mode, &roots) {
            (AuthClients::No, _) => WebPkiClientVerifier::no_client_auth(),
            (_, None) => return Ok(None),
            (m, Some(r)) => {
                let b = WebPkiClientVerifier::builder_with_provider(r.clone(), provider.clone());
                let b = if m == AuthClients::Optional {
                    b.allow_unauthenticated()
                } else {
                    b
                };
                let inner = b.build().map_err(|e| {
                    format!("Failed to configure CA certificate(s) file/directory: {e}")
                })?;
                Arc::new(ExplainV1 { inner })
            }
        };
        let mut sc = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| format!("Failed to configure ciphers: {e}"))?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(
                certified.clone(),
            )));
        sc.ignore_client_order = prefer_server;
        sc.session_storage = cache.clone();
        sc.send_tls13_tickets = if caching { 2 } else { 0 };
        Ok(Some(Arc::new(sc)))
    };
    let client = match &roots {
        None => None,
        Some(r) => {
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                r.clone(),
                provider.clone(),
            )
            .build()
            .map_err(|e| format!("Failed to configure CA certificate(s) file/directory: {e}"))?;
            let mut cc = rustls::ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&versions)
                .map_err(|e| format!("Failed to configure ciphers: {e}"))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName { inner }))
                .with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(
                    client_pair.unwrap_or_else(|| certified.clone()),
                )));
            cc.resumption = rustls::client::Resumption::disabled();
            Some(Arc::new(cc))
        }
    };
    Ok(Arc::new(TlsContext {
        configs: [
            make(AuthClients::No)?,
            make(AuthClients::Yes)?,
            make(AuthClients::Optional)?,
        ],
        client,
    }))
}

/// `tls-protocols`: space-separated, case-insensitive `TLSv1.2`/`TLSv1.3`
/// (empty = both). Redis's words `TLSv1` and `TLSv1.1` are refused because
/// rustls does not implement them.
pub fn parse_protocols(s: &str) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let words: Vec<&str> = s.split(' ').filter(|w| !w.is_empty()).collect();
    if words.is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let (mut v12, mut v13) = (false, false);
    for w in words {
        match w.to_ascii_lowercase().as_str() {
            "tlsv1.2" => v12 = true,
            "tlsv1.3" => v13 = true,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "{w} is specified in tls-protocols but not supported by rustls (use TLSv1.2 and/or TLSv1.3)."
                ))
            }
            _ => {
                return Err("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.".into())
            }
        }
    }
    let mut v = Vec::new();
    if v13 {
        v.push(&rustls::version::TLS13);
    }
    if v12 {
        v.push(&rustls::version::TLS12);
    }
    Ok(v)
}

/// OpenSSL names of the suites rustls (ring) implements, TLS 1.3 first.
const SUITE_NAMES: &[(&str, SupportedCipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        provider::cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        provider::cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        provider::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The suites named in an OpenSSL list (`:`, `,` or space separated), in
/// the list's order, restricted to TLS 1.3 (`tls13`) or TLS 1.2 suites.
fn named_suites(list: &str, tls13: bool) -> Vec<SupportedCipherSuite> {
    let mut out: Vec<SupportedCipherSuite> = Vec::new();
    for item in list.split([':', ',', ' ']).filter(|w| !w.is_empty()) {
        if let Some((_, s)) = SUITE_NAMES
            .iter()
            .find(|(n, s)| n.eq_ignore_ascii_case(item) && s.tls13().is_some() == tls13)
        {
            if !out.iter().any(|o| o.suite() == s.suite()) {
                out.push(*s);
            }
        }
    }
    out
}

/// The cipher suites offered: those named in `tls-ciphersuites` (TLS 1.3)
/// and `tls-ciphers` (TLS 1.2), or all of the kind when its list is empty
/// (or, for `tls-ciphers`, names none rustls implements).
pub fn select_suites(
    ciphers: &str,
    ciphersuites: &str,
) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = |tls13: bool| -> Vec<SupportedCipherSuite> {
        provider::DEFAULT_CIPHER_SUITES
            .iter()
            .filter(|s| s.tls13().is_some() == tls13)
            .copied()
            .collect()
    };
    let mut v13 = if ciphersuites.trim().is_empty() {
        all(true)
    } else {
        named_suites(ciphersuites, true)
    };
    if v13.is_empty() {
        return Err(format!("Failed to configure ciphersuites: {ciphersuites}"));
    }
    let mut v12 = named_suites(ciphers, false);
    if v12.is_empty() {
        v12 = all(false);
    }
    v13.append(&mut v12);
    Ok(v13)
}

/// The certificate chain with its private key, checked to match (Redis:
/// `SSL_CTX_use_PrivateKey_file`, "Failed to load private key: <file>:
/// key values mismatch"). A leaf that is an X.509 version 1 certificate
/// (no extensions: what `openssl x509 -req` makes without `-extfile`),
/// which OpenSSL and so redis-server accept but webpki cannot parse, is
/// matched by its SubjectPublicKeyInfo read with `x509-parser`.
fn certified_key(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    provider: &rustls::crypto::CryptoProvider,
    key_file: &str,
) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
    let key_err = |e: String| format!("Failed to load private key: {key_file}: {e}");
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| key_err(e.to_string()))?;
    let ck = rustls::sign::CertifiedKey::new(certs, signing);
    match ck.keys_match() {
        Ok(()) => Ok(Arc::new(ck)),
        Err(rustls::Error::InconsistentKeys(_)) => Err(key_err("key values mismatch".into())),
        Err(e) => match (v1_spki(&ck.cert[0]), ck.key.public_key()) {
            (Some(spki), Some(k)) if spki == k.as_ref() => Ok(Arc::new(ck)),
            (Some(_), Some(_)) => Err(key_err("key values mismatch".into())),
            _ => Err(key_err(e.to_string())),
        },
    }
}

/// The DER SubjectPublicKeyInfo of `cert` when it is an X.509 version 1
/// certificate, None otherwise (or when it does not parse).
fn v1_spki(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    let (_, c) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    (c.version() == x509_parser::x509::X509Version::V1)
        .then(|| c.tbs_certificate.subject_pki.raw.to_vec())
}

/// The handshake-signature methods of a verifier wrapper, passed to its
/// `inner` webpki verifier unchanged (both wrappers change only how a
/// certificate is judged, not how signatures are checked).
macro_rules! delegate_signature_checks {
    () => {
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            self.inner.verify_tls12_signature(message, cert, dss)
        }

        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &rustls::DigitallySignedStruct,
        ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
            self.inner.verify_tls13_signature(message, cert, dss)
        }

        fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
            self.inner.supported_verify_schemes()
        }
    };
}

/// The client certificate verifier: webpki's, which refuses X.509
/// version 1 certificates (OpenSSL, and so redis-server, accepts them).
/// Such a refusal is logged with its reason and how to reissue the
/// certificate, since the handshake error alone ("UnsupportedCertVersion")
/// does not say what to do.
#[derive(Debug)]
struct ExplainV1 {
    inner: Arc<dyn rustls::server::danger::ClientCertVerifier>,
}

impl rustls::server::danger::ClientCertVerifier for ExplainV1 {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        let r = self
            .inner
            .verify_client_cert(end_entity, intermediates, now);
        if r.is_err() && v1_spki(end_entity).is_some() {
            tracing::warn!(
                "Client certificate refused: it is an X.509 version 1 certificate (no \
                 extensions, as `openssl x509 -req` makes without -extfile), which \
                 ferrokv's verifier (webpki) does not accept; reissue it as version 3, \
                 e.g. `openssl x509 -req ... -extfile <(printf \
                 'basicConstraints=CA:FALSE\\nkeyUsage=digitalSignature\\nextendedKeyUsage=clientAuth')`"
            );
        }
        r
    }

    delegate_signature_checks!();
}

/// The verifier of outgoing connections: the peer's chain must lead to a
/// trusted CA (webpki), but its host name is not checked: Redis's client
/// context sets `SSL_VERIFY_PEER` and no host, so nodes and masters are
/// reached by IP address with certificates that need not name it.
#[derive(Debug)]
struct AnyName {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
}

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::CertificateError as E;
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                E::NotValidForName | E::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    delegate_signature_checks!();
}

/// Loads a certificate chain and its private key. Errors name the file as
/// Redis's "Failed to load certificate/private key: <file>: <reason>".
fn load_pair(
    cert_file: &str,
    key_file: &str,
    pass: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let cert_err = |e: String| format!("Failed to load certificate: {cert_file}: {e}");
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .map_err(|e| cert_err(pem_error(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| cert_err(pem_error(e)))?;
    if certs.is_empty() {
        return Err(cert_err("no certificate found".into()));
    }
    let key_err = |e: String| format!("Failed to load private key: {key_file}: {e}");
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        let encrypted = std::fs::read(key_file)
            .map(|b| memchr::memmem::find(&b, b"ENCRYPTED").is_some())
            .unwrap_or(false);
        if encrypted {
            key_err(format!(
                "encrypted private keys are not supported{}",
                if pass.is_empty() {
                    ""
                } else {
                    " (tls-key-file-pass is ignored)"
                }
            ))
        } else {
            key_err(pem_error(e))
        }
    })?;
    Ok((certs, key))
}

fn pem_error(e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(io) => io.to_string(),
        rustls_pki_types::pem::Error::NoItemsFound => "no PEM item found".into(),
        other => format!("{other:?}"),
    }
}

/// The trust store for client certificates: every certificate of
/// `ca_file` and of each regular file in `ca_dir` (files without PEM
/// certificates in the directory are skipped, as OpenSSL's lookup ignores
/// them).
fn load_roots(ca_file: &str, ca_dir: &str) -> Result<RootCertStore, String> {
    let err = |e: String| format!("Failed to configure CA certificate(s) file/directory: {e}");
    let mut store = RootCertStore::empty();
    if !ca_file.is_empty() {
        let iter = CertificateDer::pem_file_iter(ca_file)
            .map_err(|e| err(format!("{ca_file}: {}", pem_error(e))))?;
        for c in iter {
            let c = c.map_err(|e| err(format!("{ca_file}: {}", pem_error(e))))?;
            store.add(c).map_err(|e| err(format!("{ca_file}: {e}")))?;
        }
        if store.is_empty() {
            return Err(err(format!("{ca_file}: no certificate found")));
        }
    }
    if !ca_dir.is_empty() {
        let rd = std::fs::read_dir(ca_dir).map_err(|e| err(format!("{ca_dir}: {e}")))?;
        for entry in rd.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            let Ok(iter) = CertificateDer::pem_file_iter(&path) else {
                continue;
            };
            for c in iter.flatten() {
                let _ = store.add(c);
            }
        }
    }
    Ok(store)
}

/// The server-side session cache (`tls-session-caching yes`): at most
/// `size` sessions (0 = no limit, as OpenSSL's cache size 0), the oldest
/// evicted first, each valid for `timeout` (`tls-session-cache-timeout`).
#[derive(Debug)]
pub struct SessionCache {
    inner: Mutex<SessionMap>,
    size: usize,
    timeout: Duration,
}

#[derive(Debug, Default)]
struct SessionMap {
    map: HashMap<Vec<u8>, (Instant, Vec<u8>)>,
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    /// An empty cache of at most `size` entries (0 = unlimited), each kept
    /// for `timeout`.
    pub fn new(size: usize, timeout: Duration) -> SessionCache {
        SessionCache {
            inner: Mutex::new(SessionMap::default()),
            size,
            timeout,
        }
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut m = self.inner.lock();
        let now = Instant::now();
        // Drop expired entries at the front, then the oldest while full.
        while let Some(k) = m.order.front() {
            let stale = match m.map.get(k) {
                Some((t, _)) => now.duration_since(*t) >= self.timeout,
                None => true,
            };
            let full = self.size != 0 && m.map.len() >= self.size;
            if !(stale || full) {
                break;
            }
            if let Some(k) = m.order.pop_front() {
                m.map.remove(&k);
            }
        }
        if m.map.insert(key.clone(), (now, value)).is_none() {
            m.order.push_back(key);
        }
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let m = self.inner.lock();
        match m.map.get(key) {
            Some((t, v)) if t.elapsed() < self.timeout => Some(v.clone()),
            _ => None,
        }
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut m = self.inner.lock();
        match m.map.remove(key) {
            Some((t, v)) if t.elapsed() < self.timeout => Some(v),
            _ => None,
        }
    }

    fn can_cache(&self) -> bool {
        !self.timeout.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols() {
        assert_eq!(parse_protocols("").unwrap().len(), 2);
        assert_eq!(parse_protocols("TLSv1.2").unwrap().len(), 1);
        assert_eq!(parse_protocols("tlsv1.2  TLSv1.3").unwrap().len(), 2);
        assert!(parse_protocols("TLSv1.1 TLSv1.2")
            .unwrap_err()
            .contains("not supported by rustls"));
        assert!(parse_protocols("SSLv3")
            .unwrap_err()
            .starts_with("Invalid tls-protocols"));
    }

    #[test]
    fn suites() {
        let all = select_suites("", "").unwrap();
        assert_eq!(all.len(), provider::DEFAULT_CIPHER_SUITES.len());
        let s = select_suites(
            "DEFAULT:!aNULL:ECDHE-RSA-AES128-GCM-SHA256",
            "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256",
        )
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0].suite(),
            provider::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256.suite()
        );
        assert_eq!(
            s[2].suite(),
            provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256.suite()
        );
        // Keywords only: every TLS 1.2 suite stays.
        assert_eq!(select_suites("HIGH:!aNULL", "").unwrap().len(), all.len());
        assert!(select_suites("", "TLS_BOGUS").is_err());
    }

    #[test]
    fn session_cache_limits() {
        let c = SessionCache::new(2, Duration::from_secs(60));
        c.put(b"a".to_vec(), b"1".to_vec());
        c.put(b"b".to_vec(), b"2".to_vec());
        c.put(b"c".to_vec(), b"3".to_vec());
        assert_eq!(c.get(b"a"), None);
        assert_eq!(c.get(b"c"), Some(b"3".to_vec()));
        assert_eq!(c.take(b"b"), Some(b"2".to_vec()));
        assert_eq!(c.get(b"b"), None);
        let z = SessionCache::new(0, Duration::ZERO);
        assert!(!z.can_cache());
        z.put(b"a".to_vec(), b"1".to_vec());
        assert_eq!(z.get(b"a"), None);
    }

    #[test]
    fn missing_files() {
        let mut c = Config::default();
        assert_eq!(build(&c).unwrap_err(), "No tls-cert-file configured!");
        c.set("tls-cert-file", "/nonexistent.crt").unwrap();
        assert_eq!(build(&c).unwrap_err(), "No tls-key-file configured!");
        c.set("tls-key-file", "/nonexistent.key").unwrap();
        assert!(build(&c)
            .unwrap_err()
            .starts_with("Either tls-ca-cert-file or tls-ca-cert-dir"));
        c.set("tls-auth-clients", "no").unwrap();
        assert!(build(&c)
            .unwrap_err()
            .starts_with("Failed to load certificate: /nonexistent.crt: "));
    }
}
