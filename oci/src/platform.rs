//! Choosing an image index's entry for a platform, as a container runtime does: the process's own platform by
//! default (`linux/amd64` on x86-64, `linux/arm64` on aarch64, ...), OS and architecture equal, the variant equal
//! when both name one (arm64's default variant is `v8`). An entry with no platform matches any; attestation
//! entries (`unknown/unknown`) never match. No fallback to another platform: an index without the wanted one is
//! refused with the platforms it has, as a kubelet refuses it. Pure.

use serde_json::Value;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

impl Platform {
    pub fn new(os: &str, architecture: &str, variant: Option<&str>) -> Self {
        Platform {
            os: os.to_string(),
            architecture: architecture.to_string(),
            variant: variant.map(str::to_string),
        }
    }

    /// The platform this process runs on, in OCI's names (Go's GOOS/GOARCH).
    pub fn current() -> Self {
        let (architecture, variant) = match std::env::consts::ARCH {
            "x86_64" => ("amd64", None),
            "aarch64" => ("arm64", None),
            "arm" => ("arm", Some("v7")),
            "x86" => ("386", None),
            "powerpc64" if cfg!(target_endian = "little") => ("ppc64le", None),
            "powerpc64" => ("ppc64", None),
            "s390x" => ("s390x", None),
            "riscv64" => ("riscv64", None),
            other => (other, None),
        };
        Platform::new(std::env::consts::OS, architecture, variant)
    }

    /// `os/arch[/variant]`, as `--platform` takes it.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('/');
        let os = parts.next().filter(|s| !s.is_empty())?;
        let arch = parts.next().filter(|s| !s.is_empty())?;
        let variant = parts.next();
        parts
            .next()
            .is_none()
            .then(|| Platform::new(os, arch, variant))
    }

    fn normalized_variant(&self) -> Option<&str> {
        match (self.architecture.as_str(), self.variant.as_deref()) {
            ("arm64", None) => Some("v8"),
            (_, v) => v,
        }
    }

    fn matches(&self, entry: &Value) -> bool {
        let Some(p) = entry.get("platform").filter(|p| p.is_object()) else {
            return true;
        };
        let theirs = Platform::new(
            p["os"].as_str().unwrap_or_default(),
            p["architecture"].as_str().unwrap_or_default(),
            p["variant"].as_str(),
        );
        if theirs.os != self.os || theirs.architecture != self.architecture {
            return false;
        }
        match (self.normalized_variant(), theirs.normalized_variant()) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

/// The digest of `index`'s entry for `platform`, or the platforms it offers (`Err`).
pub fn choose(index: &Value, platform: &Platform) -> Result<String, Vec<String>> {
    let entries = index["manifests"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .find(|m| platform.matches(m))
        .and_then(|m| m["digest"].as_str().map(str::to_string))
        .ok_or_else(|| {
            entries
                .iter()
                .filter_map(|m| {
                    let p = m.get("platform")?;
                    let mut s = format!(
                        "{}/{}",
                        p["os"].as_str().unwrap_or("?"),
                        p["architecture"].as_str().unwrap_or("?")
                    );
                    if let Some(v) = p["variant"].as_str() {
                        s.push('/');
                        s.push_str(v);
                    }
                    Some(s)
                })
                .collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn index() -> Value {
        json!({"manifests": [
            {"digest": "sha256:att", "platform": {"os": "unknown", "architecture": "unknown"}},
            {"digest": "sha256:amd", "platform": {"os": "linux", "architecture": "amd64"}},
            {"digest": "sha256:arm64", "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
            {"digest": "sha256:armv7", "platform": {"os": "linux", "architecture": "arm", "variant": "v7"}},
            {"digest": "sha256:s390x", "platform": {"os": "linux", "architecture": "s390x"}}]})
    }

    #[rstest]
    #[case::amd64("linux/amd64", Ok("sha256:amd"))]
    #[case::arm64_without_variant_is_v8("linux/arm64", Ok("sha256:arm64"))]
    #[case::arm_v7("linux/arm/v7", Ok("sha256:armv7"))]
    #[case::arm_v6_is_not_v7("linux/arm/v6", Err(()))]
    #[case::s390x("linux/s390x", Ok("sha256:s390x"))]
    #[case::ppc64le_absent("linux/ppc64le", Err(()))]
    #[case::windows_absent("windows/amd64", Err(()))]
    fn an_index_resolves_to_the_wanted_platform(
        #[case] wanted: &str,
        #[case] expected: Result<&str, ()>,
    ) {
        let platform = Platform::parse(wanted).expect("platform");
        let got = choose(&index(), &platform);
        match expected {
            Ok(d) => assert_eq!(got.as_deref(), Ok(d)),
            Err(()) => assert_eq!(
                got,
                Err(vec![
                    "unknown/unknown".to_string(),
                    "linux/amd64".into(),
                    "linux/arm64/v8".into(),
                    "linux/arm/v7".into(),
                    "linux/s390x".into()
                ])
            ),
        }
    }

    #[test]
    fn an_entry_without_a_platform_matches_any() {
        let index = json!({"manifests": [{"digest": "sha256:only"}]});
        assert_eq!(
            choose(&index, &Platform::new("linux", "riscv64", None)).as_deref(),
            Ok("sha256:only")
        );
    }

    #[test]
    fn a_single_entry_for_another_platform_is_not_taken() {
        let index = json!({"manifests": [{"digest": "sha256:amd", "platform": {"os": "linux", "architecture": "amd64"}}]});
        assert!(choose(&index, &Platform::new("linux", "arm64", None)).is_err());
    }

    #[rstest]
    #[case::empty("")]
    #[case::os_only("linux")]
    #[case::too_many("linux/arm/v7/x")]
    fn bad_platform_strings_are_refused(#[case] text: &str) {
        assert_eq!(Platform::parse(text), None);
    }

    #[test]
    fn this_process_has_a_platform() {
        let p = Platform::current();
        assert!(!p.os.is_empty() && !p.architecture.is_empty());
        if cfg!(target_arch = "x86_64") {
            assert_eq!(p.to_string(), format!("{}/amd64", std::env::consts::OS));
        }
    }
}
