//! The string `format`s the API server validates in custom resources (kube-openapi's format registry, as
//! apiextensions uses it); any other format name is not checked. Pure.

use base64::Engine;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `s` is valid for `format`.
pub fn valid(format: &str, s: &str) -> bool {
    match format {
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "date" => date(s),
        "date-time" | "datetime" => s.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "duration" => duration(s),
        "uuid" => uuid(s, None),
        "uuid3" => uuid(s, Some('3')),
        "uuid4" => uuid(s, Some('4')),
        "uuid5" => uuid(s, Some('5')),
        "email" => email(s),
        "hostname" => hostname(s),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => cidr(s),
        "mac" => mac(s),
        "uri" => uri(s),
        "hexcolor" => {
            s.len() == 7 && s.starts_with('#') && s[1..].chars().all(|c| c.is_ascii_hexdigit())
        }
        "bsonobjectid" => s.len() == 24 && s.chars().all(|c| c.is_ascii_hexdigit()),
        _ => true,
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.chars().all(|c| c.is_ascii_digit())
}

/// `YYYY-MM-DD` with a real month and day.
fn date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if !(digits(y, 4) && digits(m, 2) && digits(d, 2)) {
        return false;
    }
    format!("{s}T00:00:00Z")
        .parse::<k8s_openapi::jiff::Timestamp>()
        .is_ok()
}

/// A Go duration (`1h30m`, `300ms`, `-1.5s`) or a plain number of seconds (as strfmt accepts `"3 s"` forms too).
fn duration(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    let mut any = false;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return false;
        }
        rest = &rest[number_len..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h", "d", "w"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len());
        match unit {
            Some(u) => rest = &rest[u.len()..],
            None => return false,
        }
        any = true;
    }
    any
}

fn uuid(s: &str, version: Option<char>) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
        && version.is_none_or(|v| groups[2].starts_with(v))
}

fn email(s: &str) -> bool {
    match s.rsplit_once('@') {
        Some((local, domain)) => !local.is_empty() && !local.contains(' ') && hostname(domain),
        None => false,
    }
}

/// RFC 1123: dot-separated labels of letters, digits and inner hyphens, each at most 63 characters.
fn hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    (ip.parse::<Ipv4Addr>().is_ok() && bits <= 32)
        || (ip.parse::<Ipv6Addr>().is_ok() && bits <= 128)
}

fn mac(s: &str) -> bool {
    let sep = if s.contains('-') { '-' } else { ':' };
    let groups: Vec<&str> = s.split(sep).collect();
    matches!(groups.len(), 6 | 8 | 20)
        && groups
            .iter()
            .all(|g| g.len() == 2 && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// An absolute URI: a scheme (letter, then letters, digits, `+`, `-`, `.`), a colon, something after it.
fn uri(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, rest)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
                && !rest.is_empty()
                && !s.contains(' ')
        }
        None => false,
    }
}
