//! Parsers for cassandra.yaml's quantities: data sizes (`16MiB`, `512KiB`,
//! `256`) and durations (`10000ms`, `10s`, `2m`). A bare number takes the
//! unit of the old `*_in_mb` / `*_in_ms` keys, given by the caller.

/// Bytes in `text`, a size like `16MiB`; a bare number is in `bare_unit_bytes`.
pub fn parse_size_bytes(text: &str, bare_unit_bytes: u64) -> Result<u64, String> {
    let (number, unit) = split_number(text)?;
    let factor = match unit {
        "" => bare_unit_bytes,
        "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit '{other}' in '{text}' (use B, KiB, MiB or GiB)"
            ))
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("size '{text}' is too large"))
}

/// Milliseconds in `text`, a duration like `10000ms` or `10s`; a bare
/// number is milliseconds.
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let (number, unit) = split_number(text)?;
    let factor: u64 = match unit {
        "" | "ms" | "milliseconds" => 1,
        "s" | "seconds" => 1_000,
        "m" | "minutes" => 60_000,
        "h" | "hours" => 3_600_000,
        "d" | "days" => 86_400_000,
        other => {
            return Err(format!(
                "unknown duration unit '{other}' in '{text}' (use ms, s, m, h or d)"
            ))
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("duration '{text}' is too large"))
}

fn split_number(text: &str) -> Result<(u64, &str), String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits == 0 {
        return Err(format!("'{text}' does not start with a number"));
    }
    let number = text[..digits]
        .parse::<u64>()
        .map_err(|e| format!("'{text}': {e}"))?;
    Ok((number, text[digits..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("16MiB", 1), Ok(16 << 20));
        assert_eq!(parse_size_bytes("16", 1 << 20), Ok(16 << 20));
        assert_eq!(parse_size_bytes("3 KiB", 1), Ok(3072));
        assert!(parse_size_bytes("MiB", 1).is_err());
        assert!(parse_size_bytes("4XB", 1).is_err());
        assert!(parse_size_bytes("99999999999999999999GiB", 1).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("10000ms"), Ok(10_000));
        assert_eq!(parse_duration_ms("10s"), Ok(10_000));
        assert_eq!(parse_duration_ms("250"), Ok(250));
        assert!(parse_duration_ms("").is_err());
        assert!(parse_duration_ms("5 fortnights").is_err());
    }
}
