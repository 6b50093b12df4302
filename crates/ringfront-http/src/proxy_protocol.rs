//! The PROXY protocol header a load balancer sends before a connection's own bytes
//! (`listen ... proxy_protocol`), read as nginx 1.22's `ngx_proxy_protocol_read` reads it:
//! from what the first read brought, with no waiting for more.
//!
//! - v1 (text): `PROXY TCP4|TCP6 SRC DST SRCPORT DSTPORT\r\n`; addresses are kept as the
//!   text they were (characters of hex digits, `:` and `.` only, not checked further), ports
//!   0..=65535. `PROXY UNKNOWN ...\r\n` is skipped and gives no addresses.
//! - v2 (binary): the 12-byte signature, version 2, the `PROXY` command over `STREAM` with
//!   `AF_INET`/`AF_INET6` give addresses; `LOCAL`, other transports and `AF_UNIX`/`AF_UNSPEC`
//!   are skipped (the declared length) and give none. The TLVs after the addresses are kept
//!   raw with the connection ([`ProxyHeader::tlv`] finds one, as nginx 1.23.2+ does).

/// What the header said; `None` from [`parse`] for UNKNOWN, LOCAL and unsupported families.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProxyHeader {
    pub src_addr: String,
    pub dst_addr: String,
    pub src_port: u16,
    pub dst_port: u16,
    /// v2: the bytes of the TLVs (type, 2-byte length, value ...); empty for v1.
    pub tlvs: Vec<u8>,
}

/// Why a header was refused. nginx logs the first three (at `error`), not the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyError {
    /// `broken header: "BYTES"` (the bytes read, as they came).
    Broken,
    /// `unknown PROXY protocol version: N`
    Version(u8),
    /// `header is too large`: the v2 length goes past what was read.
    TooLarge,
    /// A v2 address block shorter than its family needs (nginx closes without a line).
    Short,
}

/// The v2 signature.
const SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Signature, version/command, family/transport, length.
const V2_HEAD: usize = 16;

/// Reads the header at the start of `buf` (all that was read so far). The bytes it takes
/// and what it said.
pub fn parse(buf: &[u8]) -> Result<(usize, Option<ProxyHeader>), ProxyError> {
    if buf.len() >= V2_HEAD && buf.starts_with(SIGNATURE) {
        return parse_v2(buf);
    }
    parse_v1(buf).ok_or(ProxyError::Broken)
}

fn parse_v1(buf: &[u8]) -> Option<(usize, Option<ProxyHeader>)> {
    if buf.len() < 8 || !buf.starts_with(b"PROXY ") {
        return None;
    }
    let rest = &buf[6..];
    if rest.starts_with(b"UNKNOWN") {
        let end = rest[7..].windows(2).position(|w| w == b"\r\n")?;
        return Some((6 + 7 + end + 2, None));
    }
    let tcp = rest.len() >= 5
        && rest.starts_with(b"TCP")
        && matches!(rest[3], b'4' | b'6')
        && rest[4] == b' ';
    if !tcp {
        return None;
    }
    let mut at = 6 + 5;
    let src_addr = v1_addr(buf, &mut at)?;
    let dst_addr = v1_addr(buf, &mut at)?;
    let src_port = v1_port(buf, &mut at, b' ')?;
    let dst_port = v1_port(buf, &mut at, b'\r')?;
    if buf.get(at) != Some(&b'\n') {
        return None;
    }
    let header = ProxyHeader {
        src_addr,
        dst_addr,
        src_port,
        dst_port,
        tlvs: Vec::new(),
    };
    Some((at + 1, Some(header)))
}

/// An address up to the next space (which is taken too).
fn v1_addr(buf: &[u8], at: &mut usize) -> Option<String> {
    let start = *at;
    let len = buf[start..].iter().position(|&b| b == b' ')?;
    let text = &buf[start..start + len];
    let ok = |b: &u8| b.is_ascii_hexdigit() || matches!(b, b':' | b'.');
    if !text.iter().all(ok) {
        return None;
    }
    *at = start + len + 1;
    Some(String::from_utf8_lossy(text).into_owned())
}

/// A port up to `sep` (taken too): decimal digits only (`ngx_atoi`), at most 65535.
fn v1_port(buf: &[u8], at: &mut usize, sep: u8) -> Option<u16> {
    let start = *at;
    let len = buf[start..].iter().position(|&b| b == sep)?;
    let text = &buf[start..start + len];
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = text.iter().try_fold(0u32, |n, &d| {
        n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
    })?;
    *at = start + len + 1;
    u16::try_from(n).ok()
}

fn parse_v2(buf: &[u8]) -> Result<(usize, Option<ProxyHeader>), ProxyError> {
    let version = buf[12] >> 4;
    if version != 2 {
        return Err(ProxyError::Version(version));
    }
    let len = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    let body = &buf[V2_HEAD..];
    if body.len() < len {
        return Err(ProxyError::TooLarge);
    }
    let body = &body[..len];
    let end = V2_HEAD + len;
    let command = buf[12] & 0x0f;
    let transport = buf[13] & 0x0f;
    // Only PROXY (1) over STREAM (1) says anything; the rest is skipped whole.
    if command != 1 || transport != 1 {
        return Ok((end, None));
    }
    let (addrs, tlvs) = match buf[13] >> 4 {
        1 => v2_addrs::<4>(body)?,
        2 => v2_addrs::<16>(body)?,
        _ => return Ok((end, None)),
    };
    Ok((
        end,
        Some(ProxyHeader {
            tlvs: tlvs.to_vec(),
            ..addrs
        }),
    ))
}

/// The addresses and ports of an `AF_INET` (`N` = 4) or `AF_INET6` (16) block, and the
/// bytes after them.
fn v2_addrs<const N: usize>(body: &[u8]) -> Result<(ProxyHeader, &[u8]), ProxyError> {
    if body.len() < 2 * N + 4 {
        return Err(ProxyError::Short);
    }
    let text = |b: &[u8]| -> String {
        match <[u8; 4]>::try_from(b) {
            Ok(v4) => std::net::Ipv4Addr::from(v4).to_string(),
            Err(_) => {
                let v6: [u8; 16] = b.try_into().unwrap_or([0; 16]);
                std::net::Ipv6Addr::from(v6).to_string()
            }
        }
    };
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let header = ProxyHeader {
        src_addr: text(&body[..N]),
        dst_addr: text(&body[N..2 * N]),
        src_port: port(2 * N),
        dst_port: port(2 * N + 2),
        tlvs: Vec::new(),
    };
    Ok((header, &body[2 * N + 4..]))
}

impl ProxyHeader {
    /// The value of the first TLV of type `kind`; `None` when absent or when the TLVs are
    /// malformed before it.
    pub fn tlv(&self, kind: u8) -> Option<&[u8]> {
        find_tlv(&self.tlvs, kind)
    }
}

/// The value of the first TLV of type `kind` in `tlvs` (the SSL TLV holds TLVs too).
pub fn find_tlv(tlvs: &[u8], kind: u8) -> Option<&[u8]> {
    let mut rest = tlvs;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[1], rest[2]]));
        let value = rest.get(3..3 + len)?;
        if rest[0] == kind {
            return Some(value);
        }
        rest = &rest[3 + len..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(text: &str) -> Result<(usize, Option<ProxyHeader>), ProxyError> {
        parse(text.as_bytes())
    }

    #[test]
    fn v1_tcp4_and_tcp6_keep_the_text() {
        let (n, h) = v1("PROXY TCP4 192.0.2.1 192.0.2.2 1234 80\r\nGET /").unwrap();
        assert_eq!(n, 40);
        let h = h.unwrap();
        assert_eq!(
            (
                h.src_addr.as_str(),
                h.dst_addr.as_str(),
                h.src_port,
                h.dst_port
            ),
            ("192.0.2.1", "192.0.2.2", 1234, 80)
        );
        let (_, h) = v1("PROXY TCP6 2001:DB8::1 ::2 0 65535\r\n").unwrap();
        let h = h.unwrap();
        assert_eq!((h.src_addr.as_str(), h.src_port), ("2001:DB8::1", 0));
        // Not checked against the family, nor as an address.
        let (_, h) = v1("PROXY TCP4 1.2.3.4.5 ::1 1 2\r\n").unwrap();
        assert_eq!(h.unwrap().src_addr, "1.2.3.4.5");
    }

    #[test]
    fn v1_unknown_is_skipped_to_crlf() {
        assert_eq!(v1("PROXY UNKNOWN\r\nGET"), Ok((15, None)));
        assert_eq!(v1("PROXY UNKNOWN x y 1 2\r\n"), Ok((23, None)));
        assert_eq!(v1("PROXY UNKNOWN x"), Err(ProxyError::Broken));
    }

    #[test]
    fn v1_broken() {
        for bad in [
            "GET / HTTP/1.1\r\n",
            "PROXY",
            "PROXY TCP5 1.1.1.1 1.1.1.1 1 1\r\n",
            "PROXY TCP4 1.1.1.x 1.1.1.1 1 1\r\n",
            "PROXY TCP4 1.1.1.1 1.1.1.1 1 65536\r\n",
            "PROXY TCP4 1.1.1.1 1.1.1.1 -1 1\r\n",
            "PROXY TCP4 1.1.1.1 1.1.1.1 1 1\r",
            "PROXY TCP4 1.1.1.1 1.1.1.1 1 1\rX",
            "PROXY TCP4 1.1.1.1 1.1.1.1 1 1\n",
            "PROXY TCP4 1.1.1.1 1.1.1.1 1",
        ] {
            assert_eq!(v1(bad), Err(ProxyError::Broken), "{bad:?}");
        }
    }

    fn v2(cmd: u8, fam: u8, body: &[u8]) -> Vec<u8> {
        let mut b = SIGNATURE.to_vec();
        b.push(cmd);
        b.push(fam);
        b.extend_from_slice(&(body.len() as u16).to_be_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn v2_inet_inet6_and_tlvs() {
        let mut body = vec![192, 0, 2, 1, 192, 0, 2, 2, 0x04, 0xd2, 0, 80];
        body.extend_from_slice(&[0x01, 0, 2, b'h', b'2', 0x02, 0, 3, b'a', b'.', b'b']);
        let mut buf = v2(0x21, 0x11, &body);
        buf.extend_from_slice(b"GET");
        let (n, h) = parse(&buf).unwrap();
        assert_eq!(n, buf.len() - 3);
        let h = h.unwrap();
        assert_eq!((h.src_addr.as_str(), h.src_port), ("192.0.2.1", 1234));
        assert_eq!((h.dst_addr.as_str(), h.dst_port), ("192.0.2.2", 80));
        assert_eq!(h.tlv(1), Some(&b"h2"[..]));
        assert_eq!(h.tlv(2), Some(&b"a.b"[..]));
        assert_eq!(h.tlv(3), None);

        let mut body = vec![0u8; 36];
        body[15] = 1;
        body[31] = 2;
        body[33] = 7;
        let (_, h) = parse(&v2(0x21, 0x21, &body)).unwrap();
        let h = h.unwrap();
        assert_eq!((h.src_addr.as_str(), h.dst_addr.as_str()), ("::1", "::2"));
        assert_eq!(h.src_port, 7);
    }

    #[test]
    fn v2_local_unix_unspec_and_udp_give_nothing() {
        for (cmd, fam) in [(0x20, 0x11), (0x21, 0x31), (0x21, 0x00), (0x21, 0x12)] {
            let buf = v2(cmd, fam, &[0; 12]);
            assert_eq!(parse(&buf), Ok((28, None)), "{cmd:x} {fam:x}");
        }
    }

    #[test]
    fn v2_errors() {
        let mut buf = v2(0x31, 0x11, &[0; 12]);
        assert_eq!(parse(&buf), Err(ProxyError::Version(3)));
        buf = v2(0x21, 0x11, &[0; 12]);
        buf.truncate(20);
        assert_eq!(parse(&buf), Err(ProxyError::TooLarge));
        assert_eq!(parse(&v2(0x21, 0x11, &[0; 11])), Err(ProxyError::Short));
        assert_eq!(parse(&v2(0x21, 0x21, &[0; 35])), Err(ProxyError::Short));
        // Shorter than a v2 head: read as v1.
        assert_eq!(parse(&SIGNATURE[..]), Err(ProxyError::Broken));
    }
}
