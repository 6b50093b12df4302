//! `proxy_ssl_verify on`: webpki verifies the upstream's chain and name, and two steps
//! follow where it refuses what nginx (OpenSSL's chain check, then `X509_check_host` in
//! `ngx_ssl_check_host`) accepts:
//! - a certificate without a DNS subjectAltName whose chain verified is matched against
//!   its subject's commonName(s) (webpki only reads subjectAltName);
//! - a self-issued certificate that is itself one of `proxy_ssl_trusted_certificate`'s
//!   (byte for byte) and within its validity is trusted as OpenSSL trusts it, X.509 v1
//!   ones and CA ones included (webpki takes neither as an end entity); its name is then
//!   checked the same way (DNS subjectAltNames, else commonNames).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

#[derive(Debug)]
pub(crate) struct NginxVerifier {
    pub inner: Arc<WebPkiServerVerifier>,
    /// The trusted certificates as written.
    pub anchors: Vec<CertificateDer<'static>>,
    pub algs: WebPkiSupportedAlgorithms,
    /// `proxy_ssl_crl`, checked over the path (within `proxy_ssl_verify_depth`) once the
    /// rest verified (crl.rs).
    pub crls: Option<Arc<[crate::crl::Crl]>>,
    pub depth: u32,
}

impl ServerCertVerifier for NginxVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let verified =
            self.verify_without_lists(end_entity, intermediates, server_name, ocsp, now)?;
        match &self.crls {
            None => Ok(verified),
            Some(lists) => self
                .revocation(end_entity, intermediates, lists, now)
                .map(|()| verified)
                .map_err(fault),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::spki::verify_signature(message, cert, dss, &self.algs, false)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        crate::spki::verify_signature(message, cert, dss, &self.algs, true)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

impl NginxVerifier {
    /// webpki, then the two steps of the module comment.
    fn verify_without_lists(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let e =
            match self
                .inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
        let name_only = matches!(
            e,
            Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            )
        );
        let anchor = self
            .anchors
            .iter()
            .any(|a| a.as_ref() == end_entity.as_ref())
            && crate::client_cert::self_issued(end_entity)
            && crate::client_cert::time_problem(end_entity).is_none();
        // A CA certificate (or an X.509 v1 one) as the server's: the path as OpenSSL
        // builds it, its times, then the name.
        let anchor = anchor
            || (crate::client_verify::webpki_refuses_the_leaf(&e) && {
                let path = self.path(end_entity, intermediates).map_err(fault)?;
                if let Some(why) = path
                    .iter()
                    .find_map(|c| crate::client_cert::time_problem(c))
                {
                    return Err(Error::InvalidCertificate(match why {
                        "certificate has expired" => CertificateError::Expired,
                        _ => CertificateError::NotValidYet,
                    }));
                }
                true
            });
        match (name_only || anchor, host_matches(end_entity, server_name)) {
            (true, Some(true)) => Ok(ServerCertVerified::assertion()),
            (true, _) if anchor => {
                Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            }
            _ => Err(e),
        }
    }

    /// The path OpenSSL builds (through the trusted certificates and the ones sent, at
    /// most `proxy_ssl_verify_depth` CAs) checked against the lists.
    fn revocation(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        lists: &[crate::crl::Crl],
        now: UnixTime,
    ) -> Result<(), crate::crl::VerifyFault> {
        let path = self.path(end_entity, intermediates)?;
        let path: Vec<&[u8]> = path.iter().map(|c| c.as_ref()).collect();
        crate::crl::check(&path, lists, now.as_secs() as i64, &self.algs)
    }

    /// The path OpenSSL builds from the server's certificate to a trusted root.
    fn path(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
    ) -> Result<Vec<CertificateDer<'static>>, crate::crl::VerifyFault> {
        let leaf = end_entity.clone().into_owned();
        let sent: Vec<CertificateDer<'static>> = intermediates
            .iter()
            .map(|c| c.clone().into_owned())
            .collect();
        let path = crate::chain::build(&leaf, &sent, &self.anchors, self.depth, &self.algs)
            .map_err(crate::crl::path_fault)?;
        Ok(path.into_iter().cloned().collect())
    }
}

/// One of ringfront's own verification failures, carried to the proxy's error log.
fn fault(f: crate::crl::VerifyFault) -> Error {
    Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(f))))
}

/// `X509_check_host(cert, name, 0)`: the DNS subjectAltNames when there is one, else every
/// commonName of the subject; `None` for a certificate that does not parse.
fn host_matches(der: &[u8], name: &ServerName<'_>) -> Option<bool> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let host = match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => return Some(false),
    };
    let dns: Vec<&str> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    GeneralName::DNSName(n) => Some(*n),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    if !dns.is_empty() {
        return Some(dns.iter().any(|p| name_matches(p, &host)));
    }
    let found = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .any(|p| name_matches(p, &host));
    Some(found)
}

/// A certificate's name against the host, without case; `*` may stand for part or all of
/// the leftmost label when two labels follow it (OpenSSL's default wildcard rules).
fn name_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (pattern.to_ascii_lowercase(), host.to_ascii_lowercase());
    let host = host.strip_suffix('.').unwrap_or(&host);
    let Some((first, rest)) = pattern.split_once('.') else {
        return pattern == host;
    };
    if !first.contains('*') {
        return pattern == host;
    }
    let Some((h_first, h_rest)) = host.split_once('.') else {
        return false;
    };
    let Some((pre, post)) = first.split_once('*') else {
        return false;
    };
    rest.contains('.')
        && !post.contains('*')
        && h_rest == rest
        && h_first.len() >= pre.len() + post.len()
        && h_first.starts_with(pre)
        && h_first.ends_with(post)
}

#[cfg(test)]
mod tests {
    use super::name_matches;

    #[test]
    fn names_match_as_x509_check_host() {
        assert!(name_matches("2.example.com", "2.Example.com"));
        assert!(name_matches("*.example.com", "a.example.com"));
        assert!(name_matches("f*.example.com", "foo.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("*.example.com", "a.b.example.com"));
        assert!(!name_matches("*.com", "example.com"));
        assert!(!name_matches("2.example.com", "bad.example.com"));
    }
}
