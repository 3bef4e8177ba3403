//! Whether a namespace's resolution run is background work. A global catalog's fan-out resolves every subscribed
//! namespace at once (1,000 of them beside 1,000 operators); run all together, they hold up the resolution of a new
//! Subscription for seconds. A run whose only causes since the last one are catalog changes is background: it
//! waits for one of `crate::shared::BACKGROUND_RUNS` permits. Any other cause (a Subscription's want, a fetched bundle, a plan,
//! CSV or group change, the loop's own timer) makes the run foreground: it never waits. Pure.

/// What one cause of a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    CatalogChanged,
    Other,
}

/// The causes heard since the last run started.
#[derive(Debug, Default, Clone, Copy)]
pub struct Causes {
    catalog: bool,
    other: bool,
}

impl Causes {
    pub fn heard(&mut self, cause: Heard) {
        match cause {
            Heard::CatalogChanged => self.catalog = true,
            Heard::Other => self.other = true,
        }
    }

    /// A run starts: whether it is background (catalog changes only), and forget the causes.
    pub fn take_background(&mut self) -> bool {
        let background = self.catalog && !self.other;
        *self = Self::default();
        background
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::catalog_changes_only(&[Heard::CatalogChanged, Heard::CatalogChanged], true)]
    #[case::a_want_beside_a_catalog_change(&[Heard::CatalogChanged, Heard::Other], false)]
    #[case::a_want_only(&[Heard::Other], false)]
    #[case::no_cause_heard_the_loops_own_timer(&[], false)]
    fn only_catalog_changes_make_a_background_run(#[case] heard: &[Heard], #[case] want: bool) {
        let mut causes = Causes::default();
        for h in heard {
            causes.heard(*h);
        }
        assert_eq!(causes.take_background(), want);
        assert!(
            !causes.take_background(),
            "the causes are forgotten when a run starts"
        );
    }
}
