//! The operations of `packages.operators.coreos.com/v1` as the OpenAPI documents describe them, once for both
//! versions: list (all namespaces or one), get, and watch (the `watch` parameter of a list, and the deprecated
//! `/watch/` paths), each with the query parameters the server honours, its response model and media types,
//! its `x-kubernetes-action` and the `x-kubernetes-group-version-kind` `kubectl explain` looks a resource up by.

use crate::schema::{list_model, manifest_model, watch_event_model};
use crate::types::{GROUP, KIND, RESOURCE, VERSION};

/// The `x-kubernetes-action` of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    List,
    Get,
    WatchList,
    Watch,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::List => "list",
            Action::Get => "get",
            Action::WatchList => "watchlist",
            Action::Watch => "watch",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Part of the path: always required.
    Path,
    Query,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParameterType {
    String,
    Integer,
    Boolean,
}

impl ParameterType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParameterType::String => "string",
            ParameterType::Integer => "integer",
            ParameterType::Boolean => "boolean",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    pub name: &'static str,
    pub location: Location,
    pub description: &'static str,
    pub kind: ParameterType,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub path: String,
    pub action: Action,
    pub operation_id: String,
    pub description: &'static str,
    /// The model name of the 200 answer.
    pub response_model: String,
    pub produces: &'static [&'static str],
    pub parameters: Vec<Parameter>,
}

/// The tag of every operation, as kube-openapi names a group-version's tag.
pub const TAG: &str = "packagesOperatorsCoreosCom_v1";
const ID_INFIX: &str = "PackagesOperatorsCoreosComV1";
const JSON: &[&str] = &["application/json"];
const JSON_AND_STREAM: &[&str] = &["application/json", "application/json;stream=watch"];

const NAMESPACE: Parameter = Parameter {
    name: "namespace",
    location: Location::Path,
    description: "object name and auth scope, such as for teams and projects",
    kind: ParameterType::String,
};
const NAME: Parameter = Parameter {
    name: "name",
    location: Location::Path,
    description: "name of the PackageManifest",
    kind: ParameterType::String,
};

/// The query parameters of lists and watches that the server honours.
fn list_parameters() -> Vec<Parameter> {
    vec![
        Parameter {
            name: "fieldSelector",
            location: Location::Query,
            description: "A selector to restrict the list of returned objects by their fields: metadata.name and metadata.namespace. Defaults to everything.",
            kind: ParameterType::String,
        },
        Parameter {
            name: "labelSelector",
            location: Location::Query,
            description: "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
            kind: ParameterType::String,
        },
        Parameter {
            name: "resourceVersion",
            location: Location::Query,
            description: "For a watch, the version after which changes are sent; unset or \"0\", the current objects are sent first.",
            kind: ParameterType::String,
        },
        Parameter {
            name: "timeoutSeconds",
            location: Location::Query,
            description: "Timeout for the watch call, regardless of any activity or inactivity (30 minutes when unset).",
            kind: ParameterType::Integer,
        },
        Parameter {
            name: "watch",
            location: Location::Query,
            description: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
            kind: ParameterType::Boolean,
        },
    ]
}

fn with(mut first: Vec<Parameter>, rest: Vec<Parameter>) -> Vec<Parameter> {
    first.extend(rest);
    first
}

/// Every operation of the group-version, in a stable order.
pub fn operations() -> Vec<Operation> {
    let base = format!("/apis/{GROUP}/{VERSION}");
    vec![
        Operation {
            path: format!("{base}/{RESOURCE}"),
            action: Action::List,
            operation_id: format!("list{ID_INFIX}{KIND}ForAllNamespaces"),
            description: "list or watch objects of kind PackageManifest",
            response_model: list_model(),
            produces: JSON_AND_STREAM,
            parameters: list_parameters(),
        },
        Operation {
            path: format!("{base}/namespaces/{{namespace}}/{RESOURCE}"),
            action: Action::List,
            operation_id: format!("list{ID_INFIX}Namespaced{KIND}"),
            description: "list or watch objects of kind PackageManifest",
            response_model: list_model(),
            produces: JSON_AND_STREAM,
            parameters: with(vec![NAMESPACE], list_parameters()),
        },
        Operation {
            path: format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"),
            action: Action::Get,
            operation_id: format!("read{ID_INFIX}Namespaced{KIND}"),
            description: "read the specified PackageManifest",
            response_model: manifest_model(),
            produces: JSON,
            parameters: vec![NAME, NAMESPACE],
        },
        Operation {
            path: format!("{base}/watch/{RESOURCE}"),
            action: Action::WatchList,
            operation_id: format!("watch{ID_INFIX}{KIND}ListForAllNamespaces"),
            description: "watch individual changes to a list of PackageManifest. deprecated: use the 'watch' parameter with a list operation instead.",
            response_model: watch_event_model(),
            produces: JSON_AND_STREAM,
            parameters: list_parameters(),
        },
        Operation {
            path: format!("{base}/watch/namespaces/{{namespace}}/{RESOURCE}"),
            action: Action::WatchList,
            operation_id: format!("watch{ID_INFIX}Namespaced{KIND}List"),
            description: "watch individual changes to a list of PackageManifest. deprecated: use the 'watch' parameter with a list operation instead.",
            response_model: watch_event_model(),
            produces: JSON_AND_STREAM,
            parameters: with(vec![NAMESPACE], list_parameters()),
        },
        Operation {
            path: format!("{base}/watch/namespaces/{{namespace}}/{RESOURCE}/{{name}}"),
            action: Action::Watch,
            operation_id: format!("watch{ID_INFIX}Namespaced{KIND}"),
            description: "watch changes to an object of kind PackageManifest. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
            response_model: watch_event_model(),
            produces: JSON_AND_STREAM,
            parameters: with(vec![NAME, NAMESPACE], list_parameters()),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::{Route, route};
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn concrete(path: &str) -> String {
        path.replace("{namespace}", "team")
            .replace("{name}", "etcd")
    }

    #[rstest]
    #[case::list_all(0, Route::List { namespace: None, watch: false, name: None })]
    #[case::list_ns(1, Route::List { namespace: Some("team".into()), watch: false, name: None })]
    #[case::get(2, Route::Get { namespace: "team".into(), name: "etcd".into() })]
    #[case::watch_all(3, Route::List { namespace: None, watch: true, name: None })]
    #[case::watch_ns(4, Route::List { namespace: Some("team".into()), watch: true, name: None })]
    #[case::watch_one(5, Route::List { namespace: Some("team".into()), watch: true, name: Some("etcd".into()) })]
    fn every_documented_path_is_served_as_documented(#[case] index: usize, #[case] want: Route) {
        let op = &operations()[index];
        assert_eq!(
            route(&concrete(&op.path), &BTreeMap::new()),
            want,
            "{}",
            op.path
        );
    }

    #[test]
    fn path_parameters_are_exactly_the_placeholders_of_the_path() {
        for op in operations() {
            let mut placeholders: Vec<&str> = op
                .path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .collect();
            let mut params: Vec<&str> = op
                .parameters
                .iter()
                .filter(|p| p.location == Location::Path)
                .map(|p| p.name)
                .collect();
            placeholders.sort();
            params.sort();
            assert_eq!(placeholders, params, "{}", op.path);
        }
    }

    #[test]
    fn operation_ids_are_unique() {
        let ops = operations();
        let mut ids: Vec<&str> = ops.iter().map(|o| o.operation_id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), ops.len());
    }
}
