//! The DNS wire format (RFC 1035) as far as a stub resolver needs it: a query for one name
//! and type, and the checks nginx's `ngx_resolver_process_response` makes on an answer
//! (a response to a standard query, our id, our question echoed, class IN, record lengths
//! inside the packet), then its A, AAAA, CNAME and SRV records. Every read is bounds
//! checked: a hostile packet is an error, never a panic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;
pub const TYPE_SRV: u16 = 33;
const CLASS_IN: u16 = 1;
const HEADER: usize = 12;

/// One SRV record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Srv {
    pub priority: u16,
    pub weight: u16,
    pub port: u16,
    pub target: String,
}

/// What one answer said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    /// The response code (0 no error, 3 NXDOMAIN, ...).
    pub rcode: u8,
    /// TC: the answer did not fit; ask again over TCP.
    pub truncated: bool,
    pub addrs: Vec<IpAddr>,
    pub srvs: Vec<Srv>,
    /// The last CNAME target in the answer section.
    pub cname: Option<String>,
    /// The smallest TTL of the records read (`u32::MAX` when there were none).
    pub ttl: u32,
}

/// Why an answer was not taken, in nginx's words where it has some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Short,
    NotResponse(u16),
    WrongId(u16),
    Questions,
    WrongQuestion,
    BadName,
    BadRecord(&'static str),
    Class(u16),
}

impl WireError {
    /// The error-log text (nginx's resolver messages).
    pub fn message(&self, name: &str, id: u16) -> String {
        match self {
            WireError::Short => "short DNS response".to_string(),
            WireError::NotResponse(flags) => {
                format!("invalid DNS response {id} fl:{flags:04X}")
            }
            WireError::WrongId(got) => {
                format!("wrong ident {got} in DNS response for {name}, expect {id}")
            }
            WireError::Questions => "invalid number of questions in DNS response".to_string(),
            WireError::WrongQuestion => format!("unexpected DNS response for {name}"),
            WireError::BadName => "invalid name in DNS response".to_string(),
            WireError::BadRecord(what) => format!("invalid {what} record in DNS response"),
            WireError::Class(c) => format!("unexpected RR class {c} in DNS response"),
        }
    }
}

/// A recursive query for `name` (a trailing dot allowed); `None` when the name cannot be
/// written (an empty label, a label over 63 bytes, over 255 in all).
pub fn query(id: u16, name: &str, qtype: u16) -> Option<Vec<u8>> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > 255 {
        return None;
    }
    let mut q = Vec::with_capacity(HEADER + name.len() + 6);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return None;
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    Some(q)
}

/// The id of a packet, if it has a header.
pub fn packet_id(buf: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*buf.first()?, *buf.get(1)?]))
}

/// Reads an answer to `query(id, name, qtype)`.
pub fn parse(buf: &[u8], id: u16, name: &str, qtype: u16) -> Result<Answer, WireError> {
    let r = Reader { buf };
    let got = r.u16(0)?;
    let flags = r.u16(2)?;
    // QR set, opcode 0 (nginx: `(flags & 0xf870) != 0x8000` is an invalid response).
    if flags & 0xf870 != 0x8000 {
        return Err(WireError::NotResponse(flags));
    }
    if got != id {
        return Err(WireError::WrongId(got));
    }
    if r.u16(4)? != 1 {
        return Err(WireError::Questions);
    }
    let answers = r.u16(6)?;
    let (qname, mut at) = r.name(HEADER)?;
    let want = name.strip_suffix('.').unwrap_or(name);
    if !qname.eq_ignore_ascii_case(want) || r.u16(at)? != qtype {
        return Err(WireError::WrongQuestion);
    }
    if r.u16(at + 2)? != CLASS_IN {
        return Err(WireError::Class(r.u16(at + 2)?));
    }
    at += 4;
    let mut out = Answer {
        rcode: (flags & 0xf) as u8,
        truncated: flags & 0x0200 != 0,
        ttl: u32::MAX,
        ..Answer::default()
    };
    if out.rcode != 0 || out.truncated {
        return Ok(out);
    }
    for _ in 0..answers {
        at = r.record(at, qtype, &mut out)?;
    }
    Ok(out)
}

/// Bounds-checked reads over one packet.
struct Reader<'a> {
    buf: &'a [u8],
}

impl Reader<'_> {
    fn u8(&self, at: usize) -> Result<u8, WireError> {
        self.buf.get(at).copied().ok_or(WireError::Short)
    }

    fn u16(&self, at: usize) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes([self.u8(at)?, self.u8(at + 1)?]))
    }

    fn u32(&self, at: usize) -> Result<u32, WireError> {
        Ok(u32::from(self.u16(at)?) << 16 | u32::from(self.u16(at + 2)?))
    }

    fn bytes(&self, at: usize, len: usize) -> Result<&[u8], WireError> {
        self.buf.get(at..at + len).ok_or(WireError::Short)
    }

    /// A (possibly compressed) name at `at`: the dotted text and where the name ends in
    /// place. Pointers may only go backwards, so a loop cannot be built.
    fn name(&self, at: usize) -> Result<(String, usize), WireError> {
        let mut text = String::new();
        let mut pos = at;
        let mut end = None;
        loop {
            let len = self.u8(pos)?;
            match len & 0xc0 {
                0xc0 => {
                    let target = usize::from(self.u16(pos)? & 0x3fff);
                    end.get_or_insert(pos + 2);
                    if target >= pos {
                        return Err(WireError::BadName);
                    }
                    pos = target;
                }
                0 if len == 0 => break,
                0 => {
                    let label = self.bytes(pos + 1, usize::from(len))?;
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(&String::from_utf8_lossy(label));
                    if text.len() > 255 {
                        return Err(WireError::BadName);
                    }
                    pos += 1 + usize::from(len);
                }
                _ => return Err(WireError::BadName),
            }
        }
        Ok((text, end.unwrap_or(pos + 1)))
    }

    /// One resource record at `at` into `out`; where the next one starts.
    fn record(&self, at: usize, qtype: u16, out: &mut Answer) -> Result<usize, WireError> {
        let (_, at) = self.name(at)?;
        let rtype = self.u16(at)?;
        let class = self.u16(at + 2)?;
        // nginx: a negative TTL counts as 0.
        let ttl = self.u32(at + 4)?;
        let ttl = if ttl > i32::MAX as u32 { 0 } else { ttl };
        let len = usize::from(self.u16(at + 8)?);
        let data = at + 10;
        let rdata = self.bytes(data, len)?;
        if class != CLASS_IN {
            return Err(WireError::Class(class));
        }
        out.ttl = out.ttl.min(ttl);
        match rtype {
            TYPE_A if qtype == TYPE_A => {
                let b: [u8; 4] = rdata.try_into().map_err(|_| WireError::BadRecord("A"))?;
                out.addrs.push(IpAddr::V4(Ipv4Addr::from(b)));
            }
            TYPE_AAAA if qtype == TYPE_AAAA => {
                let b: [u8; 16] = rdata.try_into().map_err(|_| WireError::BadRecord("AAAA"))?;
                out.addrs.push(IpAddr::V6(Ipv6Addr::from(b)));
            }
            TYPE_SRV if qtype == TYPE_SRV => {
                if len < 7 {
                    return Err(WireError::BadRecord("SRV"));
                }
                let (target, _) = self.name(data + 6)?;
                out.srvs.push(Srv {
                    priority: self.u16(data)?,
                    weight: self.u16(data + 2)?,
                    port: self.u16(data + 4)?,
                    target,
                });
            }
            TYPE_CNAME => out.cname = Some(self.name(data)?.0),
            // Other records (DNAME, records of another type) are skipped, as nginx does.
            _ => {}
        }
        Ok(data + len)
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
