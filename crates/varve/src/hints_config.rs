//! The hint settings of cassandra.yaml (docs/design/cluster.md, section
//! 8.5): `hinted_handoff_enabled` (true), `max_hint_window` (3h),
//! `hints_directory` (`<data directory>/hints`), `max_hints_size_per_host`
//! (0: no limit), `hinted_handoff_throttle` (1024KiB, per second) and
//! `hints_flush_period` (10000ms); and Varve's `hints_space_total` (4GiB).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_yaml::Value;
use varve_cluster::hints::HintsConfig;

use crate::sizes::{parse_duration_ms, parse_size_bytes};

/// The hint keys as the file gives them.
#[derive(Debug, Default, Clone)]
pub struct HintsFile {
    pub hinted_handoff_enabled: Option<bool>,
    pub max_hint_window: Option<Value>,
    pub hints_directory: Option<PathBuf>,
    pub max_hints_size_per_host: Option<Value>,
    pub hinted_handoff_throttle: Option<Value>,
    pub hints_flush_period: Option<Value>,
    pub hints_space_total: Option<Value>,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The resolved settings, hints under `data_dir` unless the file says.
pub fn resolve(file: &HintsFile, data_dir: &Path) -> anyhow::Result<HintsConfig> {
    let mut c = HintsConfig::new(
        file.hints_directory
            .clone()
            .unwrap_or_else(|| data_dir.join("hints")),
    );
    if let Some(on) = file.hinted_handoff_enabled {
        c.enabled = on;
    }
    if let Some(v) = &file.max_hint_window {
        c.max_window = Duration::from_millis(duration_ms("max_hint_window", v)?);
    }
    if let Some(v) = &file.hints_flush_period {
        let ms = duration_ms("hints_flush_period", v)?;
        anyhow::ensure!(ms > 0, "hints_flush_period must be above zero");
        c.flush_period = Duration::from_millis(ms);
    }
    if let Some(v) = &file.max_hints_size_per_host {
        c.max_bytes_per_host = size("max_hints_size_per_host", v, MIB)?;
    }
    if let Some(v) = &file.hints_space_total {
        c.max_bytes_total = size("hints_space_total", v, MIB)?;
    }
    if let Some(v) = &file.hinted_handoff_throttle {
        let per_second = text("hinted_handoff_throttle", v)?;
        let bytes =
            parse_size_bytes(per_second.trim_end_matches("/s"), KIB).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(bytes > 0, "hinted_handoff_throttle must be above zero");
        c.throttle_bytes_per_sec = bytes;
    }
    Ok(c)
}

fn text(key: &str, v: &Value) -> anyhow::Result<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => anyhow::bail!("{key} must be a string or a number"),
    }
}

pub(crate) fn duration_ms(key: &str, v: &Value) -> anyhow::Result<u64> {
    parse_duration_ms(&text(key, v)?)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("{key} must be a duration like 3h"))
}

fn size(key: &str, v: &Value, bare: u64) -> anyhow::Result<u64> {
    parse_size_bytes(&text(key, v)?, bare)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("{key} must be a size like 128MiB"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(yaml: &str) -> HintsFile {
        let v: serde_yaml::Mapping = serde_yaml::from_str(yaml).unwrap();
        let get = |k: &str| v.get(k).cloned();
        HintsFile {
            hinted_handoff_enabled: get("hinted_handoff_enabled").and_then(|v| v.as_bool()),
            max_hint_window: get("max_hint_window"),
            hints_directory: get("hints_directory").and_then(|v| v.as_str().map(PathBuf::from)),
            max_hints_size_per_host: get("max_hints_size_per_host"),
            hinted_handoff_throttle: get("hinted_handoff_throttle"),
            hints_flush_period: get("hints_flush_period"),
            hints_space_total: get("hints_space_total"),
        }
    }

    #[test]
    fn defaults_and_every_key() {
        let d = resolve(&HintsFile::default(), Path::new("/data")).unwrap();
        assert!(d.enabled);
        assert_eq!(d.dir, PathBuf::from("/data/hints"));
        assert_eq!(d.max_window, Duration::from_secs(3 * 3600));
        assert_eq!(d.throttle_bytes_per_sec, 1024 * 1024);
        let c = resolve(
            &file(
                "hinted_handoff_enabled: false\nmax_hint_window: 30m\nhints_directory: /h\n\
                 max_hints_size_per_host: 64MiB\nhinted_handoff_throttle: 512KiB\n\
                 hints_flush_period: 2s\nhints_space_total: 1GiB\n",
            ),
            Path::new("/data"),
        )
        .unwrap();
        assert!(!c.enabled);
        assert_eq!(c.max_window, Duration::from_secs(1800));
        assert_eq!(c.dir, PathBuf::from("/h"));
        assert_eq!(c.max_bytes_per_host, 64 * MIB);
        assert_eq!(c.throttle_bytes_per_sec, 512 * KIB);
        assert_eq!(c.flush_period, Duration::from_secs(2));
        assert_eq!(c.max_bytes_total, 1024 * MIB);
        assert!(resolve(&file("max_hint_window: soon\n"), Path::new("/d")).is_err());
        assert!(resolve(&file("hinted_handoff_throttle: 0\n"), Path::new("/d")).is_err());
    }
}
