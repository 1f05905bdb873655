//! Slow TaskManagers: a seeded choice of TaskManagers whose tasks take a fixed factor longer,
//! the situation speculative execution is for (a node with a failing disk or a noisy
//! neighbour).

use std::collections::HashSet;

use conflux_common::SplitMix64;

/// Which TaskManagers of a simulation are slow, and how slow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowTaskManagers {
    /// How many of the TaskManagers started with the job are slow (at most all of them);
    /// replacements of lost TaskManagers are never slow.
    pub count: u32,
    /// Each task on a slow TaskManager takes this many times its drawn duration (1.0: not
    /// slow); at least 1.
    pub slowdown: f64,
}

impl Default for SlowTaskManagers {
    fn default() -> Self {
        SlowTaskManagers {
            count: 0,
            slowdown: 1.0,
        }
    }
}

/// Salt of the choice's generator: the choice has a generator of its own, so the durations and
/// faults drawn from the simulation's seed are the same with or without slow TaskManagers.
const CHOICE_SALT: u64 = 0x5106_7a5c_d0e5_7a11;

impl SlowTaskManagers {
    /// The slow TaskManagers among `0..task_managers`, chosen from `seed` (a partial
    /// Fisher-Yates shuffle: every set of `count` equally likely). O(task managers).
    pub fn choose(&self, seed: u64, task_managers: u32) -> HashSet<u32> {
        let count = self.count.min(task_managers);
        if count == 0 {
            return HashSet::new();
        }
        let mut rng = SplitMix64::new(seed ^ CHOICE_SALT);
        let mut ids: Vec<u32> = (0..task_managers).collect();
        for i in 0..count as usize {
            let rest = (ids.len() - i) as u64;
            let j = i + usize::try_from(rng.below(rest)).unwrap_or(0);
            ids.swap(i, j);
        }
        ids.truncate(count as usize);
        ids.into_iter().collect()
    }

    /// A drawn duration as it runs on a slow TaskManager, ms (rounded to the nearest ms).
    pub fn slowed(&self, duration_ms: u64) -> u64 {
        scale(duration_ms, self.slowdown.max(1.0))
    }
}

/// `ms x factor`, rounded, saturating.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn scale(ms: u64, factor: f64) -> u64 {
    // `as` saturates (and factor >= 1 here), so no overflow.
    (ms as f64 * factor).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_seeded_and_of_the_asked_size() {
        let slow = SlowTaskManagers {
            count: 50,
            slowdown: 10.0,
        };
        let a = slow.choose(7, 1_000);
        assert_eq!(a.len(), 50);
        assert!(a.iter().all(|&tm| tm < 1_000));
        assert_eq!(a, slow.choose(7, 1_000), "same seed, same choice");
        assert_ne!(a, slow.choose(8, 1_000), "another seed, another choice");
        assert_eq!(slow.choose(7, 20).len(), 20, "at most every TaskManager");
        assert!(SlowTaskManagers::default().choose(7, 1_000).is_empty());
    }

    #[test]
    fn a_slow_task_takes_the_factor_longer() {
        let slow = SlowTaskManagers {
            count: 1,
            slowdown: 10.0,
        };
        assert_eq!(slow.slowed(1_234), 12_340);
        let odd = SlowTaskManagers {
            count: 1,
            slowdown: 1.5,
        };
        assert_eq!(odd.slowed(1_001), 1_502);
        let below_one = SlowTaskManagers {
            count: 1,
            slowdown: 0.5,
        };
        assert_eq!(below_one.slowed(1_000), 1_000);
    }
}
