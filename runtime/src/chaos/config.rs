//! The chaos configuration: the fault kinds, the sites where each can happen, and the parser of
//! `OLM_RS_CHAOS` (`seed=42,panic=0.01,drop=0.02,max_delay_ms=500,only=ClusterServiceVersion|Subscription`).
//! Parse errors are errors (the operator refuses to start), never a silent "chaos off".

use std::collections::BTreeMap;
use std::time::Duration;

/// One kind of fault the injector can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// The actor panics at the start of a run (its mailbox closes; the registry must start it again).
    Panic,
    /// The actor stops itself at the start of a run, as if killed (no `Deleted`: the object still exists).
    Stop,
    /// The run (and so the API writes it makes) starts after a delay, holding the actor's mailbox.
    SlowEffect,
    /// The run is replaced by a transient failure: the writes it was about to make are not made.
    FailEffect,
    /// A message the registry routes (forward, broadcast, resync) is lost.
    Drop,
    /// A routed message is delivered after a delay (up to `max_delay`).
    Delay,
    /// A routed message is delivered twice.
    Duplicate,
    /// A routed message is held a short while (up to `max_delay / 10`), so messages sent after it overtake it.
    Reorder,
}

impl FaultKind {
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Panic,
        FaultKind::Stop,
        FaultKind::SlowEffect,
        FaultKind::FailEffect,
        FaultKind::Drop,
        FaultKind::Delay,
        FaultKind::Duplicate,
        FaultKind::Reorder,
    ];

    /// The name used in `OLM_RS_CHAOS`, the journal and the chaos table.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Panic => "panic",
            FaultKind::Stop => "stop",
            FaultKind::SlowEffect => "slow",
            FaultKind::FailEffect => "fail",
            FaultKind::Drop => "drop",
            FaultKind::Delay => "delay",
            FaultKind::Duplicate => "dup",
            FaultKind::Reorder => "reorder",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.as_str() == name)
            .or(match name {
                "duplicate" => Some(FaultKind::Duplicate),
                _ => None,
            })
    }
}

/// Where a decision is made; each site draws among the fault kinds it can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Site {
    /// The start of a reconcile run (`reconcile::Loop`).
    Run,
    /// A cloneable message the registry delivers (broadcast, resync requeue).
    Deliver,
    /// A `Forward` (its message need not be cloneable: no duplicates).
    Forward,
}

impl Site {
    pub fn as_str(self) -> &'static str {
        match self {
            Site::Run => "run",
            Site::Deliver => "deliver",
            Site::Forward => "forward",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Site::Run, Site::Deliver, Site::Forward]
            .into_iter()
            .find(|s| s.as_str() == name)
    }

    /// The fault kinds this site can make, in the fixed order the draw walks them.
    pub fn kinds(self) -> &'static [FaultKind] {
        match self {
            Site::Run => &[
                FaultKind::Panic,
                FaultKind::Stop,
                FaultKind::SlowEffect,
                FaultKind::FailEffect,
            ],
            Site::Deliver => &[
                FaultKind::Drop,
                FaultKind::Delay,
                FaultKind::Duplicate,
                FaultKind::Reorder,
            ],
            Site::Forward => &[FaultKind::Drop, FaultKind::Delay, FaultKind::Reorder],
        }
    }
}

/// A parsed `OLM_RS_CHAOS`.
#[derive(Clone, Debug, PartialEq)]
pub struct ChaosConfig {
    pub seed: u64,
    /// The probability of each fault kind per decision at its sites (absent: 0).
    pub rates: BTreeMap<FaultKind, f64>,
    /// The longest delay of `delay` and `slow` faults.
    pub max_delay: Duration,
    /// Only actors of these kinds get faults (`None`: every kind).
    pub only: Option<Vec<String>>,
}

/// Why `OLM_RS_CHAOS` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("OLM_RS_CHAOS: `{0}` is not key=value")]
    NotKeyValue(String),
    #[error(
        "OLM_RS_CHAOS: unknown key `{0}` (seed, max_delay_ms, only, all, or a fault kind: panic, stop, slow, fail, drop, delay, dup, reorder)"
    )]
    UnknownKey(String),
    #[error("OLM_RS_CHAOS: `{key}={value}` is not a number")]
    NotANumber { key: String, value: String },
    #[error("OLM_RS_CHAOS: rate `{key}={value}` is outside [0, 1]")]
    RateOutOfRange { key: String, value: String },
    #[error("OLM_RS_CHAOS: the rates of site `{0}` add up to more than 1")]
    SiteOverOne(&'static str),
    #[error("OLM_RS_CHAOS: `{0}` is given twice")]
    Duplicate(String),
    #[error("OLM_RS_CHAOS: no `seed=`: a chaos run must name its seed to be replayed")]
    NoSeed,
}

impl ChaosConfig {
    /// A configuration with every rate at zero.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            rates: BTreeMap::new(),
            max_delay: Duration::from_millis(500),
            only: None,
        }
    }

    pub fn with_rate(mut self, kind: FaultKind, rate: f64) -> Self {
        self.rates.insert(kind, rate);
        self
    }

    pub fn rate(&self, kind: FaultKind) -> f64 {
        self.rates.get(&kind).copied().unwrap_or(0.0)
    }

    /// Whether actors of `kind` get faults.
    pub fn covers(&self, kind: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|k| k == kind))
    }

    /// Parse `key=value` pairs separated by commas. `all=R` sets every fault kind not named explicitly.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let mut seed = None;
        let mut config = ChaosConfig::new(0);
        let mut all = None;
        let mut seen = Vec::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| ConfigError::NotKeyValue(pair.to_string()))?;
            if seen.contains(&key) {
                return Err(ConfigError::Duplicate(key.to_string()));
            }
            seen.push(key);
            let number = || ConfigError::NotANumber {
                key: key.to_string(),
                value: value.to_string(),
            };
            match key {
                "seed" => seed = Some(value.parse::<u64>().map_err(|_| number())?),
                "max_delay_ms" => {
                    config.max_delay =
                        Duration::from_millis(value.parse::<u64>().map_err(|_| number())?);
                }
                "only" => {
                    config.only = Some(
                        value
                            .split('|')
                            .map(str::trim)
                            .filter(|k| !k.is_empty())
                            .map(str::to_string)
                            .collect(),
                    );
                }
                "all" => all = Some(parse_rate(key, value)?),
                other => {
                    let kind = FaultKind::parse(other)
                        .ok_or_else(|| ConfigError::UnknownKey(other.to_string()))?;
                    config.rates.insert(kind, parse_rate(key, value)?);
                }
            }
        }
        if let Some(rate) = all {
            for kind in FaultKind::ALL {
                config.rates.entry(kind).or_insert(rate);
            }
        }
        config.seed = seed.ok_or(ConfigError::NoSeed)?;
        for site in [Site::Run, Site::Deliver, Site::Forward] {
            let sum: f64 = site.kinds().iter().map(|k| config.rate(*k)).sum();
            if sum > 1.0 + 1e-9 {
                return Err(ConfigError::SiteOverOne(site.as_str()));
            }
        }
        Ok(config)
    }

    /// The canonical text of this configuration (parses back to the same configuration).
    pub fn to_text(&self) -> String {
        let mut parts = vec![format!("seed={}", self.seed)];
        for (kind, rate) in &self.rates {
            parts.push(format!("{}={rate}", kind.as_str()));
        }
        parts.push(format!("max_delay_ms={}", self.max_delay.as_millis()));
        if let Some(only) = &self.only {
            parts.push(format!("only={}", only.join("|")));
        }
        parts.join(",")
    }
}

fn parse_rate(key: &str, value: &str) -> Result<f64, ConfigError> {
    let rate = value.parse::<f64>().map_err(|_| ConfigError::NotANumber {
        key: key.to_string(),
        value: value.to_string(),
    })?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(ConfigError::RateOutOfRange {
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    Ok(rate)
}
