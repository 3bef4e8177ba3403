//! Which namespaces an operator watches (`--watched-namespaces`): the whole cluster or a list.

/// Which namespaces the operator watches.
#[derive(Clone, Debug)]
pub enum Scope {
    Cluster,
    Namespaces(Vec<String>),
}

impl Scope {
    pub fn from_list(list: Option<Vec<String>>) -> Self {
        match list {
            Some(ns) => Scope::Namespaces(ns),
            None => Scope::Cluster,
        }
    }

    pub fn contains(&self, namespace: Option<&str>) -> bool {
        match (self, namespace) {
            (Scope::Cluster, _) | (_, None) => true,
            (Scope::Namespaces(list), Some(ns)) => list.iter().any(|n| n == ns),
        }
    }
}
