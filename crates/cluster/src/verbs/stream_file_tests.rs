//! STREAM_FILE and STREAM_FILE_OFFER payloads: round trips, every limit
//! at N and N + 1, and every truncation or disorder refused.

use super::*;

fn file(generation: u64) -> FileInfo {
    FileInfo {
        generation,
        size: 4096 + generation,
        first_token: -7,
        last_token: 90,
        partitions: 3,
        crc: 0xdead_beef,
    }
}

fn offer(files: usize, ranges: usize) -> Offer {
    Offer {
        table: 9,
        session: 77,
        source: HostId([5; 16]),
        address: ([127, 0, 0, 3], 7000).into(),
        ranges: (0..ranges as i64).map(|i| (i * 10, i * 10 + 5)).collect(),
        files: (1..=files as u64).map(file).collect(),
    }
}

fn every_cut_refused<T: std::fmt::Debug>(
    bytes: &Bytes,
    decode: impl Fn(&Bytes) -> Result<T, PayloadError>,
) {
    for cut in 0..bytes.len() {
        assert!(decode(&bytes.slice(..cut)).is_err(), "cut at {cut}");
    }
}

#[test]
fn requests_round_trip_and_truncations_are_refused() {
    let requests = [
        FileRequest::List {
            table: 3,
            ranges: vec![(i64::MIN, -5), (100, 100)],
        },
        FileRequest::Chunk {
            session: 12,
            table: 3,
            generation: 40,
            offset: 1 << 33,
            max_bytes: 1 << 20,
        },
        FileRequest::Release { session: 12 },
    ];
    for req in requests {
        let bytes = encode_request(&req);
        assert_eq!(decode_request(&bytes), Ok(req));
        every_cut_refused(&bytes, decode_request);
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(decode_request(&Bytes::from(longer)).is_err(), "trailing");
    }
    assert!(decode_request(&Bytes::from_static(&[9])).is_err(), "kind 9");
}

#[test]
fn responses_round_trip_and_truncations_are_refused() {
    let responses = [
        FileResponse::Listed {
            session: 4,
            files: vec![file(1), file(8)],
        },
        FileResponse::Listed {
            session: 0,
            files: vec![],
        },
        FileResponse::Chunk {
            bytes: Bytes::from_static(b"some bytes of an sstable"),
            crc: 17,
        },
        FileResponse::Released,
    ];
    for rsp in responses {
        let bytes = encode_response(&rsp);
        assert_eq!(decode_response(&bytes), Ok(rsp));
        every_cut_refused(&bytes, decode_response);
    }
}

#[test]
fn an_offer_and_its_answer_round_trip() {
    let o = offer(3, 2);
    let bytes = encode_offer(&o);
    assert_eq!(decode_offer(&bytes), Ok(o));
    every_cut_refused(&bytes, decode_offer);
    let installed = encode_installed(&[1, 8, 9]);
    assert_eq!(decode_installed(&installed), Ok(vec![1, 8, 9]));
    every_cut_refused(&installed, decode_installed);
    assert!(
        decode_offer(&encode_offer(&offer(0, 2))).is_err(),
        "no files"
    );
    assert!(
        decode_offer(&encode_offer(&offer(2, 0))).is_err(),
        "no ranges"
    );
}

#[test]
fn files_out_of_order_or_ending_before_they_start_are_refused() {
    let mut o = offer(2, 1);
    o.files.swap(0, 1);
    assert!(decode_offer(&encode_offer(&o)).is_err());
    let mut o = offer(2, 1);
    o.files[1].generation = o.files[0].generation;
    assert!(
        decode_offer(&encode_offer(&o)).is_err(),
        "one generation twice"
    );
    let mut o = offer(1, 1);
    o.files[0].first_token = o.files[0].last_token + 1;
    assert!(decode_offer(&encode_offer(&o)).is_err());
}

#[test]
fn the_chunk_size_is_bounded_at_n() {
    let chunk = |max_bytes: u64| {
        let mut out = vec![1u8];
        out.extend_from_slice(&[0; 8 + 16 + 8 + 8]);
        put_varint(&mut out, max_bytes);
        decode_request(&Bytes::from(out))
    };
    let n = MAX_STREAM_FILE_CHUNK_BYTES as u64;
    assert!(chunk(n).is_ok());
    assert!(chunk(n + 1).is_err());
    assert!(chunk(0).is_err());
    // An answer of N bytes decodes; N + 1 is refused.
    let answer = |len: usize| {
        encode_response(&FileResponse::Chunk {
            bytes: Bytes::from(vec![7u8; len]),
            crc: 0,
        })
    };
    assert!(decode_response(&answer(MAX_STREAM_FILE_CHUNK_BYTES)).is_ok());
    assert!(decode_response(&answer(MAX_STREAM_FILE_CHUNK_BYTES + 1)).is_err());
}

#[test]
fn files_ranges_and_generations_are_bounded_at_n() {
    assert!(decode_offer(&encode_offer(&offer(MAX_STREAM_FILES, 1))).is_ok());
    assert!(decode_offer(&encode_offer(&offer(MAX_STREAM_FILES + 1, 1))).is_err());
    assert!(decode_offer(&encode_offer(&offer(1, MAX_STREAM_FILE_RANGES))).is_ok());
    assert!(decode_offer(&encode_offer(&offer(1, MAX_STREAM_FILE_RANGES + 1))).is_err());
    let gens = |n: usize| (1..=n as u64).collect::<Vec<_>>();
    assert!(decode_installed(&encode_installed(&gens(MAX_STREAM_FILES))).is_ok());
    assert!(decode_installed(&encode_installed(&gens(MAX_STREAM_FILES + 1))).is_err());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The layouts of docs/format/internode.md, byte for byte: a change here
/// is a new internode version (section 8).
#[test]
fn payloads_have_their_documented_bytes() {
    let list = encode_request(&FileRequest::List {
        table: 1,
        ranges: vec![(-1, 2)],
    });
    assert_eq!(
        hex(&list),
        concat!(
            "00",                               // kind LIST
            "00000000000000000000000000000001", // table
            "01",                               // one range
            "ffffffffffffffff",                 // start
            "0000000000000002",                 // end
        )
    );
    let chunk = encode_request(&FileRequest::Chunk {
        session: 2,
        table: 1,
        generation: 3,
        offset: 4,
        max_bytes: 300,
    });
    assert_eq!(
        hex(&chunk),
        concat!(
            "01",
            "0000000000000002",
            "00000000000000000000000000000001",
            "0000000000000003",
            "0000000000000004",
            "ac02", // 300 as a varint
        )
    );
    let listed = encode_response(&FileResponse::Listed {
        session: 2,
        files: vec![FileInfo {
            generation: 3,
            size: 5,
            first_token: -1,
            last_token: 1,
            partitions: 6,
            crc: 7,
        }],
    });
    assert_eq!(
        hex(&listed),
        concat!(
            "00",
            "0000000000000002",
            "01",
            "0000000000000003",
            "0000000000000005",
            "ffffffffffffffff",
            "0000000000000001",
            "0000000000000006",
            "00000007",
        )
    );
    let bytes = encode_response(&FileResponse::Chunk {
        bytes: Bytes::from_static(b"ab"),
        crc: 9,
    });
    assert_eq!(hex(&bytes), "0102616200000009");
    assert_eq!(
        hex(&encode_request(&FileRequest::Release { session: 2 })),
        "020000000000000002"
    );
    assert_eq!(hex(&encode_response(&FileResponse::Released)), "02");
    assert_eq!(hex(&encode_installed(&[3])), "010000000000000003");
}
