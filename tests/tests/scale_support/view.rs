//! How long the Operator view takes to show a set of Operators with their CSV Succeeded: one watch of the
//! Operators, counting those whose `status.components` carries a `ClusterServiceVersion` with a `Succeeded`
//! condition, until every wanted one does.

use futures::StreamExt;
use kube::Api;
use kube::runtime::watcher::{self, Event};
use messages::crd::operator::Operator;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Whether the Operator shows a CSV of its components Succeeded.
pub fn shows_succeeded(o: &Operator) -> bool {
    o.status
        .as_ref()
        .and_then(|s| s.components.as_ref())
        .is_some_and(|c| {
            c.refs.iter().any(|r| {
                r.object.kind.as_deref() == Some("ClusterServiceVersion")
                    && r.conditions.iter().any(|c| c.type_ == "Succeeded")
            })
        })
}

/// The time until every Operator in `want` shows its CSV Succeeded, failing after `deadline`.
// The scale bench's; the side-by-side bench shares this module without it.
#[allow(dead_code)]
pub async fn caught_up(
    client: &kube::Client,
    mut want: BTreeSet<String>,
    deadline: Duration,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let api: Api<Operator> = Api::all(client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
    let wait = async {
        while !want.is_empty() {
            let Some(event) = events.next().await else {
                anyhow::bail!("the Operator watch ended");
            };
            match event? {
                Event::Apply(o) | Event::InitApply(o) => {
                    if shows_succeeded(&o)
                        && let Some(name) = o.metadata.name.as_deref()
                    {
                        want.remove(name);
                    }
                }
                Event::Delete(_) | Event::Init | Event::InitDone => {}
            }
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(deadline, wait)
        .await
        .map_err(|_| anyhow::anyhow!("the view did not catch up within {deadline:?}"))??;
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use messages::crd::operator::{
        Components, OperatorComponentCondition, OperatorSpec, OperatorStatus, RichReference,
    };
    use rstest::rstest;

    fn operator(refs: &[(&str, &str)]) -> Operator {
        let mut o = Operator::new("own.ns", OperatorSpec {});
        o.status = Some(OperatorStatus {
            components: Some(Components {
                label_selector: None,
                refs: refs
                    .iter()
                    .map(|(kind, condition)| RichReference {
                        object: ObjectReference {
                            kind: Some((*kind).into()),
                            ..Default::default()
                        },
                        conditions: vec![OperatorComponentCondition {
                            type_: (*condition).into(),
                            status: "True".into(),
                            ..Default::default()
                        }],
                    })
                    .collect(),
            }),
        });
        o
    }

    #[rstest]
    #[case::a_succeeded_csv(&[("Subscription", "CatalogSourcesUnhealthy"), ("ClusterServiceVersion", "Succeeded")], true)]
    #[case::a_csv_installing(&[("ClusterServiceVersion", "Installing")], false)]
    #[case::succeeded_on_another_kind(&[("Deployment", "Succeeded")], false)]
    #[case::no_components(&[], false)]
    fn an_operator_shows_its_csv_succeeded(#[case] refs: &[(&str, &str)], #[case] expected: bool) {
        assert_eq!(shows_succeeded(&operator(refs)), expected);
    }
}
