//! Query strings of the service, parsed by axum's `Query` extractor (serde_urlencoded) into
//! the structs below. Values are read as text and converted here, so that an answer names the
//! parameter and the value; a query string that cannot be read at all is a 400 `bad_query`.

use conflux_graph::load::LoadOptions;
use serde::Deserialize;

use super::api_error::ApiError;

/// `?version=n` of `/plans/{id}/stats` and `/plans/{id}/regions`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct VersionQuery {
    version: Option<String>,
}

impl VersionQuery {
    /// The version asked for; `None` for the latest.
    pub(super) fn version(&self) -> Result<Option<u32>, ApiError> {
        whole_number("version", self.version.as_deref())
    }
}

/// `?parallelism=n&default_parallelism=n` of `POST /plans`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LoadQuery {
    parallelism: Option<String>,
    default_parallelism: Option<String>,
}

impl LoadQuery {
    /// The load options: `parallelism` overrides every vertex (at least 1),
    /// `default_parallelism` is the parallelism of vertices without one (0 reads as 1).
    pub(super) fn options(&self) -> Result<LoadOptions, ApiError> {
        let mut options = LoadOptions::default();
        if let Some(p) = whole_number("parallelism", self.parallelism.as_deref())? {
            if p == 0 {
                return Err(ApiError::bad_query(
                    "query parameter 'parallelism' must be at least 1",
                ));
            }
            options.parallelism = Some(p);
        }
        if let Some(p) = whole_number("default_parallelism", self.default_parallelism.as_deref())? {
            options.default_parallelism = p.max(1);
        }
        Ok(options)
    }
}

/// `?base=n` of `POST /plans/{id}/edits`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct EditQuery {
    base: Option<String>,
}

impl EditQuery {
    /// The version to edit; `None` for the latest.
    pub(super) fn base(&self) -> Result<Option<u32>, ApiError> {
        whole_number("base", self.base.as_deref())
    }
}

/// `?from=n&to=m&allow_non_restored_state` of `/plans/{id}/diff` and `/plans/{id}/compat`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RangeQuery {
    from: Option<String>,
    to: Option<String>,
    allow_non_restored_state: Option<String>,
}

impl RangeQuery {
    /// `(from, to)`: `to` defaults to the latest version, `from` to the one before `to`.
    pub(super) fn range(&self, latest: u32) -> Result<(u32, u32), ApiError> {
        let to = whole_number("to", self.to.as_deref())?.unwrap_or(latest);
        let from = whole_number("from", self.from.as_deref())?
            .unwrap_or_else(|| to.saturating_sub(1).max(1));
        Ok((from, to))
    }

    /// `allow_non_restored_state`, given bare or as `=true`.
    pub(super) fn allow_non_restored_state(&self) -> bool {
        self.allow_non_restored_state
            .as_deref()
            .is_some_and(|v| v == "true" || v.is_empty())
    }
}

/// `?node=n&state=s&ttl=d` of `POST /compiled-plans/ttl`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct TtlQuery {
    node: Option<String>,
    state: Option<String>,
    ttl: Option<String>,
}

impl TtlQuery {
    /// `(node, state, ttl)`, each required; the node is a number.
    pub(super) fn parts(&self) -> Result<(i64, &str, &str), ApiError> {
        let node_text = required("node", &self.node)?;
        let node: i64 = node_text.parse().map_err(|_| {
            ApiError::bad_query(format!(
                "query parameter 'node': '{node_text}' is not a node id"
            ))
        })?;
        Ok((
            node,
            required("state", &self.state)?,
            required("ttl", &self.ttl)?,
        ))
    }
}

/// `?vertex=v&parallelism=p&max_parallelism=m&version=n` of `GET /plans/{id}/rescale`.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RescaleQuery {
    vertex: Option<String>,
    parallelism: Option<String>,
    max_parallelism: Option<String>,
    version: Option<String>,
}

/// A rescale request as read from [`RescaleQuery`].
pub(super) struct RescaleParts<'a> {
    pub(super) vertex: &'a str,
    pub(super) parallelism: u32,
    pub(super) max_parallelism: Option<u64>,
    pub(super) version: Option<u32>,
}

impl RescaleQuery {
    /// The request: `vertex` and `parallelism` required.
    pub(super) fn parts(&self) -> Result<RescaleParts<'_>, ApiError> {
        let missing = |key: &str| {
            ApiError::bad_query(format!(
                "query parameter '{key}' is missing (vertex, parallelism)"
            ))
        };
        let vertex = self.vertex.as_deref().ok_or_else(|| missing("vertex"))?;
        let parallelism = whole_number("parallelism", self.parallelism.as_deref())?
            .ok_or_else(|| missing("parallelism"))?;
        let max = whole_number("max_parallelism", self.max_parallelism.as_deref())?;
        let version = whole_number("version", self.version.as_deref())?;
        Ok(RescaleParts {
            vertex,
            parallelism,
            max_parallelism: max.map(u64::from),
            version,
        })
    }
}

/// A required parameter.
fn required<'a>(key: &str, value: &'a Option<String>) -> Result<&'a str, ApiError> {
    value.as_deref().ok_or_else(|| {
        ApiError::bad_query(format!(
            "query parameter '{key}' is missing (node, state, ttl)"
        ))
    })
}

/// A whole-number parameter, when given.
pub(super) fn whole_number(key: &str, value: Option<&str>) -> Result<Option<u32>, ApiError> {
    value
        .map(|v| {
            v.parse::<u32>().map_err(|_| {
                ApiError::bad_query(format!(
                    "query parameter '{key}': '{v}' is not a whole number"
                ))
            })
        })
        .transpose()
}
