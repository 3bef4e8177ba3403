//! Rendering the model as FBC: a JSON stream of `olm.package`, `olm.channel`, `olm.bundle`
//! and `olm.deprecations` documents, keys in alphabetical order as `opm render` writes them.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::model::{Catalog, Package};

/// Re-orders object keys alphabetically at every level.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The FBC documents of one package, in the order package, channels, bundles, deprecations.
pub fn package_documents(pkg: &Package) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut p =
        json!({ "schema": "olm.package", "name": pkg.name, "defaultChannel": pkg.default_channel });
    if let Some(d) = &pkg.description {
        p["description"] = json!(d);
    }
    if let Some(i) = &pkg.icon {
        p["icon"] = json!({ "base64data": i.base64data, "mediatype": i.mediatype });
    }
    docs.push(p);
    for c in pkg.channels.values() {
        let entries: Vec<Value> = c
            .entries
            .iter()
            .map(|e| {
                let mut v = json!({ "name": e.name });
                if let Some(r) = &e.replaces {
                    v["replaces"] = json!(r);
                }
                if !e.skips.is_empty() {
                    v["skips"] = json!(e.skips);
                }
                if let Some(r) = &e.skip_range {
                    v["skipRange"] = json!(r);
                }
                v
            })
            .collect();
        docs.push(json!({ "schema": "olm.channel", "package": pkg.name, "name": c.name, "entries": entries }));
    }
    for b in pkg.bundles.values() {
        let props: Vec<Value> = b
            .properties
            .iter()
            .map(|p| json!({ "type": p.type_, "value": p.value }))
            .collect();
        let mut v = json!({ "schema": "olm.bundle", "package": pkg.name, "name": b.name, "image": b.image, "properties": props });
        if !b.related_images.is_empty() {
            v["relatedImages"] = b
                .related_images
                .iter()
                .map(|r| {
                    if r.name.is_empty() {
                        json!({ "image": r.image })
                    } else {
                        json!({ "name": r.name, "image": r.image })
                    }
                })
                .collect();
        }
        docs.push(v);
    }
    let mut deprecations = Vec::new();
    if let Some(m) = &pkg.deprecation {
        deprecations.push(json!({ "reference": { "schema": "olm.package" }, "message": m }));
    }
    for c in pkg.channels.values() {
        if let Some(m) = &c.deprecation {
            deprecations.push(
                json!({ "reference": { "schema": "olm.channel", "name": c.name }, "message": m }),
            );
        }
    }
    for b in pkg.bundles.values() {
        if let Some(m) = &b.deprecation {
            deprecations.push(
                json!({ "reference": { "schema": "olm.bundle", "name": b.name }, "message": m }),
            );
        }
    }
    if !deprecations.is_empty() {
        docs.push(
            json!({ "schema": "olm.deprecations", "package": pkg.name, "entries": deprecations }),
        );
    }
    docs.into_iter().map(sorted).collect()
}

/// Writes the whole catalog as an indented FBC JSON stream.
pub fn write_json(catalog: &Catalog, out: &mut impl Write) -> io::Result<()> {
    for pkg in catalog.packages.values() {
        for doc in package_documents(pkg) {
            serde_json::to_writer_pretty(&mut *out, &doc)?;
            out.write_all(b"\n")?;
        }
    }
    for c in &catalog.custom {
        serde_json::to_writer_pretty(&mut *out, &sorted(c.blob.clone()))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
