//! The admin port's snapshot endpoints (listed in [`crate::admin`]'s
//! module doc), and the percent-decoding of query parameters: an import's
//! directory is a path, which may hold any byte.

use varve_query::{Processor, QueryError};

/// The snapshot endpoints' paths.
const PATHS: [&str; 4] = [
    "/nodetool/snapshot",
    "/nodetool/listsnapshots",
    "/nodetool/clearsnapshot",
    "/nodetool/import",
];

/// Status, content type and body of a snapshot endpoint, or `None` when
/// `path` is not one. `get` reads a query parameter (absent when empty).
pub(crate) fn route(
    method: &str,
    path: &str,
    get: &dyn Fn(&str) -> Option<String>,
    processor: &Processor,
) -> Option<(u16, &'static str, String)> {
    let list = |name: &str| -> Vec<String> {
        get(name)
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    };
    let flag = |name: &str| get(name).is_some_and(|v| v == "true");
    let result = match (method, path) {
        ("POST", "/nodetool/snapshot") => processor.snapshot(
            &list("keyspaces"),
            get("table").as_deref(),
            &get("tag").unwrap_or_default(),
        ),
        ("GET", "/nodetool/listsnapshots") => processor.list_snapshots_text(),
        ("POST", "/nodetool/clearsnapshot") => {
            processor.clear_snapshot(get("tag").as_deref(), flag("all"), &list("keyspaces"))
        }
        ("POST", "/nodetool/import") => match (get("keyspace"), get("table"), get("dir")) {
            (Some(k), Some(t), Some(d)) => {
                processor.import(&k, &t, std::path::Path::new(&d), flag("copy_data"))
            }
            _ => Err(QueryError::Invalid(
                "import needs a keyspace, a table and a directory".into(),
            )),
        },
        (_, p) if PATHS.contains(&p) => {
            return Some((405, "text/plain", "wrong method\n".to_string()))
        }
        _ => return None,
    };
    Some(match result {
        Ok(text) => (200, "text/plain", text),
        Err(e) => (400, "text/plain", format!("{e}\n")),
    })
}

/// Decodes `%XX` escapes (`+` stays itself); a `%` not followed by two
/// hex digits is kept as it is, and bytes that are not UTF-8 become U+FFFD.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_and_the_rest_stays() {
        assert_eq!(percent_decode("/tmp/a%20b%2Cc%25"), "/tmp/a b,c%");
        assert_eq!(percent_decode("ks_1"), "ks_1");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("a+b%+1"), "a+b%+1");
        assert_eq!(percent_decode("%C3%A9"), "é");
        assert_eq!(percent_decode("%FF"), "\u{FFFD}");
    }
}
