//! What `web_fetch` may reach. A URL is fetched only when it is http or
//! https, carries no credentials, and its host is on the allowed list or,
//! with the session's network on, is a name or a public address. A name's
//! addresses are checked when it is resolved, by the HTTP client's own
//! resolver ([`Resolver`]), and the client connects only to the addresses
//! that passed: a name that resolves to a private address, now or on the
//! next lookup (DNS rebinding), reaches nothing private.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use url::{Host, Url};

/// Why a URL or an address is not fetched: the message for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The hosts of `[tools.web_fetch] allowed_domains`: reached while the
/// network is off, and at whatever address they have. A name covers its
/// subdomains (`example.com`: `docs.example.com` too); an address covers
/// itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedHosts {
    names: Vec<String>,
    addresses: Vec<IpAddr>,
}

impl AllowedHosts {
    /// The list as configured; an entry that is not a host name or an IP
    /// address (a URL, a port, a path, a pattern) is an error that says
    /// what to write instead.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        let mut allowed = AllowedHosts::default();
        for entry in entries {
            let bare = entry.trim();
            let bare = bare
                .strip_prefix('[')
                .and_then(|b| b.strip_suffix(']'))
                .unwrap_or(bare);
            let shaped = !bare.is_empty()
                && !bare.contains(['/', '@', '*', '?', '#', ' '])
                && (!bare.contains(':') || bare.parse::<Ipv6Addr>().is_ok());
            let host = shaped
                .then(|| Host::parse(&bracketed(bare)).ok())
                .flatten()
                .ok_or_else(|| {
                    format!(
                        "`{entry}` is not a host name or an IP address; write the host alone \
                         (`example.com` covers its subdomains too, `127.0.0.1` itself)"
                    )
                })?;
            match host {
                Host::Domain(name) => allowed.names.push(normal_name(&name)),
                Host::Ipv4(ip) => allowed.addresses.push(IpAddr::V4(ip)),
                Host::Ipv6(ip) => allowed.addresses.push(IpAddr::V6(ip)),
            }
        }
        Ok(allowed)
    }

    /// Whether `host` is on the list.
    pub fn contains(&self, host: &Host<&str>) -> bool {
        match host {
            Host::Domain(name) => self.contains_name(name),
            Host::Ipv4(ip) => self.addresses.contains(&IpAddr::V4(*ip)),
            Host::Ipv6(ip) => self.addresses.contains(&IpAddr::V6(*ip)),
        }
    }

    fn contains_name(&self, name: &str) -> bool {
        let name = normal_name(name);
        self.names.iter().any(|allowed| {
            name == *allowed
                || name
                    .strip_suffix(allowed.as_str())
                    .is_some_and(|head| head.ends_with('.'))
        })
    }
}

/// An IPv6 address in brackets, as a URL writes it; anything else as it is.
fn bracketed(host: &str) -> String {
    if host.parse::<Ipv6Addr>().is_ok() {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// A name in lower case without the root's trailing dot.
fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Why `ip` is not an address of the public internet, or `None` when it
/// is: loopback, private, link-local (where cloud metadata services
/// answer), unique-local, unspecified, multicast, reserved, and the
/// transition forms that embed such an IPv4 address.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, ..) => "an unspecified (\"this network\") address",
        (127, ..) => "a loopback address",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "a private address",
        (100, 64..=127, _) => "a shared (carrier-grade NAT) address",
        (169, 254, _) => "a link-local address (where cloud metadata services answer)",
        (192, 0, 0) => "an address reserved for protocol assignments",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (192, 88, 99) => "a 6to4 relay address",
        (224..=239, ..) => "a multicast address",
        (240..=255, ..) => "a reserved or broadcast address",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    Some(match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "an unspecified address",
        [0, 0, 0, 0, 0, 0, 0, 1] => "a loopback address",
        // NAT64 (64:ff9b::/96) reaches the IPv4 address it embeds.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return non_public_v4(embedded(hi, lo)),
        // 6to4 (2002::/16) likewise, from its second and third groups.
        [0x2002, hi, lo, ..] => return non_public_v4(embedded(hi, lo)),
        [0x2001, 0xdb8, ..] => "a documentation address",
        [0x2001, 0, ..] => "a Teredo address",
        [0x2001, 0..=0x1ff, ..] => "an address reserved for protocol assignments",
        [first, ..] if first & 0xfe00 == 0xfc00 => "a unique-local address",
        [first, ..] if first & 0xffc0 == 0xfe80 => "a link-local address",
        [first, ..] if first & 0xffc0 == 0xfec0 => "a site-local address",
        [first, ..] if first & 0xff00 == 0xff00 => "a multicast address",
        // Global unicast is 2000::/3; the rest is reserved, IPv4-compatible
        // (::a.b.c.d), local NAT64 or discard-only.
        [first, ..] if first & 0xe000 != 0x2000 => "a reserved address",
        _ => return None,
    })
}

/// What the session lets `web_fetch` reach.
#[derive(Debug, Clone)]
pub struct Reach {
    /// `[tools.web_fetch] allowed_domains`.
    pub allowed: Arc<AllowedHosts>,
    /// Whether the session's network policy lets it reach other hosts.
    pub network: bool,
}

/// Where to write the two settings a refusal names.
const ALLOW_HINT: &str = "[tools.web_fetch] allowed_domains in cogni.toml";

impl Reach {
    /// Whether `url` may be fetched (before its name, if it has one, is
    /// resolved: [`Resolver`] checks the addresses). Every redirect is
    /// checked again.
    pub fn check(&self, url: &Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused(format!(
                "`{}:` URLs are not fetched: only http and https",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refused(
                "the URL carries credentials (user:password@); web_fetch never sends credentials, so remove them"
                    .into(),
            ));
        }
        let host = url
            .host()
            .ok_or_else(|| Refused("the URL has no host".into()))?;
        if self.allowed.contains(&host) {
            return Ok(());
        }
        if !self.network {
            return Err(Refused(format!(
                "the network is off in this session (sandbox network_access = false) and {host} \
                 is not on {ALLOW_HINT}; the user can add it there, or turn the network on"
            )));
        }
        let ip = match host {
            Host::Domain(_) => return Ok(()),
            Host::Ipv4(ip) => IpAddr::V4(ip),
            Host::Ipv6(ip) => IpAddr::V6(ip),
        };
        match non_public(ip) {
            Some(what) => Err(address_refused(format!("{host} is {what}"))),
            None => Ok(()),
        }
    }
}

/// The refusal of an address, `at` saying which and what it is.
fn address_refused(at: String) -> Refused {
    Refused(format!(
        "{at}; web_fetch does not reach loopback, private or link-local addresses unless \
         {ALLOW_HINT} names the host"
    ))
}

/// The HTTP client's resolver: a name's addresses, less those that are
/// not public unless the name is allowed; none left is a refusal.
pub struct Resolver {
    /// `[tools.web_fetch] allowed_domains`.
    pub allowed: Arc<AllowedHosts>,
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allowed = self.allowed.clone();
        let name = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let addrs = public_addresses(&name, found, &allowed)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The addresses `name` resolved to that may be connected to.
fn public_addresses(
    name: &str,
    found: Vec<SocketAddr>,
    allowed: &AllowedHosts,
) -> Result<Vec<SocketAddr>, Refused> {
    if allowed.contains_name(name) {
        return Ok(found);
    }
    let first = found.first().map(SocketAddr::ip);
    let public: Vec<SocketAddr> = found
        .into_iter()
        .filter(|a| non_public(a.ip()).is_none())
        .collect();
    match (public.is_empty(), first) {
        (true, Some(ip)) => Err(address_refused(format!(
            "{name} resolves to {ip}, {}",
            non_public(ip).unwrap_or("not public")
        ))),
        (true, None) => Err(Refused(format!("{name} has no address"))),
        (false, _) => Ok(public),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(entries: &[&str]) -> AllowedHosts {
        AllowedHosts::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn reach(entries: &[&str], network: bool) -> Reach {
        Reach {
            allowed: Arc::new(allowed(entries)),
            network,
        }
    }

    fn check(reach: &Reach, url: &str) -> Result<(), String> {
        reach.check(&Url::parse(url).unwrap()).map_err(|e| e.0)
    }

    #[test]
    fn addresses_outside_the_public_internet_are_named() {
        for (ip, what) in [
            ("127.0.0.1", "loopback"),
            ("127.200.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "carrier-grade"),
            ("192.0.2.1", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::127.0.0.1", "reserved"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001:0:4136:e378::1", "Teredo"),
            ("100::1", "reserved"),
        ] {
            let reason = non_public(ip.parse().unwrap());
            assert!(reason.is_some_and(|r| r.contains(what)), "{ip}: {reason:?}");
        }
        for ip in [
            "1.1.1.1",
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450::1",
            "64:ff9b::808:808",
            "2002:808:808::",
        ] {
            assert_eq!(non_public(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn the_allowed_list_takes_hosts_and_covers_subdomains() {
        let list = allowed(&["Example.com", "127.0.0.1", "::1", "[fe80::1]", "intra."]);
        let has = |url: &str| list.contains(&Url::parse(url).unwrap().host().unwrap());
        assert!(has("http://example.com/"));
        assert!(has("https://docs.EXAMPLE.com./x"));
        assert!(!has("https://notexample.com/"));
        assert!(!has("https://example.com.evil.org/"));
        assert!(has("http://127.0.0.1:8080/"));
        assert!(!has("http://127.0.0.2/"));
        assert!(has("http://[::1]/"));
        assert!(has("http://[fe80::1]/"));
        assert!(has("http://wiki.intra/"));
        // An address never matches a name by its suffix.
        assert!(!allowed(&["0.1"]).contains(&Host::Ipv4("127.0.0.1".parse().unwrap())));
        for bad in [
            "https://example.com",
            "example.com/docs",
            "example.com:8080",
            "*.example.com",
            "",
            "user@example.com",
        ] {
            let err = AllowedHosts::parse(&[bad.to_string()]).unwrap_err();
            assert!(err.contains("write the host alone"), "{bad}: {err}");
        }
    }

    #[test]
    fn urls_are_checked_for_scheme_credentials_network_and_address() {
        let open = reach(&[], true);
        assert_eq!(check(&open, "https://example.com/a"), Ok(()));
        assert_eq!(check(&open, "http://93.184.215.14/"), Ok(()));
        assert!(check(&open, "ftp://example.com/")
            .unwrap_err()
            .contains("only http and https"));
        assert!(check(&open, "file:///etc/passwd")
            .unwrap_err()
            .contains("only http and https"));
        for url in ["http://user:pw@example.com/", "http://user@example.com/"] {
            assert!(
                check(&open, url).unwrap_err().contains("credentials"),
                "{url}"
            );
        }
        // The forms the URL standard reads as 127.0.0.1 are all loopback.
        for url in [
            "http://127.0.0.1:8080/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
            "http://0.0.0.0/",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            let err = check(&open, url).unwrap_err();
            assert!(
                err.contains("unless [tools.web_fetch] allowed_domains"),
                "{url}: {err}"
            );
        }
        assert!(check(&open, "http://169.254.169.254/")
            .unwrap_err()
            .starts_with("169.254.169.254 is a link-local address"));
        let off = reach(&["127.0.0.1", "docs.rs"], false);
        assert_eq!(check(&off, "http://127.0.0.1:9/"), Ok(()));
        assert_eq!(check(&off, "https://docs.rs/x"), Ok(()));
        assert!(check(&off, "https://example.com/")
            .unwrap_err()
            .starts_with("the network is off in this session"));
        // Allowed hosts are still only http(s) without credentials.
        assert!(check(&off, "http://u:p@127.0.0.1/")
            .unwrap_err()
            .contains("credentials"));
    }

    #[test]
    fn a_name_keeps_only_its_public_addresses_unless_it_is_allowed() {
        let addr = |s: &str| SocketAddr::new(s.parse().unwrap(), 0);
        let none = AllowedHosts::default();
        let err = public_addresses("intranet.example", vec![addr("10.0.0.5")], &none).unwrap_err();
        assert!(
            err.0
                .starts_with("intranet.example resolves to 10.0.0.5, a private address"),
            "{}",
            err.0
        );
        let mixed = vec![addr("127.0.0.1"), addr("93.184.215.14"), addr("::1")];
        assert_eq!(
            public_addresses("rebind.example", mixed.clone(), &none).unwrap(),
            vec![addr("93.184.215.14")]
        );
        let list = allowed(&["example"]);
        assert_eq!(
            public_addresses("rebind.example", mixed.clone(), &list).unwrap(),
            mixed
        );
        assert!(public_addresses("x.example", vec![], &none).is_err());
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_of_the_loopback_interface() {
        let resolver = Resolver {
            allowed: Arc::default(),
        };
        let name: Name = "localhost".parse().unwrap();
        let err = match resolver.resolve(name).await {
            Ok(addrs) => panic!("resolved: {:?}", addrs.collect::<Vec<_>>()),
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("localhost resolves to "), "{err}");
        assert!(err.contains("a loopback address"), "{err}");
        let allowed = Resolver {
            allowed: Arc::new(allowed(&["localhost"])),
        };
        let addrs: Vec<SocketAddr> = allowed
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
    }
}
