//! TLS to a PostgreSQL server: the rustls client configuration of each `sslmode` (what the
//! server's certificate must satisfy), its trusted CAs (`sslrootcert` or the webpki roots), and
//! the advice added to a handshake that failed.

use crate::config::store::{PgUrl, SslMode};
use crate::error::BadInput;
use crate::util::printable;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The configuration a connection in `mode` (never `Disable`) uses, trusting the CAs of
/// `sslrootcert` or else the webpki roots. `Prefer` and `Require` check no certificate unless a
/// CA file is named, then check the chain as `VerifyCa` does (libpq's rule).
pub(super) fn client_config(mode: SslMode, pg: &PgUrl) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let rootcert = pg.sslrootcert.as_deref();
    let roots = pg.trusted_roots()?.unwrap_or_else(|| RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    });
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| BadInput(format!("TLS: {e}")))?;
    let config = match mode {
        SslMode::VerifyFull => builder.with_root_certificates(roots),
        _ => {
            let chain = (mode == SslMode::VerifyCa || rootcert.is_some()).then(|| Arc::new(roots));
            (builder.dangerous())
                .with_custom_certificate_verifier(Arc::new(NoHostCheck { provider, chain }))
        }
    };
    Ok(config.with_no_client_auth())
}

type Result<T, E = BadInput> = std::result::Result<T, E>;

/// What to add to a failed connection's one line, so the user knows which check failed and
/// what to change.
pub(super) fn advice(pg: &PgUrl, e: &postgres::Error) -> Option<String> {
    use rustls::CertificateError as Cert;
    let mode = pg.sslmode();
    let rootcert = pg.sslrootcert.as_deref();
    // A mode the user did not write is named as the default, so the check is not a surprise.
    let mode_name = match (pg.sslmode, mode) {
        (Some(_), _) => mode.as_str().to_string(),
        (None, SslMode::Disable) => "disable (the default on this machine)".into(),
        (None, _) => format!("{} (the default off this machine)", mode.as_str()),
    };
    if let Some(db) = e.as_db_error() {
        // The server's words when pg_hba.conf has only `hostssl` lines for this connection.
        return (mode == SslMode::Disable && db.message().contains("no encryption")).then(|| {
            format!(
                "sslmode={mode_name}: the server may take TLS connections only: set \
                 sslmode=verify-full (or require)"
            )
        });
    }
    let source = std::error::Error::source(e)?;
    if source.to_string() == "server does not support TLS" {
        return Some(format!(
            "sslmode={mode_name} needs TLS: turn ssl on at the server, or use a tunnel"
        ));
    }
    let tls = source
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())?;
    let rustls::Error::InvalidCertificate(cert) = tls else {
        return None;
    };
    Some(match cert {
        Cert::NotValidForName | Cert::NotValidForNameContext { .. } => format!(
            "sslmode={mode_name} checks that the certificate names the host connected to: \
             connect by a name it lists"
        ),
        Cert::UnknownIssuer | Cert::BadSignature => match rootcert {
            Some(p) => format!(
                "sslmode={mode_name} checks that the certificate is signed by the CA of \
                     sslrootcert {}",
                printable(&p.display().to_string())
            ),
            None => format!(
                "sslmode={mode_name} checks that a public CA signed the certificate: name \
                     the server's CA with sslrootcert=PATH"
            ),
        },
        _ => return None,
    })
}

/// `require` and `prefer` without a CA (`chain` None): any certificate; `verify-ca`, and the
/// others with a CA (`chain` Some): one that chains to a trusted CA and is valid now. The host it
/// names is never checked; the handshake's signatures always are, so the connection is encrypted
/// to whoever holds the certificate's key.
#[derive(Debug)]
struct NoHostCheck {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<RootCertStore>>,
}

impl ServerCertVerifier for NoHostCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.chain {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
