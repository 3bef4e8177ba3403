//! Synthetic catalogs for benchmarks: a package copied under a new name, with its
//! `olm.package` and `olm.package.required` properties renamed consistently.

use catalog::{Package, PropertyType};
use serde_json::Value;

/// `pkg` renamed to `new_name`; required packages among `known` are renamed with `rename`.
pub fn renamed(
    pkg: &Package,
    new_name: &str,
    known: &[String],
    rename: &dyn Fn(&str) -> String,
) -> Package {
    let mut p = pkg.clone();
    p.name = new_name.to_string();
    for b in p.bundles.values_mut() {
        b.package = new_name.to_string();
        for prop in &mut b.properties {
            match prop.kind() {
                PropertyType::Package => {
                    prop.value["packageName"] = Value::String(new_name.to_string())
                }
                PropertyType::PackageRequired => {
                    if let Some(req) = prop.value.get("packageName").and_then(Value::as_str)
                        && known.iter().any(|k| k == req)
                    {
                        prop.value["packageName"] = Value::String(rename(req));
                    }
                }
                _ => {}
            }
        }
    }
    p
}
