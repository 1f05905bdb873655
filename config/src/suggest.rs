//! The nearest known key of an unknown one.

use crate::keys::KEYS;

/// The key of [`KEYS`] nearest to `unknown`: fewest edits (Levenshtein, ASCII case ignored),
/// ties broken by table order. O(|KEYS| x key length^2).
pub fn nearest_key(unknown: &str) -> &'static str {
    let unknown = unknown.to_ascii_lowercase();
    KEYS.iter()
        .map(|k| {
            (
                strsim::levenshtein(&unknown, &k.name.to_ascii_lowercase()),
                k.name,
            )
        })
        .min_by_key(|(distance, _)| *distance)
        .map_or("", |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::nearest_key;

    #[test]
    fn typos_find_their_key() {
        assert_eq!(nearest_key("rest.prot"), "rest.port");
        assert_eq!(
            nearest_key("taskmanager.numberOfSlots"),
            "taskmanager.numberOfTaskSlots"
        );
        assert_eq!(nearest_key("heartbeat.intervall"), "heartbeat.interval");
        assert_eq!(
            nearest_key("restart-strategy.fixed-delay.attempt"),
            "restart-strategy.fixed-delay.attempts"
        );
        assert_eq!(nearest_key("TASKMANAGER.HOST"), "taskmanager.host");
    }
}
