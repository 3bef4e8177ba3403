//! Which version of each OperatorGroup its namespace's CSVs were last asked to look at. A group actor asks its
//! members to decide again when it observes the group (`OperatorGroupActor::requeue_members`); a version they were
//! already asked about is no news: the registry replays the last version to an actor it starts again after a
//! panic or stop, and a relist delivers unchanged versions. Asking again for those made restart storms under chaos
//! (seed 30 of the 100-seed bench: a group and its CSVs restarted about 45 times each in two minutes, each
//! restart's replay requeueing the CSVs, each CSV run asking the group). Kept beside the stores, not in the actor,
//! so it outlives an actor's restart.

use messages::key::ObjectKey;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

#[derive(Default)]
pub struct Announced(Mutex<HashMap<ObjectKey, String>>);

impl Announced {
    /// Whether `version` (the group's `resourceVersion`) of group `key` is news to its members; it is recorded as
    /// told. A version that is not known (`None`) is always news.
    pub fn is_news(&self, key: &ObjectKey, version: Option<&str>) -> bool {
        let Some(version) = version else {
            return true;
        };
        let mut told = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if told.get(key).map(String::as_str) == Some(version) {
            return false;
        }
        told.insert(key.clone(), version.to_string());
        true
    }

    /// The group is gone: a group of that name made later is news whatever its version.
    pub fn forget(&self, key: &ObjectKey) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_news_once_and_a_new_one_again() {
        let told = Announced::default();
        let og = ObjectKey::new("ns", "og");
        let other = ObjectKey::new("ns2", "og");
        assert!(told.is_news(&og, Some("10")), "first sight");
        assert!(
            !told.is_news(&og, Some("10")),
            "the replay to a restarted actor"
        );
        assert!(told.is_news(&other, Some("10")), "another group");
        assert!(told.is_news(&og, Some("11")), "a change");
        assert!(told.is_news(&og, None), "unknown version");
        told.forget(&og);
        assert!(told.is_news(&og, Some("11")), "recreated after it went");
    }
}
