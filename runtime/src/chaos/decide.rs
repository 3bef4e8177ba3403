//! The pure decision: which fault (if any) the `n`-th decision of one object at one site makes. A function of
//! (seed, actor kind, object key, site, n) only: no clock, no global RNG, so a seed replays.

use super::config::{ChaosConfig, FaultKind, Site};
use std::time::Duration;

/// A fault decided for one decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    /// The delay of `delay`, `reorder` and `slow` faults.
    pub delay: Option<Duration>,
}

/// FNV-1a over the bytes, then splitmix64's finaliser (a well-mixed 64-bit hash without a dependency).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A draw in `[0, 1)` for (seed, kind, key, site, n, salt).
pub fn unit(seed: u64, kind: &str, key: &str, site: Site, n: u64, salt: u64) -> f64 {
    let mut h = 0xcbf2_9ce4_8422_2325;
    h = fnv(kind.as_bytes(), h);
    h = fnv(&[0], h);
    h = fnv(key.as_bytes(), h);
    h = fnv(&[0], h);
    h = fnv(site.as_str().as_bytes(), h);
    let z = mix(mix(mix(h ^ seed) ^ n) ^ salt);
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The fault of the `n`-th decision of object `key` (of actor kind `kind`) at `site`, if any.
pub fn decide(config: &ChaosConfig, kind: &str, key: &str, site: Site, n: u64) -> Option<Fault> {
    if !config.covers(kind) {
        return None;
    }
    let draw = unit(config.seed, kind, key, site, n, 0);
    let mut upto = 0.0;
    let chosen = site.kinds().iter().copied().find(|k| {
        upto += config.rate(*k);
        draw < upto
    })?;
    let spread = unit(config.seed, kind, key, site, n, 1);
    let delay = match chosen {
        FaultKind::Delay | FaultKind::SlowEffect => Some(config.max_delay.mul_f64(spread)),
        FaultKind::Reorder => Some((config.max_delay / 10).mul_f64(spread)),
        FaultKind::Panic
        | FaultKind::Stop
        | FaultKind::FailEffect
        | FaultKind::Drop
        | FaultKind::Duplicate => None,
    };
    Some(Fault {
        kind: chosen,
        delay,
    })
}
