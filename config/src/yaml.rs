//! Reads a `config.yaml` in Flink 1.19+'s shape into flat `key = value` entries with their
//! lines: nested maps join their keys with `.` (`rest: {port: 8081}` is `rest.port`), flat dotted
//! keys are taken as they are, and both may be mixed, as Flink's `YamlParserUtils` and
//! `ConfigurationUtils` read them. A list becomes its items joined by `;` (Flink's list-to-string
//! form); a null value (`key:` alone, `~`, `null`) is no entry.
//!
//! Cost: O(text length) time, and memory for the entries only.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::ConfigError;

/// One `key: value` of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The full key (`rest.port`).
    pub key: String,
    /// The value's text as written (a list's items joined by `;`).
    pub value: String,
    /// The 1-based line of the value.
    pub line: usize,
}

enum Frame {
    /// A map whose keys start with `prefix` (empty at the top, else ending with `.`);
    /// `key` holds a key read and waiting for its value.
    Map { prefix: String, key: Option<String> },
    /// A list that is the value of `key`, starting at `line`.
    List {
        key: String,
        line: usize,
        items: Vec<String>,
    },
}

struct Builder {
    frames: Vec<Frame>,
    entries: Vec<Entry>,
    error: Option<(usize, String)>,
}

fn is_null(text: &str, style: TScalarStyle) -> bool {
    style == TScalarStyle::Plain && matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

impl Builder {
    fn fail(&mut self, mark: Marker, message: &str) {
        if self.error.is_none() {
            self.error = Some((mark.line(), message.to_owned()));
        }
    }

    /// The full key waiting for a value in the innermost map, taken.
    fn take_key(&mut self) -> Option<String> {
        match self.frames.last_mut() {
            Some(Frame::Map { prefix, key }) => key.take().map(|k| format!("{prefix}{k}")),
            _ => None,
        }
    }

    fn scalar(&mut self, text: String, style: TScalarStyle, mark: Marker) {
        match self.frames.last_mut() {
            None => self.fail(mark, "the file must be a map of keys"),
            Some(Frame::List { items, .. }) => items.push(text),
            Some(Frame::Map {
                key: key @ None, ..
            }) => *key = Some(text),
            Some(Frame::Map { .. }) => {
                if let Some(key) = self.take_key() {
                    if !is_null(&text, style) {
                        self.entries.push(Entry {
                            key,
                            value: text,
                            line: mark.line(),
                        });
                    }
                }
            }
        }
    }

    fn start_map(&mut self, mark: Marker) {
        match self.frames.last() {
            None => self.frames.push(Frame::Map {
                prefix: String::new(),
                key: None,
            }),
            Some(Frame::Map { key: Some(_), .. }) => {
                if let Some(key) = self.take_key() {
                    self.frames.push(Frame::Map {
                        prefix: format!("{key}."),
                        key: None,
                    });
                }
            }
            Some(Frame::Map { key: None, .. }) => self.fail(mark, "a key must be text, not a map"),
            Some(Frame::List { key, .. }) => {
                let message = format!("{key}: a list of maps is not a configuration value");
                self.fail(mark, &message);
            }
        }
    }

    fn start_list(&mut self, mark: Marker) {
        match self.frames.last() {
            Some(Frame::Map { key: Some(_), .. }) => {
                if let Some(key) = self.take_key() {
                    self.frames.push(Frame::List {
                        key,
                        line: mark.line(),
                        items: Vec::new(),
                    });
                }
            }
            Some(Frame::List { key, .. }) => {
                let message = format!("{key}: a list of lists is not a configuration value");
                self.fail(mark, &message);
            }
            _ => self.fail(mark, "the file must be a map of keys, not a list"),
        }
    }

    fn end(&mut self) {
        if let Some(Frame::List { key, line, items }) = self.frames.pop() {
            self.entries.push(Entry {
                key,
                value: items.join(";"),
                line,
            });
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, style, _, _) => self.scalar(text, style, mark),
            Event::MappingStart(..) => self.start_map(mark),
            Event::SequenceStart(..) => self.start_list(mark),
            Event::MappingEnd | Event::SequenceEnd => self.end(),
            Event::Alias(_) => self.fail(mark, "YAML aliases are not supported"),
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

/// The entries of `text` in file order (duplicates kept; [`crate::resolve`] refuses them).
///
/// # Errors
/// [`ConfigError::Yaml`] naming `path` and the line for text that is not YAML or not a map of
/// keys (a list at the top, a list of maps, an alias).
pub fn parse(path: &str, text: &str) -> Result<Vec<Entry>, ConfigError> {
    let mut builder = Builder {
        frames: Vec::new(),
        entries: Vec::new(),
        error: None,
    };
    Parser::new_from_str(text)
        .load(&mut builder, false)
        .map_err(|e| ConfigError::Yaml {
            path: path.to_owned(),
            line: e.marker().line(),
            message: e.info().to_owned(),
        })?;
    match builder.error {
        Some((line, message)) => Err(ConfigError::Yaml {
            path: path.to_owned(),
            line,
            message,
        }),
        None => Ok(builder.entries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, String, usize)> {
        parse("config.yaml", text)
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.value, e.line))
            .collect()
    }

    fn e(key: &str, value: &str, line: usize) -> (String, String, usize) {
        (key.into(), value.into(), line)
    }

    #[test]
    fn nested_and_flat_keys_flatten_alike() {
        let nested = "rest:\n  port: 0\n  address: 127.0.0.1\nheartbeat:\n  timeout: 5 s\n";
        let flat = "rest.port: 0\nrest.address: 127.0.0.1\nheartbeat.timeout: 5 s\n";
        let keys = |v: Vec<(String, String, usize)>| {
            v.into_iter().map(|(k, v, _)| (k, v)).collect::<Vec<_>>()
        };
        assert_eq!(keys(entries(nested)), keys(entries(flat)));
        assert_eq!(
            entries(nested),
            vec![
                e("rest.port", "0", 2),
                e("rest.address", "127.0.0.1", 3),
                e("heartbeat.timeout", "5 s", 5)
            ]
        );
    }

    #[test]
    fn mixed_lists_nulls_and_comments() {
        let text = "# Flink's shape\nrestart-strategy:\n  type: fixed-delay\n  fixed-delay.attempts: 3\nenv.java.opts: [a, b]\nblob.storage.directory:\nx: ~\n";
        assert_eq!(
            entries(text),
            vec![
                e("restart-strategy.type", "fixed-delay", 3),
                e("restart-strategy.fixed-delay.attempts", "3", 4),
                e("env.java.opts", "a;b", 5),
            ]
        );
        assert_eq!(entries(""), vec![]);
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse("c.yaml", "rest:\n  port: 1\n bad: [\n").unwrap_err();
        assert!(matches!(err, ConfigError::Yaml { line: 3, .. }), "{err}");
        let err = parse("c.yaml", "- a\n- b\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml line 1: the file must be a map of keys, not a list"
        );
        let err = parse("c.yaml", "a: 1\nl:\n  - x: 1\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("c.yaml line 3: l: a list of maps"),
            "{err}"
        );
    }
}
