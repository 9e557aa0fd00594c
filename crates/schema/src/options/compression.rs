//! The `compression` table option: sstable chunk compressor, chunk size and minimum ratio.
//!
//! Cassandra 5.0 only knows the 4.0+ sub-option names (`class`, `chunk_length_in_kb`,
//! `enabled`, `min_compress_ratio`, plus compressor-specific ones). The pre-4.0 names
//! `sstable_compression` and `chunk_length_kb`, and `crc_check_chance` inside the map (now a
//! table option of its own), are refused like any unknown sub-option.

use super::java::{double_to_string, parse_double, parse_int};
use super::{config, Result};
use std::collections::BTreeMap;

const CLASS: &str = "class";
const CHUNK_LENGTH_IN_KB: &str = "chunk_length_in_kb";
const ENABLED: &str = "enabled";
const MIN_COMPRESS_RATIO: &str = "min_compress_ratio";
const COMPRESSOR_PACKAGE: &str = "org.apache.cassandra.io.compress.";

/// Default chunk length: 16 KiB.
pub const DEFAULT_CHUNK_LENGTH_KB: i32 = 16;
/// Largest `chunk_length_in_kb` whose byte length still fits a Java `int`.
pub const MAX_CHUNK_LENGTH_KB: i32 = i32::MAX / 1024;
/// LZ4 high-compression levels accepted by Cassandra.
const LZ4_HIGH_LEVEL_MIN: i32 = 1;
const LZ4_HIGH_LEVEL_MAX: i32 = 17;
/// Zstd levels accepted by the zstd library Cassandra binds (`ZSTD_minCLevel()..=22`).
const ZSTD_LEVEL_MIN: i32 = -131_072;
const ZSTD_LEVEL_MAX: i32 = 22;

/// The sstable chunk compressors of Cassandra 5.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionAlgorithm {
    Lz4,
    Snappy,
    Deflate,
    Zstd,
    /// Chunked layout without compression.
    Noop,
}

impl CompressionAlgorithm {
    const ALL: [CompressionAlgorithm; 5] = [
        CompressionAlgorithm::Lz4,
        CompressionAlgorithm::Snappy,
        CompressionAlgorithm::Deflate,
        CompressionAlgorithm::Zstd,
        CompressionAlgorithm::Noop,
    ];

    /// Simple class name, e.g. `LZ4Compressor`.
    pub fn simple_name(self) -> &'static str {
        match self {
            CompressionAlgorithm::Lz4 => "LZ4Compressor",
            CompressionAlgorithm::Snappy => "SnappyCompressor",
            CompressionAlgorithm::Deflate => "DeflateCompressor",
            CompressionAlgorithm::Zstd => "ZstdCompressor",
            CompressionAlgorithm::Noop => "NoopCompressor",
        }
    }

    /// Full class name, as stored in `system_schema.tables.compression`.
    pub fn class_name(self) -> String {
        format!("{COMPRESSOR_PACKAGE}{}", self.simple_name())
    }

    /// Resolves a short or full class name (short names get Cassandra's package prepended).
    pub fn from_class(name: &str) -> Result<CompressionAlgorithm> {
        let full = if name.contains('.') {
            name.to_string()
        } else {
            format!("{COMPRESSOR_PACKAGE}{name}")
        };
        match Self::ALL.into_iter().find(|a| a.class_name() == full) {
            Some(a) => Ok(a),
            None => config(format!("Could not create Compression for type {full}")),
        }
    }

    fn supported_options(self) -> &'static [&'static str] {
        match self {
            CompressionAlgorithm::Lz4 => &["lz4_high_compressor_level", "lz4_compressor_type"],
            CompressionAlgorithm::Zstd => &["compression_level"],
            _ => &[],
        }
    }
}

/// `compression = {...}`: `algorithm == None` means compression is disabled.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressionParams {
    pub algorithm: Option<CompressionAlgorithm>,
    /// Uncompressed chunk size in KiB (a power of two).
    pub chunk_length_kb: i32,
    /// A chunk is stored uncompressed unless it shrinks by this ratio; 0 disables the check.
    pub min_compress_ratio: f64,
    /// Compressor-specific sub-options (`lz4_compressor_type`, `compression_level`, ...), as given.
    pub other_options: BTreeMap<String, String>,
}

impl Default for CompressionParams {
    /// LZ4 with 16 KiB chunks.
    fn default() -> Self {
        CompressionParams {
            algorithm: Some(CompressionAlgorithm::Lz4),
            chunk_length_kb: DEFAULT_CHUNK_LENGTH_KB,
            min_compress_ratio: 0.0,
            other_options: BTreeMap::new(),
        }
    }
}

impl CompressionParams {
    /// No compression (`{'enabled': 'false'}`).
    pub fn disabled() -> Self {
        CompressionParams {
            algorithm: None,
            ..Self::default()
        }
    }

    /// Whether sstables of this table are compressed.
    pub fn enabled(&self) -> bool {
        self.algorithm.is_some()
    }

    /// Chunk length in bytes.
    pub fn chunk_length_bytes(&self) -> i32 {
        self.chunk_length_kb.saturating_mul(1024)
    }

    /// Largest compressed chunk still worth storing compressed (`i32::MAX` when unlimited).
    pub fn max_compressed_length(&self) -> i32 {
        max_compressed_length(self.chunk_length_bytes(), self.min_compress_ratio)
    }

    /// Parses and validates the map as Cassandra 5.0 does (also used when reading it back from
    /// `system_schema`). An empty map disables compression, as in Cassandra.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<CompressionParams> {
        let mut options = map.clone();
        let enabled = match map.get(ENABLED) {
            None => true,
            Some(v) => super::java::parse_bool_lenient(v),
        };
        if !map.is_empty() && enabled && !map.contains_key(CLASS) {
            return config(format!(
                "Missing sub-option '{CLASS}' for the 'compression' option."
            ));
        }
        options.remove(ENABLED);
        if !enabled && !options.is_empty() {
            return config(format!(
                "If the '{ENABLED}' option is set to false no other options must be specified"
            ));
        }
        let class = match options.remove(CLASS) {
            Some(c) if c.is_empty() => {
                return config(format!(
                    "The '{CLASS}' option must not be empty. To disable compression use 'enabled' : false"
                ))
            }
            other => other,
        };
        let chunk_length_kb = match options.remove(CHUNK_LENGTH_IN_KB) {
            None => DEFAULT_CHUNK_LENGTH_KB,
            Some(v) => parse_chunk_length(&v)?,
        };
        let min_compress_ratio = match options.remove(MIN_COMPRESS_RATIO) {
            None => 0.0,
            Some(v) => match parse_double(&v).filter(|r| !r.is_nan()) {
                Some(r) => r,
                None => return config(format!("Invalid value for {MIN_COMPRESS_RATIO}")),
            },
        };
        let algorithm = match class {
            None => {
                if !options.is_empty() {
                    return config(format!(
                        "Unknown compression options ({}) since no compression class found",
                        super::java::key_list(options.keys())
                    ));
                }
                None
            }
            Some(c) => {
                let algorithm = CompressionAlgorithm::from_class(&c)?;
                check_compressor_options(algorithm, &options)?;
                Some(algorithm)
            }
        };
        let params = CompressionParams {
            algorithm,
            chunk_length_kb,
            min_compress_ratio,
            other_options: options,
        };
        params.validate()?;
        Ok(params)
    }

    fn validate(&self) -> Result<()> {
        let chunk = self.chunk_length_bytes();
        if chunk <= 0 {
            return config(format!("Invalid negative or null {CHUNK_LENGTH_IN_KB}"));
        }
        if chunk & (chunk - 1) != 0 {
            return config(format!("{CHUNK_LENGTH_IN_KB} must be a power of 2"));
        }
        let max_len = self.max_compressed_length();
        if max_len < 0 {
            return config(format!("Invalid negative {MIN_COMPRESS_RATIO}"));
        }
        if max_len > chunk && max_len < i32::MAX {
            return config(format!(
                "{MIN_COMPRESS_RATIO} can either be 0 or greater than or equal to 1"
            ));
        }
        Ok(())
    }

    /// The map as `system_schema.tables.compression` stores it and DESCRIBE prints it.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let Some(algorithm) = self.algorithm else {
            return BTreeMap::from([(ENABLED.to_string(), "false".to_string())]);
        };
        let mut map = self.other_options.clone();
        map.insert(CLASS.to_string(), algorithm.class_name());
        map.insert(
            CHUNK_LENGTH_IN_KB.to_string(),
            self.chunk_length_kb.to_string(),
        );
        if self.min_compress_ratio != 0.0 {
            map.insert(
                MIN_COMPRESS_RATIO.to_string(),
                double_to_string(self.min_compress_ratio),
            );
        }
        map
    }
}

/// `ceil(min(chunk / ratio, i32::MAX))`, saturating like Java's `(int)` cast.
fn max_compressed_length(chunk_bytes: i32, ratio: f64) -> i32 {
    let v = (f64::from(chunk_bytes) / ratio)
        .min(f64::from(i32::MAX))
        .ceil();
    v as i32
}

fn parse_chunk_length(v: &str) -> Result<i32> {
    let Some(kb) = parse_int(v) else {
        return config(format!("Invalid value for {CHUNK_LENGTH_IN_KB}"));
    };
    if kb > MAX_CHUNK_LENGTH_KB {
        return config(format!("Value of {CHUNK_LENGTH_IN_KB} is too large ({kb})"));
    }
    Ok(kb)
}

/// Compressor-specific checks, in the order Cassandra's `create` runs them, then unknown keys.
fn check_compressor_options(
    algorithm: CompressionAlgorithm,
    options: &BTreeMap<String, String>,
) -> Result<()> {
    match algorithm {
        CompressionAlgorithm::Lz4 => {
            if let Some(t) = options.get("lz4_compressor_type") {
                if t != "fast" && t != "high" {
                    return config(format!(
                        "Invalid compressor type '{t}' specified for LZ4 parameter 'lz4_compressor_type'. Valid options are [high, fast]."
                    ));
                }
            }
            if let Some(l) = options.get("lz4_high_compressor_level") {
                let ok = parse_int(l)
                    .is_some_and(|n| (LZ4_HIGH_LEVEL_MIN..=LZ4_HIGH_LEVEL_MAX).contains(&n));
                if !ok {
                    return config(format!(
                        "Invalid value [{l}] for parameter 'lz4_high_compressor_level'. Value must be between {LZ4_HIGH_LEVEL_MIN} and {LZ4_HIGH_LEVEL_MAX}."
                    ));
                }
            }
        }
        CompressionAlgorithm::Zstd => {
            if let Some(l) = options.get("compression_level") {
                match parse_int(l) {
                    None => {
                        return config(format!(
                            "ZstdCompressor.create() threw an error: java.lang.NumberFormatException For input string: \"{l}\""
                        ))
                    }
                    Some(n) if !(ZSTD_LEVEL_MIN..=ZSTD_LEVEL_MAX).contains(&n) => {
                        return config(format!(
                            "ZstdCompressor.create() threw an error: java.lang.IllegalArgumentException compression_level={n} is invalid"
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        _ => {}
    }
    let supported = algorithm.supported_options();
    if let Some(unknown) = options.keys().find(|k| !supported.contains(&k.as_str())) {
        return config(format!("Unknown compression options {unknown}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(pairs: &[(&str, &str)]) -> String {
        CompressionParams::from_map(&map(pairs))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn default_renders_like_cassandra() {
        assert_eq!(
            CompressionParams::default().to_map(),
            map(&[
                ("chunk_length_in_kb", "16"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor")
            ])
        );
    }

    #[test]
    fn short_and_full_class_names() {
        for name in [
            "ZstdCompressor",
            "org.apache.cassandra.io.compress.ZstdCompressor",
        ] {
            let c = CompressionParams::from_map(&map(&[("class", name)])).unwrap();
            assert_eq!(c.algorithm, Some(CompressionAlgorithm::Zstd));
            assert_eq!(
                c.to_map()["class"],
                "org.apache.cassandra.io.compress.ZstdCompressor"
            );
        }
        assert_eq!(
            err(&[("class", "Foo")]),
            "Could not create Compression for type org.apache.cassandra.io.compress.Foo"
        );
    }

    #[test]
    fn disabling() {
        let off = CompressionParams::from_map(&map(&[("enabled", "false")])).unwrap();
        assert!(!off.enabled());
        assert_eq!(off.to_map(), map(&[("enabled", "false")]));
        assert!(!CompressionParams::from_map(&BTreeMap::new())
            .unwrap()
            .enabled());
        assert_eq!(
            err(&[("enabled", "false"), ("class", "LZ4Compressor")]),
            "If the 'enabled' option is set to false no other options must be specified"
        );
        assert_eq!(
            err(&[("class", "")]),
            "The 'class' option must not be empty. To disable compression use 'enabled' : false"
        );
    }

    #[test]
    fn chunk_length_limits() {
        let c = CompressionParams::from_map(&map(&[
            ("class", "LZ4Compressor"),
            ("chunk_length_in_kb", "64"),
        ]))
        .unwrap();
        assert_eq!(c.chunk_length_bytes(), 65536);
        let max_pow2 = (MAX_CHUNK_LENGTH_KB + 1) / 2;
        assert!(CompressionParams::from_map(&map(&[
            ("class", "LZ4Compressor"),
            ("chunk_length_in_kb", &max_pow2.to_string()),
        ]))
        .is_ok());
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("chunk_length_in_kb", "48")]),
            "chunk_length_in_kb must be a power of 2"
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("chunk_length_in_kb", "0")]),
            "Invalid negative or null chunk_length_in_kb"
        );
        assert_eq!(
            err(&[
                ("class", "LZ4Compressor"),
                ("chunk_length_in_kb", "2097152")
            ]),
            "Value of chunk_length_in_kb is too large (2097152)"
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("chunk_length_in_kb", "x")]),
            "Invalid value for chunk_length_in_kb"
        );
    }

    #[test]
    fn old_names_and_crc_are_refused() {
        assert_eq!(
            err(&[("sstable_compression", "LZ4Compressor")]),
            "Missing sub-option 'class' for the 'compression' option."
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("chunk_length_kb", "64")]),
            "Unknown compression options chunk_length_kb"
        );
        assert_eq!(
            err(&[("class", "SnappyCompressor"), ("crc_check_chance", "0.5")]),
            "Unknown compression options crc_check_chance"
        );
    }

    #[test]
    fn ratio_and_compressor_options() {
        let c = CompressionParams::from_map(&map(&[
            ("class", "LZ4Compressor"),
            ("min_compress_ratio", "1.1"),
            ("lz4_compressor_type", "high"),
            ("lz4_high_compressor_level", "17"),
        ]))
        .unwrap();
        assert_eq!(c.to_map()["min_compress_ratio"], "1.1");
        assert_eq!(c.to_map()["lz4_compressor_type"], "high");
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("min_compress_ratio", "0.5")]),
            "min_compress_ratio can either be 0 or greater than or equal to 1"
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("min_compress_ratio", "-1")]),
            "Invalid negative min_compress_ratio"
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("lz4_high_compressor_level", "18")]),
            "Invalid value [18] for parameter 'lz4_high_compressor_level'. Value must be between 1 and 17."
        );
        assert_eq!(
            err(&[("class", "LZ4Compressor"), ("lz4_compressor_type", "slow")]),
            "Invalid compressor type 'slow' specified for LZ4 parameter 'lz4_compressor_type'. Valid options are [high, fast]."
        );
        assert!(CompressionParams::from_map(&map(&[
            ("class", "ZstdCompressor"),
            ("compression_level", "22")
        ]))
        .is_ok());
        assert_eq!(
            err(&[("class", "ZstdCompressor"), ("compression_level", "23")]),
            "ZstdCompressor.create() threw an error: java.lang.IllegalArgumentException compression_level=23 is invalid"
        );
    }
}
