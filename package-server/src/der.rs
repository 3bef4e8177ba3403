//! The subject common name of an X.509 certificate (DER), the one field request-header authentication checks
//! against `requestheader-allowed-names`. The chain itself is verified by rustls against the request-header CA.

/// One TLV: (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const CONTEXT_0: u8 = 0xa0;
const OID_COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// The subject's CN, if the certificate has one.
pub fn subject_common_name(cert: &[u8]) -> Option<String> {
    let (SEQUENCE, cert, _) = tlv(cert)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = tlv(cert)? else {
        return None;
    };
    let mut rest = tbs;
    let (tag, _, after) = tlv(rest)?;
    if tag == CONTEXT_0 {
        rest = after;
    }
    // serial, signature algorithm, issuer, validity, then the subject.
    for _ in 0..4 {
        rest = tlv(rest)?.2;
    }
    let (SEQUENCE, mut names, _) = tlv(rest)? else {
        return None;
    };
    while !names.is_empty() {
        let (tag, set, next) = tlv(names)?;
        names = next;
        if tag != SET {
            continue;
        }
        let mut attrs = set;
        while !attrs.is_empty() {
            let (_, attr, next) = tlv(attrs)?;
            attrs = next;
            let (tag, oid, value) = tlv(attr)?;
            if tag == OID && oid == OID_COMMON_NAME {
                let (_, text, _) = tlv(value)?;
                return Some(String::from_utf8_lossy(text).into_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};
    use rstest::rstest;

    fn cert(cn: Option<&str>) -> Vec<u8> {
        let mut params = CertificateParams::new(vec![]).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "olm-rs");
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    #[rstest]
    #[case::front_proxy(Some("front-proxy-client"))]
    #[case::no_cn(None)]
    fn the_subject_common_name_is_read(#[case] cn: Option<&str>) {
        assert_eq!(subject_common_name(&cert(cn)).as_deref(), cn);
    }

    #[rstest]
    #[case::empty(&[])]
    #[case::truncated(&[0x30, 0x82, 0x01])]
    #[case::not_a_sequence(&[0x02, 0x01, 0x00])]
    fn garbage_has_no_name(#[case] der: &[u8]) {
        assert_eq!(subject_common_name(der), None);
    }
}
