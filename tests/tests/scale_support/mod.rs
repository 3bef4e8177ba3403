//! What the scale bench measures beside the cluster: API requests per operator from the apiserver's audit log
//! (`OLM_RS_AUDIT=1 hack/control-plane.sh up`; our clients send `User-Agent: olm-rs/<binary>/<version>`), and a
//! process's RSS and CPU seconds from /proc.

pub mod view;

use std::collections::BTreeMap;
use std::io::{BufRead, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Requests per (component, verb, resource), e.g. ("olm-operator", "list", "deployments") → 12. The resource is
/// `resource/subresource` when a subresource was asked for (`clusterserviceversions/status`).
pub type Counts = BTreeMap<(String, String, String), u64>;

/// OLM v0's commands, which send client-go's default user agent, `<command>/<version> (<os>/<arch>) …`.
const OLM_V0_COMMANDS: [&str; 2] = ["olm", "catalog"];

/// The component an audit event came from, by its user agent: `olm-operator` for `olm-rs/olm-operator/…`, and
/// OLM v0's `olm` and `catalog` commands by name (the side-by-side bench); `None` for anyone else.
pub fn component(user_agent: &str) -> Option<&str> {
    if let Some(ours) = user_agent.strip_prefix("olm-rs/") {
        return ours.split('/').next().filter(|c| !c.is_empty());
    }
    let command = user_agent.split('/').next()?;
    (user_agent.len() > command.len() && OLM_V0_COMMANDS.contains(&command)).then_some(command)
}

/// Count one audit log line: each request once (a watch when its response starts, anything else when it
/// completes). Lines that are not audit events are ignored.
pub fn count_line(line: &str, counts: &mut Counts) {
    let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
        return;
    };
    let field = |k: &str| event.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let object = |k: &str| {
        event
            .get("objectRef")
            .and_then(|o| o.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    };
    let (verb, stage) = (field("verb"), field("stage"));
    let counted = match verb {
        "watch" => stage == "ResponseStarted",
        _ => stage == "ResponseComplete",
    };
    if !counted {
        return;
    }
    let resource = match (object("resource"), object("subresource")) {
        (r, "") => r.to_owned(),
        (r, sub) => format!("{r}/{sub}"),
    };
    if let Some(c) = component(field("userAgent")) {
        *counts
            .entry((c.to_owned(), verb.to_owned(), resource))
            .or_default() += 1;
    }
}

/// A reader of the audit log from a point on.
pub struct AuditLog {
    path: PathBuf,
    offset: u64,
}

impl AuditLog {
    /// Start counting from the log's current end.
    pub fn from_now(path: &Path) -> anyhow::Result<Self> {
        let offset = std::fs::metadata(path)?.len();
        Ok(Self {
            path: path.to_owned(),
            offset,
        })
    }

    /// Requests logged since the last call (or since `from_now`).
    pub fn take(&mut self) -> anyhow::Result<Counts> {
        let mut file = std::fs::File::open(&self.path)?;
        let len = file.metadata()?.len();
        if len < self.offset {
            self.offset = 0; // rotated
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut counts = Counts::new();
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        let mut read = 0u64;
        loop {
            line.clear();
            let n = reader.read_line(&mut line)?;
            if n == 0 || !line.ends_with('\n') {
                break; // a line still being written is read next time
            }
            read += n as u64;
            count_line(&line, &mut counts);
        }
        self.offset += read;
        Ok(counts)
    }
}

/// Total requests of one component.
pub fn total(counts: &Counts, component: &str) -> u64 {
    counts
        .iter()
        .filter(|((c, _, _), _)| c == component)
        .map(|(_, n)| n)
        .sum()
}

/// `get 3, list 5 …` for one component.
pub fn by_verb(counts: &Counts, component: &str) -> String {
    let mut verbs: BTreeMap<&str, u64> = BTreeMap::new();
    for ((c, v, _), n) in counts {
        if c == component {
            *verbs.entry(v).or_default() += n;
        }
    }
    joined(verbs.iter().map(|(v, n)| format!("{v} {n}")))
}

/// `create events 4, get deployments 1 …` for one component: where its requests went.
pub fn by_resource(counts: &Counts, component: &str) -> String {
    joined(
        counts
            .iter()
            .filter(|((c, _, _), _)| c == component)
            .map(|((_, v, r), n)| format!("{v} {r} {n}")),
    )
}

/// Writes (every verb but get, list and watch) of one component to one resource and its subresources.
pub fn writes(counts: &Counts, component: &str, resource: &str) -> u64 {
    counts
        .iter()
        .filter(|((c, v, r), _)| {
            c == component
                && !matches!(v.as_str(), "get" | "list" | "watch")
                && (r == resource || r.strip_prefix(resource).is_some_and(|s| s.starts_with('/')))
        })
        .map(|(_, n)| n)
        .sum()
}

fn joined(parts: impl Iterator<Item = String>) -> String {
    let parts: Vec<String> = parts.collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// Anonymous RSS in KiB (`RssAnon`: the heap and stacks, without the binary's code pages that RSS also
/// counts, which the kernel shares and can drop) of a process.
pub fn rss_anon(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// RSS in KiB and CPU seconds (user + system) of a process.
pub fn rss_and_cpu(pid: u32) -> Option<(u64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some((rss, ticks / 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_told_apart_by_user_agent() {
        assert_eq!(component("olm-rs/olm-operator/0.1.0"), Some("olm-operator"));
        assert_eq!(
            component("olm-rs/catalog-operator/0.1.0"),
            Some("catalog-operator")
        );
        assert_eq!(component("kubectl/v1.20.2 (linux/amd64)"), None);
        assert_eq!(component("olm-rs/"), None);
        assert_eq!(
            component("olm/v0.0.0-master+$Format:%H$ (linux/amd64) kubernetes/$Format"),
            Some("olm")
        );
        assert_eq!(
            component("catalog/v0.0.0 (linux/amd64) kubernetes/$Format"),
            Some("catalog")
        );
        assert_eq!(component("olm"), None);
        assert_eq!(component("catalogd/v1 (linux/amd64)"), None);
    }

    #[test]
    fn each_request_is_counted_once() {
        let mut counts = Counts::new();
        for line in [
            r#"{"stage":"ResponseComplete","verb":"get","userAgent":"olm-rs/olm-operator/0.1.0","objectRef":{"resource":"clusterserviceversions","subresource":"status"}}"#,
            r#"{"stage":"ResponseStarted","verb":"watch","userAgent":"olm-rs/olm-operator/0.1.0","objectRef":{"resource":"deployments"}}"#,
            r#"{"stage":"ResponseComplete","verb":"watch","userAgent":"olm-rs/olm-operator/0.1.0"}"#,
            r#"{"stage":"ResponseComplete","verb":"create","userAgent":"olm-rs/catalog-operator/0.1.0"}"#,
            r#"{"stage":"ResponseComplete","verb":"get","userAgent":"kubectl/v1.20.2"}"#,
            "not json",
        ] {
            count_line(line, &mut counts);
        }
        assert_eq!(total(&counts, "olm-operator"), 2);
        assert_eq!(by_verb(&counts, "olm-operator"), "get 1, watch 1");
        assert_eq!(by_verb(&counts, "catalog-operator"), "create 1");
        assert_eq!(by_verb(&counts, "package-server"), "-");
        assert_eq!(
            by_resource(&counts, "olm-operator"),
            "get clusterserviceversions/status 1, watch deployments 1"
        );
    }

    #[test]
    fn writes_count_every_verb_but_reads_on_a_resource_and_its_subresources() {
        let mut counts = Counts::new();
        for (verb, resource) in [
            ("create", "operators"),
            ("patch", "operators/status"),
            ("patch", "operators/status"),
            ("get", "operators"),
            ("list", "operators"),
            ("watch", "operators"),
            ("patch", "operatorgroups"),
        ] {
            counts.insert(("olm-operator".into(), verb.into(), resource.into()), 1);
        }
        counts.insert(
            (
                "olm-operator".into(),
                "patch".into(),
                "operators/status".into(),
            ),
            2,
        );
        assert_eq!(writes(&counts, "olm-operator", "operators"), 3);
        assert_eq!(writes(&counts, "catalog-operator", "operators"), 0);
    }

    #[test]
    fn this_process_has_an_rss_and_cpu_time() {
        let (rss, cpu) = rss_and_cpu(std::process::id()).expect("own /proc entry");
        assert!(rss > 0 && cpu >= 0.0);
        let anon = rss_anon(std::process::id()).expect("own RssAnon");
        assert!(anon > 0 && anon <= rss, "{anon} of {rss}");
    }
}
