//! The client certificate as nginx's `$ssl_client_*` variables show it, in OpenSSL's
//! formats: PEM (`PEM_write_bio_X509`), the subject and issuer as `X509_NAME_print_ex` with
//! `XN_FLAG_RFC2253` writes them, the serial as `i2a_ASN1_INTEGER`, the SHA-1 fingerprint,
//! validity times as `ASN1_TIME_print` and the days left. The DER is parsed with
//! x509-parser (docs/decisions/0010-x509-parsing.md) only when a variable is read.

use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// `$ssl_client_raw_cert`: the certificate in PEM, lines of 64 characters.
pub fn pem(der: &[u8]) -> String {
    let b64 = base64(der);
    let mut out = String::with_capacity(b64.len() + b64.len() / 64 + 60);
    out.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// `$ssl_client_cert`: the PEM without its last newline, every line after the first
/// starting with a tab (nginx's form for a header value).
pub fn pem_tabbed(der: &[u8]) -> String {
    let pem = pem(der);
    pem.trim_end_matches('\n').replace('\n', "\n\t")
}

/// `$ssl_client_escaped_cert`: the PEM escaped as nginx's `NGX_ESCAPE_URI_COMPONENT`.
pub fn pem_escaped(der: &[u8]) -> String {
    let mut out = String::new();
    for b in pem(der).bytes() {
        if uri_component_escaped(b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

/// Bytes `ngx_escape_uri` escapes in a URI component (its `uri_component` table): all but
/// letters, digits and `-._~`.
fn uri_component_escaped(b: u8) -> bool {
    !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn parse(der: &[u8]) -> Option<X509Certificate<'_>> {
    X509Certificate::from_der(der).ok().map(|(_, c)| c)
}

/// Whether a certificate names itself as its issuer (OpenSSL's "self-signed certificate"
/// when nothing trusts it).
pub fn self_issued(der: &[u8]) -> bool {
    parse(der).is_some_and(|c| c.subject().as_raw() == c.issuer().as_raw())
}

/// OpenSSL's words when the validity period does not hold now (`None`: it holds).
pub fn time_problem(der: &[u8]) -> Option<&'static str> {
    let c = parse(der)?;
    let now = x509_parser::time::ASN1Time::now();
    if now < c.validity().not_before {
        Some("certificate is not yet valid")
    } else if now > c.validity().not_after {
        Some("certificate has expired")
    } else {
        None
    }
}

/// `$ssl_client_s_dn`.
pub fn subject_dn(der: &[u8]) -> String {
    parse(der).map_or_else(String::new, |c| rfc2253(c.subject()))
}

/// `$ssl_client_i_dn`.
pub fn issuer_dn(der: &[u8]) -> String {
    parse(der).map_or_else(String::new, |c| rfc2253(c.issuer()))
}

/// `$ssl_client_s_dn_legacy`: `X509_NAME_oneline`'s form.
pub fn subject_dn_legacy(der: &[u8]) -> String {
    parse(der).map_or_else(String::new, |c| oneline(c.subject()))
}

/// `$ssl_client_i_dn_legacy`.
pub fn issuer_dn_legacy(der: &[u8]) -> String {
    parse(der).map_or_else(String::new, |c| oneline(c.issuer()))
}

/// `X509_NAME_oneline`: `/SN=value` per RDN in order (`+SN=value` for more in one), the
/// value's bytes as they are
/// but for `\xXX` outside printable ASCII and `\` before `/` and `+`.
pub fn oneline(name: &X509Name<'_>) -> String {
    let mut out = String::new();
    let attrs = name
        .iter()
        .flat_map(|rdn| rdn.iter().enumerate().map(|(i, a)| (i > 0, a)));
    for (same_set, a) in attrs {
        let oid = a.attr_type().to_id_string();
        out.push(if same_set { '+' } else { '/' });
        out.push_str(short_name(&oid).unwrap_or(&oid));
        out.push('=');
        for &b in a.attr_value().data {
            match b {
                b'/' | b'+' => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                b' '..=b'~' => out.push(char::from(b)),
                _ => out.push_str(&format!("\\x{b:02X}")),
            }
        }
    }
    out
}

/// `$ssl_client_serial`: the serial's bytes in upper-case hex, without the sign byte
/// (`00` for zero).
pub fn serial(der: &[u8]) -> String {
    let Some(c) = parse(der) else {
        return String::new();
    };
    let raw = c.raw_serial();
    let skip = raw
        .iter()
        .take_while(|&&b| b == 0)
        .count()
        .min(raw.len().saturating_sub(1));
    let bytes = if raw.is_empty() {
        &[0u8][..]
    } else {
        &raw[skip..]
    };
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// `$ssl_client_fingerprint`: SHA-1 of the DER, lower-case hex.
pub fn fingerprint(der: &[u8]) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, der);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// `$ssl_client_v_start` and `$ssl_client_v_end`: `Dec  1 22:56:12 2026 GMT`.
pub fn validity(der: &[u8]) -> Option<(String, String)> {
    let c = parse(der)?;
    let v = c.validity();
    Some((
        asn1_time(v.not_before.timestamp()),
        asn1_time(v.not_after.timestamp()),
    ))
}

/// `$ssl_client_v_remain`: whole days until the end of validity, `0` within a day.
pub fn days_left(der: &[u8], now_unix: i64) -> Option<u64> {
    let end = parse(der)?.validity().not_after.timestamp();
    if end < now_unix + 86_400 {
        return Some(0);
    }
    u64::try_from((end - now_unix) / 86_400).ok()
}

/// `ASN1_TIME_print`'s form of a UTC time.
fn asn1_time(unix: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let (y, m, d) = civil(days);
    format!(
        "{} {d:2} {:02}:{:02}:{:02} {y} GMT",
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// OpenSSL's short names of the attributes names use (`OBJ_nid2sn`).
fn short_name(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.4" => "SN",
        "2.5.4.5" => "serialNumber",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.9" => "street",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.12" => "title",
        "2.5.4.13" => "description",
        "2.5.4.15" => "businessCategory",
        "2.5.4.17" => "postalCode",
        "2.5.4.41" => "name",
        "2.5.4.42" => "GN",
        "2.5.4.43" => "initials",
        "2.5.4.44" => "generationQualifier",
        "2.5.4.46" => "dnQualifier",
        "2.5.4.65" => "pseudonym",
        "2.5.4.72" => "role",
        "2.5.4.97" => "organizationIdentifier",
        "1.2.840.113549.1.9.1" => "emailAddress",
        "0.9.2342.19200300.100.1.1" => "UID",
        "0.9.2342.19200300.100.1.25" => "DC",
        "1.3.6.1.4.1.311.60.2.1.1" => "jurisdictionL",
        "1.3.6.1.4.1.311.60.2.1.2" => "jurisdictionST",
        "1.3.6.1.4.1.311.60.2.1.3" => "jurisdictionC",
        _ => return None,
    })
}

/// `X509_NAME_print_ex(..., XN_FLAG_RFC2253)`: the attributes last first, `,` between
/// RDNs and `+` inside one, `SN=value` with RFC 2253's escapes, control and non-ASCII
/// bytes (of the UTF-8 form) as `\XX`; an attribute OpenSSL does not know as
/// `OID=#DER-in-hex`.
pub fn rfc2253(name: &X509Name<'_>) -> String {
    let attrs: Vec<(usize, &AttributeTypeAndValue<'_>)> = name
        .iter()
        .enumerate()
        .flat_map(|(i, rdn)| rdn.iter().map(move |a| (i, a)))
        .collect();
    let mut out = String::new();
    let mut prev = None;
    for (set, a) in attrs.into_iter().rev() {
        if let Some(p) = prev {
            out.push(if p == set { '+' } else { ',' });
        }
        prev = Some(set);
        let oid = a.attr_type().to_id_string();
        match (short_name(&oid), text(a)) {
            (Some(sn), Some(t)) => {
                out.push_str(sn);
                out.push('=');
                escape_2253(&mut out, &t);
            }
            (sn, _) => {
                out.push_str(sn.unwrap_or(&oid));
                out.push_str("=#");
                dump_der(&mut out, a);
            }
        }
    }
    out
}

/// An attribute's string value as UTF-8, as OpenSSL converts it (one-byte string types
/// read as Latin-1, BMPString as UCS-2, UniversalString as UCS-4); `None` for others.
fn text(a: &AttributeTypeAndValue<'_>) -> Option<String> {
    use x509_parser::der_parser::asn1_rs::Tag;
    let v = a.attr_value();
    let data = v.data;
    match v.tag() {
        Tag::Utf8String => std::str::from_utf8(data).ok().map(str::to_string),
        Tag::PrintableString
        | Tag::Ia5String
        | Tag::NumericString
        | Tag::T61String
        | Tag::VisibleString
        | Tag::GeneralString => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            let units = data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]));
            Some(
                char::decode_utf16(units)
                    .map(|c| c.unwrap_or('\u{fffd}'))
                    .collect(),
            )
        }
        Tag::UniversalString => Some(
            data.chunks_exact(4)
                .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                .map(|u| char::from_u32(u).unwrap_or('\u{fffd}'))
                .collect(),
        ),
        _ => None,
    }
}

/// RFC 2253's escapes as OpenSSL writes them: `\` before `,+"\<>;`, before a leading `#`
/// or space and a trailing space; `\XX` for control bytes and each byte above 0x7f.
fn escape_2253(out: &mut String, value: &str) {
    let bytes = value.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let first = i == 0;
        let last = i + 1 == bytes.len();
        let special = matches!(b, b',' | b'+' | b'"' | b'\\' | b'<' | b'>' | b';')
            || (first && matches!(b, b'#' | b' '))
            || (last && b == b' ');
        if special {
            out.push('\\');
            out.push(char::from(b));
        } else if !(0x20..0x7f).contains(&b) {
            out.push_str(&format!("\\{b:02X}"));
        } else {
            out.push(char::from(b));
        }
    }
}

/// The value's whole DER (tag, length, content) in upper-case hex.
fn dump_der(out: &mut String, a: &AttributeTypeAndValue<'_>) {
    use x509_parser::der_parser::asn1_rs::ToDer;
    let der = a.attr_value().to_der_vec().unwrap_or_default();
    for b in der {
        out.push_str(&format!("{b:02X}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_pem_writes_it() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        let p = pem(&[0u8; 60]);
        let lines: Vec<&str> = p.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines[2], "A".repeat(16));
    }

    #[test]
    fn tabbed_and_escaped_forms() {
        let t = pem_tabbed(&[0u8; 3]);
        assert_eq!(
            t,
            "-----BEGIN CERTIFICATE-----\n\tAAAA\n\t-----END CERTIFICATE-----"
        );
        let e = pem_escaped(&[0xfb, 0xef]);
        assert_eq!(
            e,
            "-----BEGIN%20CERTIFICATE-----%0A%2B%2B8%3D%0A-----END%20CERTIFICATE-----%0A"
        );
    }

    #[test]
    fn asn1_time_print() {
        assert_eq!(asn1_time(0), "Jan  1 00:00:00 1970 GMT");
        assert_eq!(asn1_time(1_796_165_772), "Dec  1 22:56:12 2026 GMT");
        assert_eq!(asn1_time(1_700_000_000), "Nov 14 22:13:20 2023 GMT");
    }

    #[test]
    fn rfc2253_escapes() {
        let mut o = String::new();
        escape_2253(&mut o, "# a,b+c\"d\\e<f>g;h ");
        assert_eq!(o, "\\# a\\,b\\+c\\\"d\\\\e\\<f\\>g\\;h\\ ");
        let mut o = String::new();
        escape_2253(&mut o, "é\u{1}");
        assert_eq!(o, "\\C3\\A9\\01");
    }
}
