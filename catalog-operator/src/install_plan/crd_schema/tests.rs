//! One case per keyword: an existing resource that the tightened schema accepts, and one it refuses.

use super::*;
use rstest::rstest;
use serde_json::json;

fn check(schema: Value, value: Value) -> Option<String> {
    validate(&Patterns::default(), &schema, &value, ".spec.x")
}

#[rstest]
#[case::type_integer(json!({"type": "integer"}), json!(3), json!(3.5), "expected integer")]
#[case::nullable(json!({"type": "string", "nullable": true}), json!(null), json!(1), "expected string")]
#[case::int_or_string(json!({"x-kubernetes-int-or-string": true}), json!("50%"), json!(true), "expected an integer or a string")]
#[case::enumeration(json!({"type": "string", "enum": ["a", "b"]}), json!("a"), json!("c"), "value not in enum")]
#[case::minimum(json!({"type": "integer", "minimum": 1}), json!(1), json!(0), "less than the minimum 1")]
#[case::exclusive_minimum(json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}), json!(2), json!(1), "should be greater than 1")]
#[case::maximum(json!({"type": "number", "maximum": 10}), json!(10), json!(10.5), "more than the maximum 10")]
#[case::exclusive_maximum(json!({"type": "number", "maximum": 10, "exclusiveMaximum": true}), json!(9), json!(10), "should be less than 10")]
#[case::multiple_of(json!({"type": "integer", "multipleOf": 5}), json!(15), json!(12), "multiple of 5")]
#[case::min_length(json!({"type": "string", "minLength": 2}), json!("ab"), json!("a"), "shorter than 2")]
#[case::max_length_counts_characters(json!({"type": "string", "maxLength": 2}), json!("äö"), json!("abc"), "longer than 2")]
#[case::pattern(json!({"type": "string", "pattern": "^[a-z]+$"}), json!("abc"), json!("ABC"), "should match '^[a-z]+$'")]
#[case::format(json!({"type": "string", "format": "date-time"}), json!("2024-01-02T03:04:05Z"), json!("yesterday"), "not a valid date-time")]
#[case::min_items(json!({"type": "array", "minItems": 1}), json!([1]), json!([]), "at least 1 items")]
#[case::max_items(json!({"type": "array", "maxItems": 1}), json!([1]), json!([1, 2]), "at most 1 items")]
#[case::unique_items(json!({"type": "array", "uniqueItems": true}), json!([1, 2]), json!([1, 1]), "[1]: Duplicate value")]
#[case::list_type_set(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}), json!(["a", "b"]), json!(["a", "a"]), "Duplicate value")]
#[case::list_type_map(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}), json!([{"name": "a"}, {"name": "b"}]), json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}]), "Duplicate value: [\"a\"]")]
#[case::items(json!({"type": "array", "items": {"type": "string"}}), json!(["a"]), json!(["a", 1]), ".spec.x[1]: expected string")]
#[case::min_properties(json!({"type": "object", "minProperties": 1}), json!({"a": 1}), json!({}), "at least 1 properties")]
#[case::max_properties(json!({"type": "object", "maxProperties": 1}), json!({"a": 1}), json!({"a": 1, "b": 2}), "at most 1 properties")]
#[case::required(json!({"type": "object", "required": ["size"]}), json!({"size": 1}), json!({}), ".spec.x.size: Required value")]
#[case::properties(json!({"type": "object", "properties": {"size": {"type": "integer"}}}), json!({"size": 1}), json!({"size": "1"}), ".spec.x.size: expected integer")]
#[case::additional_properties_schema(json!({"type": "object", "additionalProperties": {"type": "string"}}), json!({"a": "x"}), json!({"a": 1}), ".spec.x.a: expected string")]
#[case::additional_properties_false(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}), json!({"a": 1}), json!({"a": 1, "b": 2}), ".spec.x.b: Forbidden")]
#[case::embedded_resource(json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}), json!({"apiVersion": "v1", "kind": "Pod"}), json!({"kind": "Pod"}), ".spec.x.apiVersion: Required value")]
#[case::all_of(json!({"allOf": [{"minLength": 1}, {"maxLength": 3}]}), json!("ab"), json!("abcd"), "longer than 3")]
#[case::any_of(json!({"anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}), json!("bee"), json!("cat"), "at least one schema (anyOf)")]
#[case::one_of(json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}), json!({"a": 1}), json!({"a": 1, "b": 2}), "one and only one schema (oneOf); it validates 2")]
#[case::not(json!({"not": {"required": ["legacy"]}}), json!({"a": 1}), json!({"legacy": true}), "must not validate the schema (not)")]
fn each_keyword_accepts_and_refuses(
    #[case] schema: Value,
    #[case] good: Value,
    #[case] bad: Value,
    #[case] problem: &str,
) {
    assert_eq!(check(schema.clone(), good), None);
    let e = check(schema, bad).expect("refused");
    assert!(e.contains(problem), "{e}");
    assert!(e.starts_with(".spec.x"), "{e}");
}

#[rstest]
#[case::byte("byte", "aGVsbG8=", "not base64!")]
#[case::date("date", "2024-02-29", "2023-02-29")]
#[case::date_time("date-time", "2024-01-02T03:04:05.5+01:00", "2024-01-02 03:04")]
#[case::duration("duration", "1h30m", "90 minutes")]
#[case::uuid("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567")]
#[case::uuid4(
    "uuid4",
    "123e4567-e89b-42d3-a456-426614174000",
    "123e4567-e89b-12d3-a456-426614174000"
)]
#[case::email("email", "ops@example.com", "ops.example.com")]
#[case::hostname("hostname", "api.example-1.com", "-bad-.example.com")]
#[case::ipv4("ipv4", "10.0.0.1", "10.0.0.256")]
#[case::ipv6("ipv6", "fd00::1", "fd00:::1")]
#[case::cidr("cidr", "10.0.0.0/8", "10.0.0.0/33")]
#[case::mac("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b")]
#[case::uri("uri", "https://example.com/a", "not a uri")]
#[case::hexcolor("hexcolor", "#a0b1c2", "red")]
fn formats_the_api_server_checks(#[case] format: &str, #[case] good: &str, #[case] bad: &str) {
    assert!(format::valid(format, good), "{format}: {good}");
    assert!(!format::valid(format, bad), "{format}: {bad}");
}

#[test]
fn unknown_formats_and_a_bad_pattern_are_handled() {
    assert!(format::valid("int32", "anything"));
    let e = check(json!({"type": "string", "pattern": "(["}), json!("a")).expect("refused");
    assert!(e.contains("does not compile"), "{e}");
}
