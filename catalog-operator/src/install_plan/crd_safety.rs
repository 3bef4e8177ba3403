//! CRD upgrade safety (spec §4.6): never drop a stored version, and every existing custom resource of a
//! version served before and after must validate against the new schema ([`super::crd_schema`], every value
//! validation of a structural schema, as the API server applies it on the resource's next write). Pure.

use serde_json::Value;

/// Versions listed in the old CRD's `status.storedVersions` that the new CRD no longer has.
pub fn data_loss(name: &str, old: &Value, new: &Value) -> Option<String> {
    let new_versions: Vec<&str> = new["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect();
    old["status"]["storedVersions"].as_array().into_iter().flatten().filter_map(Value::as_str).find(|v| !new_versions.contains(v)).map(|v| {
        format!("risk of data loss updating {name}: new CRD removes version {v} that is listed as a stored version on the existing CRD")
    })
}

fn served(crd: &Value) -> Vec<(&str, &Value)> {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .filter_map(|v| Some((v["name"].as_str()?, &v["schema"]["openAPIV3Schema"])))
        .collect()
}

/// Versions served by both, with the new schema of each.
pub fn kept_versions<'a>(old: &Value, new: &'a Value) -> Vec<(String, &'a Value)> {
    let before: Vec<&str> = served(old).into_iter().map(|(n, _)| n).collect();
    served(new)
        .into_iter()
        .filter(|(n, _)| before.contains(n))
        .map(|(n, s)| (n.to_string(), s))
        .collect()
}

/// The first violation of `schema` by `value`, as `path: problem` ([`super::crd_schema`]: every value
/// validation of a structural schema).
pub fn validate(
    patterns: &super::crd_schema::Patterns,
    schema: &Value,
    value: &Value,
    path: &str,
) -> Option<String> {
    super::crd_schema::validate(patterns, schema, value, path)
}

/// OLM's error for an existing custom resource the new schema rejects.
pub fn invalid_cr_message(crd: &str, cr: &str, problem: &str) -> String {
    format!(
        "error validating existing CRs against new CRD's schema for {crd}: error validating custom resource against new schema for {cr}: {problem}: updated validation is too restrictive"
    )
}

/// The §4.6 exception: a `apiextensions.k8s.io/v1` CRD whose conversion is `Webhook` may tighten a schema,
/// since the operator's webhook converts existing resources; their validation failure then does not stop the
/// update (OLM proceeds with a `CRDValidation` warning).
pub fn webhook_conversion_excuses(new: &Value) -> bool {
    new["apiVersion"].as_str() == Some("apiextensions.k8s.io/v1")
        && new["spec"]["conversion"]["strategy"].as_str() == Some("Webhook")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn crd(versions: &[(&str, bool)], stored: &[&str]) -> Value {
        let vs: Vec<Value> = versions.iter().map(|(n, s)| json!({"name": n, "served": s, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}})).collect();
        json!({"spec": {"versions": vs}, "status": {"storedVersions": stored}})
    }

    #[rstest]
    #[case::keeping_every_stored_version_is_safe(crd(&[("v1", true)], &["v1"]), crd(&[("v1", true), ("v2", true)], &[]), None)]
    #[case::dropping_a_served_but_never_stored_version_is_safe(crd(&[("v1", true), ("v1beta1", true)], &["v1"]), crd(&[("v1", true)], &[]), None)]
    #[case::dropping_a_stored_version_risks_data_loss(crd(&[("v1alpha1", true), ("v1", true)], &["v1alpha1", "v1"]), crd(&[("v1", true)], &[]),
        Some("risk of data loss updating things.example.com: new CRD removes version v1alpha1 that is listed as a stored version on the existing CRD"))]
    fn stored_versions_must_survive_an_update(
        #[case] old: Value,
        #[case] new: Value,
        #[case] want: Option<&str>,
    ) {
        assert_eq!(data_loss("things.example.com", &old, &new).as_deref(), want);
    }

    #[test]
    fn only_versions_served_before_and_after_are_checked() {
        let new = crd(&[("v1", true), ("v2", true), ("v3", true)], &[]);
        let kept = kept_versions(&crd(&[("v1", true), ("v2", false)], &[]), &new);
        assert_eq!(
            kept.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["v1"]
        );
    }

    #[rstest]
    #[case::a_matching_resource_is_valid(json!({"spec": {"size": 3}}), None)]
    #[case::a_newly_required_field_rejects_old_resources(json!({"spec": {}}), Some(".spec.size: Required value"))]
    #[case::a_wrong_type_is_rejected(json!({"spec": {"size": "three"}}), Some(".spec.size: expected integer"))]
    #[case::a_value_under_the_minimum_is_rejected(json!({"spec": {"size": 0}}), Some(".spec.size: 0 is less than the minimum 1"))]
    fn existing_resources_are_validated_against_the_new_schema(
        #[case] cr: Value,
        #[case] want: Option<&str>,
    ) {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["size"], "properties": {"size": {"type": "integer", "minimum": 1}}}}});
        assert_eq!(
            validate(&Default::default(), &schema, &cr, "").as_deref(),
            want
        );
    }

    #[rstest]
    #[case::a_v1_crd_converting_by_webhook(json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {"strategy": "Webhook"}}}), true)]
    #[case::a_v1_crd_without_conversion(json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {}}), false)]
    #[case::a_v1_crd_converting_with_none(json!({"apiVersion": "apiextensions.k8s.io/v1", "spec": {"conversion": {"strategy": "None"}}}), false)]
    #[case::a_v1beta1_crd_is_never_excused(json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "spec": {"conversion": {"strategy": "Webhook"}}}), false)]
    fn only_v1_webhook_conversion_excuses_a_tighter_schema(
        #[case] new: Value,
        #[case] excused: bool,
    ) {
        assert_eq!(webhook_conversion_excuses(&new), excused);
    }
}
