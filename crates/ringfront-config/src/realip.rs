//! nginx's realip module: `set_real_ip_from` (addresses, networks, host names, `unix:`),
//! `real_ip_header` and `real_ip_recursive`, at http, server and location level. Merged
//! as `ngx_http_realip_merge_loc_conf`: the trusted list is inherited whole unless a level
//! writes one, the header and the recursion flag each on their own.

use crate::cidr::Cidr;
use crate::error::ConfigError;
use crate::host::Host;
use crate::tree::Directive;
use crate::values::{err, flag, set_once};

/// The module where `set_real_ip_from` is in effect (the model holds `None` elsewhere: the
/// module declines there, whatever the other two directives say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealIp {
    pub from: Vec<Trusted>,
    pub header: RealIpHeader,
    /// `real_ip_recursive on`: walk `X-Forwarded-For` leftwards past trusted addresses.
    pub recursive: bool,
}

/// One `set_real_ip_from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trusted {
    Net(Cidr),
    /// `unix:`: clients of a unix-domain `listen`.
    Unix,
}

impl Trusted {
    /// Whether `ip` is trusted; a unix-domain client's address is
    /// [`crate::unix_addr::UNIX_CLIENT`]'s.
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        let unix = crate::unix_addr::is_unix_ip(ip);
        match self {
            Trusted::Unix => unix,
            Trusted::Net(n) => !unix && n.contains(ip),
        }
    }
}

/// `real_ip_header` (default `X-Real-IP`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RealIpHeader {
    #[default]
    XRealIp,
    XForwardedFor,
    /// The address of the connection's PROXY protocol header (and its port).
    ProxyProtocol,
    /// Any other field, by its lower-cased name (the first one found is read).
    Other(String),
}

/// What one level wrote.
#[derive(Debug, Clone, Default)]
pub(crate) struct RealIpLevel {
    from: Option<Vec<Trusted>>,
    header: Option<RealIpHeader>,
    recursive: Option<bool>,
}

impl RealIpLevel {
    /// Reads `d` if it is one of the module's directives; `Ok(false)` if not.
    pub(crate) fn apply(&mut self, d: &Directive, host: &dyn Host) -> Result<bool, ConfigError> {
        let arg = d.arg(0);
        match d.name.as_str() {
            "set_real_ip_from" => {
                let list = self.from.get_or_insert_with(Vec::new);
                list.extend(trusted(d, arg, host)?);
            }
            "real_ip_header" => {
                let header = match arg {
                    "X-Real-IP" => RealIpHeader::XRealIp,
                    "X-Forwarded-For" => RealIpHeader::XForwardedFor,
                    "proxy_protocol" => RealIpHeader::ProxyProtocol,
                    other => RealIpHeader::Other(other.to_ascii_lowercase()),
                };
                set_once(&mut self.header, header, d)?;
            }
            "real_ip_recursive" => set_once(&mut self.recursive, flag(d)?, d)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// This level over `outer`.
    pub(crate) fn inherit(&self, outer: &RealIpLevel) -> RealIpLevel {
        RealIpLevel {
            from: self.from.clone().or_else(|| outer.from.clone()),
            header: self.header.clone().or_else(|| outer.header.clone()),
            recursive: self.recursive.or(outer.recursive),
        }
    }

    pub(crate) fn finish(&self) -> Option<RealIp> {
        Some(RealIp {
            from: self.from.clone()?,
            header: self.header.clone().unwrap_or_default(),
            recursive: self.recursive.unwrap_or(false),
        })
    }
}

/// `unix:`, `ADDR[/BITS]`, or a host name (every address it resolves to, as a host).
fn trusted(d: &Directive, arg: &str, host: &dyn Host) -> Result<Vec<Trusted>, ConfigError> {
    if arg == "unix:" {
        return Ok(vec![Trusted::Unix]);
    }
    if let Some(net) = Cidr::parse(arg) {
        return Ok(vec![Trusted::Net(net)]);
    }
    let not_found = || err(d, format!("host not found in set_real_ip_from \"{arg}\""));
    let addrs = crate::address::resolve(arg, 0, host).map_err(|_| not_found())?;
    Ok(addrs
        .iter()
        .map(|a| {
            let bits = if a.is_ipv4() { 32 } else { 128 };
            Trusted::Net(Cidr { addr: a.ip(), bits })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_matches_unix_clients_apart() {
        let unix = crate::unix_addr::UNIX_CLIENT.ip();
        let net = Trusted::Net(Cidr::parse("0.0.0.0/0").unwrap());
        let v6 = Trusted::Net(Cidr::parse("::/0").unwrap());
        assert!(net.contains("192.0.2.1".parse().unwrap()));
        assert!(!v6.contains(unix));
        assert!(Trusted::Unix.contains(unix));
        assert!(!Trusted::Unix.contains("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn loaded_from_a_configuration_with_proxy_protocol_listens() {
        let text = "events {}\nhttp {\n set_real_ip_from 10.0.0.0/8;\n \
            server { listen 127.0.0.1:81 proxy_protocol; real_ip_header proxy_protocol;\n \
            location /a { set_real_ip_from unix:; real_ip_recursive on; } location /b { } }\n \
            server { listen 127.0.0.1:81; server_name x; }\n server { listen 127.0.0.1:82; }\n}\n";
        let host = crate::MemoryHost::new();
        let cfg = crate::parse_str(text, std::path::Path::new("/c/x.conf"), &host).unwrap();
        let s = &cfg.http.servers;
        // The flag belongs to the address, as nginx ORs it.
        let pp: Vec<bool> = s.iter().map(|s| s.listens[0].proxy_protocol).collect();
        assert_eq!(pp, [true, true, false]);
        let server = s[0].settings.real_ip.as_ref().unwrap();
        assert_eq!(server.header, RealIpHeader::ProxyProtocol);
        let a = s[0].locations[0].settings.real_ip.as_ref().unwrap();
        assert_eq!(
            (a.from.as_slice(), a.recursive),
            (&[Trusted::Unix][..], true)
        );
        assert_eq!(a.header, RealIpHeader::ProxyProtocol);
        let b = s[0].locations[1].settings.real_ip.as_ref().unwrap();
        assert_eq!(
            b.from,
            vec![Trusted::Net(Cidr::parse("10.0.0.0/8").unwrap())]
        );
        assert_eq!(
            s[1].settings.real_ip.as_ref().unwrap().header,
            RealIpHeader::XRealIp
        );
    }

    #[test]
    fn merge_takes_each_setting_on_its_own() {
        let outer = RealIpLevel {
            from: Some(vec![Trusted::Unix]),
            header: Some(RealIpHeader::XForwardedFor),
            recursive: None,
        };
        let own = RealIpLevel {
            recursive: Some(true),
            ..Default::default()
        };
        let r = own.inherit(&outer).finish().unwrap();
        assert_eq!(r.from, vec![Trusted::Unix]);
        assert_eq!(r.header, RealIpHeader::XForwardedFor);
        assert!(r.recursive);
        assert_eq!(RealIpLevel::default().finish(), None);
    }
}
