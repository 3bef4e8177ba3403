//! The label OLM puts on the objects of a CatalogSource (`olm.catalogSource: <name>`), which catalog-operator
//! still reads and writes on ConfigMap catalogs. olm-rs creates no registry Pod, Service or ServiceAccount for a
//! CatalogSource with an `image`: it pulls the catalog image and serves it in-process (README, "Catalog images").

pub const CATALOG_SOURCE_LABEL: &str = "olm.catalogSource";
