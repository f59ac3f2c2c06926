//! `--set KEY=VALUE`: dotted TOML keys edited into the parsed config document before it is
//! resolved, so an override is checked exactly like the same key written in the file.

use super::raw::RawConfig;
use super::settings_json::table_mut;
use super::{closest, ConfigError};
use std::path::Path;
use toml::{Table, Value};

/// One parsed `--set` argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// As given on the command line, for messages and the manifest.
    pub given: String,
    /// `[table]` path (`api`, `evaluation.fields`) or the model's name for `models.<name>.key`.
    pub target: Target,
    pub key: String,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Top,
    Table(Vec<String>),
    Model(String),
}

impl Override {
    /// Parses `KEY=VALUE`. VALUE is read as a TOML value (`48`, `false`, `[0.5, 1.0]`,
    /// `"text"`); anything that is not one is taken as a string (`http://host/v1`).
    pub fn parse(arg: &str) -> Result<Override, String> {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("--set {arg}: expected KEY=VALUE, e.g. --set sampling.n=48"))?;
        let key = key.trim();
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "--set {arg}: `{key}` is not a dotted key like api.base_url"
            ));
        }
        let value = toml::from_str::<Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(value.to_string()));
        let (target, last) = match parts.as_slice() {
            [only] => (Target::Top, *only),
            ["models", rest @ ..] if rest.len() >= 2 => {
                // Model names may hold dots (deepseek-v2.5): all but the last part is the name.
                let (last, name) = rest.split_last().expect("two parts");
                (Target::Model(name.join(".")), *last)
            }
            [path @ .., last] => (
                Target::Table(path.iter().map(|s| s.to_string()).collect()),
                *last,
            ),
            [] => unreachable!("split yields at least one part"),
        };
        Ok(Override {
            given: arg.to_string(),
            target,
            key: last.to_string(),
            value,
        })
    }

    /// The key as the resolver names it in messages: `api.base_url`, `models[2].enabled`.
    fn resolver_name(&self, doc: &Table) -> String {
        match &self.target {
            Target::Top => self.key.clone(),
            Target::Table(p) => format!("{}.{}", p.join("."), self.key),
            Target::Model(name) => match model_index(doc, name) {
                Some(i) => format!("models[{i}].{}", self.key),
                None => format!("models.{name}.{}", self.key),
            },
        }
    }

    fn edit(&self, doc: &mut Table) -> Result<(), String> {
        let table = match &self.target {
            Target::Top => doc,
            Target::Table(path) => {
                if path[0] == "models" {
                    return Err("address a model as models.<name>.<key>".into());
                }
                path.iter().fold(doc, |t, p| table_mut(t, p))
            }
            Target::Model(name) => {
                let i = model_index(doc, name).ok_or_else(|| {
                    let names = model_names(doc);
                    let hint = closest(name, names.iter().map(String::as_str))
                        .map(|s| format!("; did you mean {s}?"))
                        .unwrap_or_default();
                    format!(
                        "no [[models]] entry named {name:?} (models: {}){hint}",
                        names.join(", ")
                    )
                })?;
                let models = doc.get_mut("models").and_then(Value::as_array_mut);
                let entry = models
                    .and_then(|m| m.get_mut(i))
                    .and_then(Value::as_table_mut);
                entry.ok_or("[[models]] is not a list of tables")?
            }
        };
        table.insert(self.key.clone(), self.value.clone());
        Ok(())
    }
}

fn model_names(doc: &Table) -> Vec<String> {
    let models = doc.get("models").and_then(Value::as_array);
    models
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn model_index(doc: &Table, name: &str) -> Option<usize> {
    model_names(doc).iter().position(|n| n == name)
}

/// Applies every override in order, checking the document's shape after each one so that an
/// unknown key or a wrong type is blamed on its `--set`.
pub fn apply(doc: &mut Table, overrides: &[Override], path: &Path) -> Result<(), ConfigError> {
    let invalid = |o: &Override, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: None,
        message: format!("--set {}: {message}", o.given),
    };
    for o in overrides {
        o.edit(doc).map_err(|m| invalid(o, m))?;
        if let Err(e) = Value::Table(doc.clone()).try_into::<RawConfig>() {
            return Err(invalid(o, shape_message(&e.to_string(), &o.key)));
        }
    }
    Ok(())
}

/// A serde message about an edited document, shortened to what the user can act on.
fn shape_message(msg: &str, key: &str) -> String {
    let msg = msg.trim();
    match msg.strip_prefix("unknown field `") {
        Some(rest) => {
            let expected: Vec<&str> = rest.split('`').skip(2).step_by(2).collect();
            let hint = closest(key, expected.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| format!("; valid keys: {}", expected.join(", ")));
            format!("unknown key `{key}`{hint}")
        }
        None => format!("`{key}`: {}", msg.lines().next().unwrap_or(msg)),
    }
}

/// When the resolver rejects a key some `--set` wrote, the error names that `--set` instead of
/// a line of the file.
pub fn blame(err: ConfigError, doc: &Table, overrides: &[Override]) -> ConfigError {
    let ConfigError::Invalid {
        path,
        message,
        line,
    } = err
    else {
        return err;
    };
    for o in overrides.iter().rev() {
        let needle = format!("`{}`:", o.resolver_name(doc));
        let mut rest = message.strip_prefix(&needle);
        if let (None, Target::Model(name)) = (rest, &o.target) {
            // A model's key not written in the file is reported against [api] or [sampling].
            let tail = format!(" (for model {name})");
            rest = ["api", "sampling"]
                .iter()
                .find_map(|t| message.strip_prefix(&format!("`{t}.{}`:", o.key)))
                .and_then(|r| r.strip_suffix(&tail));
        }
        if let Some(rest) = rest {
            return ConfigError::Invalid {
                path,
                line: None,
                message: format!("--set {}:{rest}", o.given),
            };
        }
    }
    ConfigError::Invalid {
        path,
        message,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_or_else_text() {
        let o = Override::parse("sampling.n=48").unwrap();
        assert_eq!(o.target, Target::Table(vec!["sampling".into()]));
        assert_eq!(o.value, Value::Integer(48));
        let o = Override::parse("api.base_url=http://127.0.0.1:8000/v1").unwrap();
        assert_eq!(o.value, Value::String("http://127.0.0.1:8000/v1".into()));
        let o = Override::parse("models.deepseek-v2.5.enabled=false").unwrap();
        assert_eq!(o.target, Target::Model("deepseek-v2.5".into()));
        assert_eq!(
            (o.key.as_str(), o.value),
            ("enabled", Value::Boolean(false))
        );
        assert!(Override::parse("sampling.n").is_err());
        assert!(Override::parse("sampling..n=1").is_err());
    }
}
