//! Precedence: `-D key=value` over the environment over the file; the flags, above all of them,
//! and the defaults, below, are the CLI's (a key no source sets leaves its flag alone).
//!
//! Cost: O(file entries + -D arguments + |KEYS| x environment look-ups).

use crate::error::{ConfigError, Origin, Warning};
use crate::keys::{find, Command, Key, KEYS};
use crate::secret::{is_sensitive, Secret};
use crate::suggest::nearest_key;
use crate::value::Value;
use crate::yaml;

/// Where settings come from (the CLI reads the file and the environment; this crate does no
/// I/O).
pub struct Sources<'a> {
    /// The configuration file: its path as given (for messages) and its text.
    pub file: Option<(&'a str, &'a str)>,
    /// Looks an environment variable up.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The `-D` arguments in command-line order (a later one wins).
    pub dynamic: &'a [String],
}

/// A key some source sets.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// The key.
    pub key: &'static Key,
    /// Its value.
    pub value: Value,
    /// Where it came from.
    pub origin: Origin,
}

/// What [`resolve`] found.
#[derive(Debug, Default)]
pub struct Resolved {
    /// The keys the command takes that some source sets, in table order.
    pub settings: Vec<Setting>,
    /// Unknown keys and `-D` keys the command does not take.
    pub warnings: Vec<Warning>,
}

impl Resolved {
    /// The setting of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.key.name == name)
    }
}

/// `value` as shown in an error: hidden for a secret.
fn shown(key: &str, secret: bool, value: &str) -> String {
    if secret || is_sensitive(key) {
        Secret::HIDDEN.to_owned()
    } else {
        value.to_owned()
    }
}

fn typed(key: &'static Key, text: &str, origin: &Origin) -> Result<Value, ConfigError> {
    key.ty.parse(text).ok_or_else(|| ConfigError::WrongType {
        origin: origin.clone(),
        key: key.name.to_owned(),
        value: shown(key.name, key.ty == crate::ValueType::Secret, text),
        expected: key.ty.expected(),
    })
}

/// The settings of `command` from `sources`: each key at the highest source that sets it
/// (`-D`, then environment, then file). Every given value of a known key is type-checked,
/// whichever command takes it, so that a shared file with a bad line fails everywhere.
///
/// # Errors
/// [`ConfigError`]: a file that is not a YAML map, a key twice in the file, a `-D` without
/// `=`, a value not of its key's type, two keys setting one flag differently.
pub fn resolve(command: Command, sources: &Sources<'_>) -> Result<Resolved, ConfigError> {
    let mut resolved = Resolved::default();
    // The value of each key of the table, by index, lowest source first.
    let mut values: Vec<Option<(Value, Origin)>> = vec![None; KEYS.len()];
    let index = |name: &str| KEYS.iter().position(|k| k.name == name);

    if let Some((path, text)) = sources.file {
        let entries = yaml::parse(path, text)?;
        let mut seen: Vec<(&str, usize)> = Vec::new();
        for entry in &entries {
            if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == entry.key) {
                return Err(ConfigError::Duplicate {
                    path: path.to_owned(),
                    key: entry.key.clone(),
                    first,
                    second: entry.line,
                });
            }
            seen.push((&entry.key, entry.line));
            let origin = Origin::File {
                path: path.to_owned(),
                line: entry.line,
            };
            match index(&entry.key) {
                Some(i) => values[i] = Some((typed(&KEYS[i], &entry.value, &origin)?, origin)),
                None => resolved.warnings.push(Warning::Unknown {
                    nearest: nearest_key(&entry.key),
                    key: entry.key.clone(),
                    origin,
                }),
            }
        }
    }

    for (i, key) in KEYS.iter().enumerate() {
        let var = key.env_var();
        if let Some(text) = (sources.env)(&var) {
            let origin = Origin::Env(var);
            values[i] = Some((typed(key, &text, &origin)?, origin));
        }
    }

    for argument in sources.dynamic {
        let Some((name, text)) = argument.split_once('=') else {
            return Err(ConfigError::DynamicSyntax {
                argument: shown(argument, false, argument),
            });
        };
        let name = name.trim();
        match index(name) {
            Some(i) => {
                let key = &KEYS[i];
                values[i] = Some((typed(key, text, &Origin::Dynamic)?, Origin::Dynamic));
                if !key.taken_by(command) {
                    resolved.warnings.push(Warning::NotTaken {
                        key: key.name,
                        command: command.name(),
                    });
                }
            }
            None => resolved.warnings.push(Warning::Unknown {
                origin: Origin::Dynamic,
                key: name.to_owned(),
                nearest: nearest_key(name),
            }),
        }
    }

    for (key, value) in KEYS.iter().zip(values) {
        if let (true, Some((value, origin))) = (key.taken_by(command), value) {
            resolved.settings.push(Setting { key, value, origin });
        }
    }
    check_conflicts(&resolved.settings)?;
    Ok(resolved)
}

/// Two settings of one flag must agree.
fn check_conflicts(settings: &[Setting]) -> Result<(), ConfigError> {
    for (i, a) in settings.iter().enumerate() {
        for b in &settings[i + 1..] {
            if a.key.flag.is_some() && a.key.flag == b.key.flag && a.value != b.value {
                return Err(ConfigError::Conflict {
                    first: a.key.name,
                    first_origin: a.origin.clone(),
                    second: b.key.name,
                    second_origin: b.origin.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Whether `name` is a known key.
pub fn is_known(name: &str) -> bool {
    find(name).is_some()
}
