//! The bundle unpack timeout of a namespace: its OperatorGroup's `operatorframework.io/bundle-unpack-timeout`
//! annotation (a Go duration, e.g. `1m30s`), else OLM's default `--bundle-unpack-timeout` of 10 minutes. Pure.

use crate::group_view::GroupView;
use messages::crd::catalog_source::parse_go_duration;
use std::sync::Arc;
use std::time::Duration;

pub const ANNOTATION: &str = "operatorframework.io/bundle-unpack-timeout";
pub const DEFAULT: Duration = Duration::from_secs(600);

/// The timeout an annotation value asks for; `None` when it is absent or not a positive Go duration (then the
/// default applies, as OLM falls back when the value does not parse).
pub fn parse(value: Option<&str>) -> Option<Duration> {
    parse_go_duration(value?.trim())
        .ok()
        .filter(|d| !d.is_zero())
}

pub fn for_namespace(groups: &[Arc<GroupView>], ns: &str) -> Duration {
    let value = groups
        .iter()
        .filter(|g| g.metadata.namespace.as_deref() == Some(ns))
        .find_map(|g| g.metadata.annotations.as_ref()?.get(ANNOTATION).cloned());
    parse(value.as_deref()).unwrap_or(DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::absent(None, None)]
    #[case::minutes(Some("5m"), Some(300))]
    #[case::mixed(Some("1m30s"), Some(90))]
    #[case::zero(Some("0s"), None)]
    #[case::garbage(Some("soon"), None)]
    fn the_annotation_is_a_go_duration(#[case] value: Option<&str>, #[case] secs: Option<u64>) {
        assert_eq!(parse(value), secs.map(Duration::from_secs));
    }
}
