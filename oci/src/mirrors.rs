//! Registry mirrors in the `containers-registries.conf` v2 format (what disconnected clusters configure for
//! CRI-O and podman, and OLM v1's catalogd reads): for an image reference, the places to pull it from, in order.
//!
//! ```toml
//! [[registry]]
//! prefix = "quay.io/org"              # optional; defaults to location; `*.example.com` matches subdomains
//! location = "quay.io/org"
//! blocked = false                     # true: never pull from the source itself
//! mirror-by-digest-only = false       # true: mirrors only for references by digest
//! [[registry.mirror]]
//! location = "mirror.local:5000/org"
//! insecure = true                     # plain HTTP
//! pull-from-mirror = "all"            # or "digest-only", "tag-only"
//! ```
//!
//! The longest matching prefix wins (matched at a `/`, `:` or `@` boundary); each mirror replaces that prefix,
//! then the source at its `location`. Digests are checked against the reference whatever answers. Pure.

use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RegistriesConf {
    #[serde(default)]
    registry: Vec<RegistryEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct RegistryEntry {
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    blocked: bool,
    #[serde(default)]
    mirror_by_digest_only: bool,
    #[serde(default)]
    mirror: Vec<Mirror>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Mirror {
    location: String,
    #[serde(default)]
    insecure: bool,
    #[serde(default)]
    pull_from_mirror: Option<String>,
}

/// One place to pull an image from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub reference: String,
    /// Plain HTTP (`insecure = true`).
    pub insecure: bool,
    /// A mirror, not the source.
    pub mirror: bool,
}

impl RegistriesConf {
    /// Parses the TOML text; an error names the problem and its line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let conf: RegistriesConf = toml::from_str(text).map_err(|e| e.to_string())?;
        for r in &conf.registry {
            if r.location.is_empty() && r.prefix.is_none() {
                return Err("a [[registry]] needs a location or a prefix".into());
            }
            for m in &r.mirror {
                if let Some(p) = &m.pull_from_mirror
                    && !matches!(p.as_str(), "all" | "digest-only" | "tag-only")
                {
                    return Err(format!(
                        "mirror {}: pull-from-mirror must be all, digest-only or tag-only, not {p:?}",
                        m.location
                    ));
                }
            }
        }
        Ok(conf)
    }

    /// Where to pull `reference` from, mirrors first; `Err` when its registry is `blocked` and no mirror serves it.
    pub fn candidates(&self, reference: &str) -> Result<Vec<Candidate>, String> {
        let Some((entry, rest)) = self.best_match(reference) else {
            return Ok(vec![Candidate {
                reference: reference.to_string(),
                insecure: false,
                mirror: false,
            }]);
        };
        let by_digest = reference.contains('@');
        let mut out = Vec::new();
        for m in &entry.mirror {
            let allowed = match m.pull_from_mirror.as_deref() {
                Some("digest-only") => by_digest,
                Some("tag-only") => !by_digest,
                Some(_) => true,
                None => by_digest || !entry.mirror_by_digest_only,
            };
            if allowed {
                out.push(Candidate {
                    reference: format!("{}{rest}", m.location),
                    insecure: m.insecure,
                    mirror: true,
                });
            }
        }
        if !entry.blocked {
            let location = if entry.location.is_empty() {
                entry.prefix.as_deref().unwrap_or_default()
            } else {
                entry.location.as_str()
            };
            out.push(Candidate {
                reference: format!("{location}{rest}"),
                insecure: entry.insecure,
                mirror: false,
            });
        }
        if out.is_empty() {
            return Err(format!(
                "{reference}: its registry is blocked by the registries configuration and no mirror serves this reference"
            ));
        }
        Ok(out)
    }

    /// The entry with the longest prefix matching `reference`, and what follows the prefix.
    fn best_match<'a>(&'a self, reference: &'a str) -> Option<(&'a RegistryEntry, &'a str)> {
        self.registry
            .iter()
            .filter_map(|e| {
                let prefix = e.prefix.as_deref().unwrap_or(&e.location);
                matched(prefix, reference).map(|rest| (e, rest, prefix.len()))
            })
            .max_by_key(|(_, _, len)| *len)
            .map(|(e, rest, _)| (e, rest))
    }
}

/// What follows `prefix` in `reference` when it matches at a boundary (`*.host` matches any subdomain of host).
fn matched<'a>(prefix: &str, reference: &'a str) -> Option<&'a str> {
    if let Some(domain) = prefix.strip_prefix("*.") {
        let host_end = reference.find('/').unwrap_or(reference.len());
        let host = &reference[..host_end];
        let bare = host.split(':').next().unwrap_or(host);
        return (bare.ends_with(&format!(".{domain}"))).then(|| &reference[host_end..]);
    }
    let rest = reference.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with(['/', ':', '@'])).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const CONF: &str = r#"
unqualified-search-registries = ["docker.io"]

[[registry]]
prefix = "quay.io/org"
location = "quay.io/org"
[[registry.mirror]]
location = "mirror.local:5000/org"
insecure = true
[[registry.mirror]]
location = "backup.local/org"
pull-from-mirror = "digest-only"

[[registry]]
location = "quay.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "mirror.local:5000/quay"

[[registry]]
location = "registry.redhat.io"
blocked = true
[[registry.mirror]]
location = "mirror.local:5000/redhat"
pull-from-mirror = "digest-only"

[[registry]]
prefix = "*.corp.example"
location = "cache.corp.example"
"#;

    fn refs(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.reference.as_str()).collect()
    }

    #[rstest]
    #[case::longest_prefix_with_a_tag("quay.io/org/op:v1", &["mirror.local:5000/org/op:v1", "quay.io/org/op:v1"])]
    #[case::longest_prefix_by_digest("quay.io/org/op@sha256:ab", &["mirror.local:5000/org/op@sha256:ab", "backup.local/org/op@sha256:ab", "quay.io/org/op@sha256:ab"])]
    #[case::mirror_by_digest_only_skips_tags("quay.io/other/op:v1", &["quay.io/other/op:v1"])]
    #[case::mirror_by_digest_only_takes_digests("quay.io/other/op@sha256:ab", &["mirror.local:5000/quay/other/op@sha256:ab", "quay.io/other/op@sha256:ab"])]
    #[case::a_prefix_matches_at_a_boundary_only("quay.io/organisation/op:v1", &["quay.io/organisation/op:v1"])]
    #[case::a_blocked_source_by_digest("registry.redhat.io/ubi/op@sha256:ab", &["mirror.local:5000/redhat/ubi/op@sha256:ab"])]
    #[case::a_wildcard_prefix_redirects_the_source("build.corp.example/team/op:v1", &["cache.corp.example/team/op:v1"])]
    #[case::no_entry("ghcr.io/a/b:v1", &["ghcr.io/a/b:v1"])]
    fn references_are_pulled_from_mirrors_then_the_source(
        #[case] reference: &str,
        #[case] expected: &[&str],
    ) {
        let conf = RegistriesConf::parse(CONF).expect("parses");
        assert_eq!(
            refs(&conf.candidates(reference).expect("candidates")),
            expected
        );
    }

    #[test]
    fn insecure_mirrors_are_marked() {
        let conf = RegistriesConf::parse(CONF).expect("parses");
        let c = conf.candidates("quay.io/org/op:v1").expect("candidates");
        assert!(c[0].insecure && c[0].mirror);
        assert!(!c[1].insecure && !c[1].mirror);
    }

    #[test]
    fn a_blocked_registry_without_a_mirror_for_the_reference_is_refused() {
        let conf = RegistriesConf::parse(CONF).expect("parses");
        let e = conf
            .candidates("registry.redhat.io/ubi/op:v1")
            .expect_err("blocked");
        assert!(e.contains("blocked"), "{e}");
    }

    #[rstest]
    #[case::not_toml("[[registry]\nlocation =", "")]
    #[case::no_location("[[registry]]\ninsecure = true\n", "needs a location or a prefix")]
    #[case::bad_pull_from_mirror(
        "[[registry]]\nlocation = \"a\"\n[[registry.mirror]]\nlocation = \"b\"\npull-from-mirror = \"sometimes\"\n",
        "pull-from-mirror must be"
    )]
    fn bad_configurations_are_refused(#[case] text: &str, #[case] words: &str) {
        let e = RegistriesConf::parse(text).expect_err("refused");
        assert!(e.contains(words), "{e}");
    }
}
