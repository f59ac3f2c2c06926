//! API keys, read from the environment variables the config names (never from a file).

use crate::client::ApiKey;
use crate::config::RunSettings;
use crate::error::BadInput;
use anyhow::Result;
use std::collections::HashMap;

/// Reads each model's API key from its environment variable; a missing one is an error before any request.
pub fn read_keys(settings: &RunSettings) -> Result<HashMap<String, Option<ApiKey>>, BadInput> {
    let mut keys = HashMap::new();
    for m in &settings.models {
        let key = read_key(m.api.api_key_env.as_deref(), &format!("model {}", m.name))?;
        keys.insert(m.name.clone(), key);
    }
    Ok(keys)
}

/// Reads one key; `who` names its user in the error.
pub fn read_key(var: Option<&str>, who: &str) -> Result<Option<ApiKey>, BadInput> {
    let Some(var) = var else { return Ok(None) };
    let state = match std::env::var_os(var) {
        Some(v) => match v.to_str().map(str::trim) {
            Some(k) if !k.is_empty() => return Ok(Some(ApiKey::new(k.to_string()))),
            Some(_) => "is set but empty",
            None => "is not valid UTF-8",
        },
        None => "is not set",
    };
    Err(BadInput::new(format!(
        "environment variable {var} {state} (api_key_env of {who}); export the key in it or run with a config that names another variable"
    )))
}
