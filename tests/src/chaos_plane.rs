//! Which private control plane the chaos tests use: `OLM_RS_CHAOS_PLANE` unset or `1` names the first
//! ([`CHAOS_PLANE_ENV`], the one CI's short run uses), `2` a second one ([`CHAOS_PLANE2_ENV`]: its own state and
//! registry folders and ports), so a long run can go on beside CI's short run without sharing etcd, apiserver or
//! cluster-scoped objects. `hack/control-plane.sh down` with the same variables stops that plane alone.

/// Every port is below the kernel's ephemeral range (32768 and up), so no outgoing connection can hold one.
/// The first private plane: `~/.cache/olm-rs/cluster-chaos`, etcd 23891/23901, apiserver 26644, controller
/// manager 26358, registry 25001.
pub const CHAOS_PLANE_ENV: [(&str, &str); 7] = [
    ("OLM_RS_CLUSTER_DIR", "cluster-chaos"),
    ("OLM_RS_ETCD_PORT", "23891"),
    ("OLM_RS_ETCD_PEER_PORT", "23901"),
    ("OLM_RS_API_PORT", "26644"),
    ("OLM_RS_KCM_PORT", "26358"),
    ("OLM_RS_REGISTRY_PORT", "25001"),
    ("OLM_RS_REGISTRY_DIR", "registry-chaos"),
];

/// The second private plane (`OLM_RS_CHAOS_PLANE=2`): `~/.cache/olm-rs/cluster-chaos2`, etcd 23893/23903,
/// apiserver 26646, controller manager 26360, registry 25003.
pub const CHAOS_PLANE2_ENV: [(&str, &str); 7] = [
    ("OLM_RS_CLUSTER_DIR", "cluster-chaos2"),
    ("OLM_RS_ETCD_PORT", "23893"),
    ("OLM_RS_ETCD_PEER_PORT", "23903"),
    ("OLM_RS_API_PORT", "26646"),
    ("OLM_RS_KCM_PORT", "26360"),
    ("OLM_RS_REGISTRY_PORT", "25003"),
    ("OLM_RS_REGISTRY_DIR", "registry-chaos2"),
];

/// The plane named by the value of `OLM_RS_CHAOS_PLANE` (`None`: unset). Any other value is refused rather
/// than falling back to the first plane, which CI's run may be using.
pub fn chaos_plane_env(
    selector: Option<&str>,
) -> anyhow::Result<&'static [(&'static str, &'static str); 7]> {
    match selector.map(str::trim) {
        None | Some("") | Some("1") => Ok(&CHAOS_PLANE_ENV),
        Some("2") => Ok(&CHAOS_PLANE2_ENV),
        Some(other) => anyhow::bail!("OLM_RS_CHAOS_PLANE={other:?}: only 1 or 2"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::unset_is_the_first_plane(None, Some("26644"))]
    #[case::empty_is_the_first_plane(Some(""), Some("26644"))]
    #[case::one_is_the_first_plane(Some("1"), Some("26644"))]
    #[case::two_is_the_second_plane(Some("2"), Some("26646"))]
    #[case::anything_else_is_refused(Some("3"), None)]
    #[case::a_word_is_refused(Some("second"), None)]
    fn the_plane_follows_the_selector(
        #[case] selector: Option<&str>,
        #[case] api_port: Option<&str>,
    ) {
        let port = chaos_plane_env(selector).ok().and_then(|env| {
            env.iter()
                .find(|(k, _)| *k == "OLM_RS_API_PORT")
                .map(|(_, v)| *v)
        });
        assert_eq!(port, api_port);
    }

    #[test]
    fn the_two_planes_share_no_port_or_folder() {
        for ((k1, v1), (k2, v2)) in CHAOS_PLANE_ENV.iter().zip(CHAOS_PLANE2_ENV.iter()) {
            assert_eq!(k1, k2);
            assert_ne!(v1, v2, "{k1}");
        }
    }
}
