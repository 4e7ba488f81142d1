//! The server side's allow-list: a destination is relayed only if its (resolved) address lies in
//! one rule's CIDR prefix and its port in that rule's ports. An empty list allows nothing, so a
//! server is never an open relay by omission.
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// `"10.0.0.0/8"`, `"2001:db8::/32"`, or a bare address (a /32 or /128). Host bits must be 0,
    /// so a typo like `10.0.0.1/8` is an error instead of a silently wider rule.
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not an IP address or CIDR prefix"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(v) if v <= max => v,
                _ => return Err(format!("`{s}`: prefix length must be 0..={max}")),
            },
        };
        let c = Cidr { addr, prefix };
        if mask(c.addr, prefix) != bits(c.addr) {
            return Err(format!("`{s}` has host bits set below /{prefix}"));
        }
        Ok(c)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is compared as IPv4.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == bits(self.addr)
    }
}

fn bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u32::from(v) as u128,
        IpAddr::V6(v) => u128::from(v),
    }
}

fn mask(a: IpAddr, prefix: u8) -> u128 {
    let width = if a.is_ipv4() { 32 } else { 128 };
    let host = width - prefix as u32;
    let m = if host >= 128 { 0 } else { (!0u128) << host };
    bits(a) & m
}

/// An inclusive port range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub lo: u16,
    pub hi: u16,
}

impl Ports {
    /// `"443"`, `"8000-8100"` or `"*"` (every port 1-65535).
    pub fn parse(s: &str) -> Result<Ports, String> {
        let s = s.trim();
        if s == "*" {
            return Ok(Ports { lo: 1, hi: 65535 });
        }
        let one = |t: &str| match t.trim().parse::<u32>() {
            Ok(v) if (1..=65535).contains(&v) => Ok(v as u16),
            _ => Err(format!("`{s}`: a port must be 1..=65535 (or a range `LO-HI`, or `*`)")),
        };
        let (lo, hi) = match s.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(s)?, one(s)?),
        };
        if lo > hi {
            return Err(format!("`{s}`: range start is above its end"));
        }
        Ok(Ports { lo, hi })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub cidr: Cidr,
    pub ports: Vec<Ports>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    pub rules: Vec<Rule>,
}

impl AllowList {
    pub fn allows(&self, ip: IpAddr, port: u16) -> bool {
        self.rules
            .iter()
            .any(|r| r.cidr.contains(ip) && r.ports.iter().any(|p| (p.lo..=p.hi).contains(&port)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(rules: &[(&str, &[&str])]) -> AllowList {
        AllowList {
            rules: rules
                .iter()
                .map(|(c, ps)| Rule {
                    cidr: Cidr::parse(c).unwrap(),
                    ports: ps.iter().map(|p| Ports::parse(p).unwrap()).collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn cidr_membership() {
        let c = Cidr::parse("10.20.0.0/16").unwrap();
        assert!(c.contains("10.20.255.1".parse().unwrap()));
        assert!(!c.contains("10.21.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.20.1.1".parse().unwrap()));
        assert!(!c.contains("2001:db8::1".parse().unwrap()));
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        let v6 = Cidr::parse("2001:db8::/32").unwrap();
        assert!(v6.contains("2001:db8:ffff::1".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        let host = Cidr::parse("192.0.2.5").unwrap();
        assert_eq!(host.prefix, 32);
        assert!(host.contains("192.0.2.5".parse().unwrap()));
        assert!(!host.contains("192.0.2.6".parse().unwrap()));
    }

    #[test]
    fn cidr_errors() {
        assert!(Cidr::parse("10.0.0.1/8").unwrap_err().contains("host bits"));
        assert!(Cidr::parse("10.0.0.0/33").unwrap_err().contains("0..=32"));
        assert!(Cidr::parse("nonsense").is_err());
    }

    #[test]
    fn ports() {
        assert_eq!(Ports::parse("80"), Ok(Ports { lo: 80, hi: 80 }));
        assert_eq!(Ports::parse("8000-8100"), Ok(Ports { lo: 8000, hi: 8100 }));
        assert_eq!(Ports::parse("*"), Ok(Ports { lo: 1, hi: 65535 }));
        assert!(Ports::parse("0").is_err());
        assert!(Ports::parse("70000").is_err());
        assert!(Ports::parse("90-80").is_err());
    }

    #[test]
    fn rules_need_address_and_port() {
        let l = list(&[("10.0.0.0/8", &["443", "8000-8100"]), ("192.0.2.1", &["*"])]);
        assert!(l.allows("10.1.1.1".parse().unwrap(), 443));
        assert!(l.allows("10.1.1.1".parse().unwrap(), 8050));
        assert!(!l.allows("10.1.1.1".parse().unwrap(), 80));
        assert!(!l.allows("11.1.1.1".parse().unwrap(), 443));
        assert!(l.allows("192.0.2.1".parse().unwrap(), 22));
        assert!(
            !AllowList::default().allows("10.1.1.1".parse().unwrap(), 443),
            "empty list allows nothing"
        );
    }
}
