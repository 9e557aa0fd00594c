//! Round-trip tests of responses for v4 and v5, and the no-panic property.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::*;
use crate::consistency::Consistency;
use crate::error_code::{ErrorCode, ErrorExtra, Failures};
use crate::event::{StatusChangeType, TopologyChangeType};
use crate::frame::{decode_envelope, MAX_FRAME_BODY_BYTES};
use crate::result::{ColumnSpec, Prepared, PreparedMetadata, ResultMetadata, Rows};
use crate::schema_change::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::types::tests::arb_type;
use bytes::BytesMut;
use proptest::prelude::*;

fn round_trip(
    version: u8,
    warnings: &[String],
    resp: &Response,
    c: Compression,
) -> DecodedResponse {
    let wire = encode_frame(version, 7, warnings, resp, c);
    let mut buf = BytesMut::from(wire.as_slice());
    let frame = decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
        .expect("valid")
        .expect("whole");
    assert!(buf.is_empty());
    assert_eq!(frame.header.stream, 7);
    decode_response(&frame, c).expect("decodes")
}

fn arb_column() -> impl Strategy<Value = ColumnSpec> {
    (
        prop_oneof![Just("ks"), Just("other")],
        prop_oneof![Just("t"), Just("u")],
        "[a-z]{1,6}",
        arb_type(),
    )
        .prop_map(|(k, t, name, ty)| ColumnSpec {
            keyspace: k.into(),
            table: t.into(),
            name,
            ty,
        })
}

fn arb_bytes() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..16).prop_map(Bytes::from)
}

fn arb_metadata(v5: bool) -> impl Strategy<Value = ResultMetadata> {
    (
        proptest::collection::vec(arb_column(), 0..4),
        proptest::option::of(arb_bytes()),
        proptest::option::of(arb_bytes()),
    )
        .prop_map(move |(columns, paging_state, new_id)| {
            let mut m = ResultMetadata::new(columns);
            m.paging_state = paging_state;
            m.new_metadata_id = if v5 { new_id } else { None };
            m
        })
}

fn arb_rows(v5: bool) -> impl Strategy<Value = Rows> {
    (arb_metadata(v5), 0..5usize, any::<bool>()).prop_flat_map(|(mut metadata, n, no_meta)| {
        let width = metadata.columns.len();
        if no_meta {
            metadata.no_metadata = true;
            metadata.columns.clear();
        }
        proptest::collection::vec(
            proptest::collection::vec(proptest::option::of(arb_bytes()), width),
            n,
        )
        .prop_map(move |rows| Rows {
            metadata: metadata.clone(),
            rows,
        })
    })
}

fn schema_change() -> SchemaChange {
    SchemaChange {
        change: SchemaChangeType::Created,
        target: SchemaChangeTarget::Function {
            keyspace: "ks".into(),
            name: "f".into(),
            arg_types: vec!["int".into()],
        },
    }
}

pub(crate) fn arb_result(v5: bool) -> impl Strategy<Value = ResultBody> {
    let prepared = (
        arb_bytes(),
        arb_bytes(),
        proptest::collection::vec(arb_column(), 0..3),
        proptest::collection::vec(any::<u16>(), 0..3),
        arb_metadata(v5),
        any::<bool>(),
    )
        .prop_map(move |(id, rid, columns, pk_indices, result, lwt)| {
            ResultBody::Prepared(Prepared {
                id,
                result_metadata_id: if v5 { rid } else { Bytes::new() },
                bind: PreparedMetadata {
                    columns,
                    pk_indices,
                    extra_flags: if lwt {
                        crate::result::metadata_flags::SCYLLA_LWT_MARK
                    } else {
                        0
                    },
                },
                result,
            })
        });
    prop_oneof![
        Just(ResultBody::Void),
        arb_rows(v5).prop_map(ResultBody::Rows),
        "[a-z]{1,10}".prop_map(ResultBody::SetKeyspace),
        prepared,
        Just(ResultBody::SchemaChange(schema_change())),
    ]
}

fn error_bodies(v5: bool) -> Vec<ErrorBody> {
    let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    let failures = if v5 {
        Failures {
            num_failures: 1,
            reasons: vec![(ip, 0x0001)],
        }
    } else {
        Failures {
            num_failures: 2,
            reasons: vec![],
        }
    };
    let cl = Consistency::LocalQuorum;
    let extras = vec![
        (ErrorCode::SERVER_ERROR, ErrorExtra::None),
        (
            ErrorCode::UNAVAILABLE,
            ErrorExtra::Unavailable {
                consistency: cl,
                required: 2,
                alive: 1,
            },
        ),
        (
            ErrorCode::WRITE_TIMEOUT,
            ErrorExtra::WriteTimeout {
                consistency: cl,
                received: 1,
                block_for: 2,
                write_type: "SIMPLE".into(),
                contentions: None,
            },
        ),
        (
            ErrorCode::WRITE_TIMEOUT,
            ErrorExtra::WriteTimeout {
                consistency: cl,
                received: 0,
                block_for: 2,
                write_type: "CAS".into(),
                contentions: v5.then_some(3),
            },
        ),
        (
            ErrorCode::READ_TIMEOUT,
            ErrorExtra::ReadTimeout {
                consistency: cl,
                received: 1,
                block_for: 2,
                data_present: true,
            },
        ),
        (
            ErrorCode::READ_FAILURE,
            ErrorExtra::ReadFailure {
                consistency: cl,
                received: 1,
                block_for: 2,
                failures: failures.clone(),
                data_present: false,
            },
        ),
        (
            ErrorCode::WRITE_FAILURE,
            ErrorExtra::WriteFailure {
                consistency: cl,
                received: 1,
                block_for: 2,
                failures,
                write_type: "BATCH".into(),
            },
        ),
        (
            ErrorCode::CAS_WRITE_UNKNOWN,
            ErrorExtra::CasWriteUnknown {
                consistency: Consistency::Serial,
                received: 1,
                block_for: 2,
            },
        ),
        (
            ErrorCode::FUNCTION_FAILURE,
            ErrorExtra::FunctionFailure {
                keyspace: "ks".into(),
                function: "f".into(),
                arg_types: vec!["int".into()],
            },
        ),
        (
            ErrorCode::ALREADY_EXISTS,
            ErrorExtra::AlreadyExists {
                keyspace: "ks".into(),
                table: "".into(),
            },
        ),
        (
            ErrorCode::UNPREPARED,
            ErrorExtra::Unprepared {
                id: Bytes::from_static(&[1, 2, 3]),
            },
        ),
        (ErrorCode::SYNTAX_ERROR, ErrorExtra::None),
    ];
    extras
        .into_iter()
        // v4 has no CAS_WRITE_UNKNOWN: it is sent as a WriteTimeout there
        // (the test below).
        .filter(|(code, _)| v5 || *code != ErrorCode::CAS_WRITE_UNKNOWN)
        .map(|(code, extra)| ErrorBody {
            code,
            message: format!("error {:#x}", code.0),
            extra,
        })
        .collect()
}

#[test]
fn cas_write_unknown_is_a_write_timeout_cas_before_v5() {
    let body = ErrorBody {
        code: ErrorCode::CAS_WRITE_UNKNOWN,
        message: "unknown".into(),
        extra: ErrorExtra::CasWriteUnknown {
            consistency: Consistency::Serial,
            received: 1,
            block_for: 2,
        },
    };
    let decoded = |version: u8| {
        let mut out = Vec::new();
        body.encode(version, &mut out);
        ErrorBody::decode(version, &mut crate::primitives::Reader::new(&out)).expect("decodes")
    };
    assert_eq!(decoded(5), body);
    let v4 = decoded(4);
    assert_eq!(v4.code, ErrorCode::WRITE_TIMEOUT);
    assert_eq!(
        v4.extra,
        ErrorExtra::WriteTimeout {
            consistency: Consistency::Serial,
            received: 1,
            block_for: 2,
            write_type: "CAS".into(),
            contentions: None,
        }
    );
}

fn fixed_responses(v5: bool) -> Vec<Response> {
    let addr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)), 9042);
    let mut out: Vec<Response> = error_bodies(v5).into_iter().map(Response::Error).collect();
    out.extend([
        Response::Ready,
        Response::Authenticate("org.apache.cassandra.auth.PasswordAuthenticator".into()),
        Response::Supported(vec![
            ("COMPRESSION".into(), vec!["lz4".into()]),
            (
                "PROTOCOL_VERSIONS".into(),
                crate::frame::supported_version_strings(),
            ),
        ]),
        Response::Event(Event::SchemaChange(schema_change())),
        Response::Event(Event::TopologyChange {
            change: TopologyChangeType::NewNode,
            addr,
        }),
        Response::Event(Event::StatusChange {
            change: StatusChangeType::Down,
            addr,
        }),
        Response::AuthChallenge(Some(Bytes::from_static(b"c"))),
        Response::AuthSuccess(None),
    ]);
    out
}

#[test]
fn fixed_responses_round_trip_in_both_versions() {
    for (version, v5) in [(4u8, false), (5, true)] {
        for resp in fixed_responses(v5) {
            for c in [Compression::None, Compression::Lz4] {
                let c = if v5 { Compression::None } else { c };
                let warnings = vec!["careful".to_string()];
                let d = round_trip(version, &warnings, &resp, c);
                assert_eq!(d.response, resp);
                assert_eq!(d.warnings, warnings);
            }
        }
    }
}

#[test]
fn failures_differ_between_v4_and_v5() {
    let ip = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    let e = ErrorBody {
        code: ErrorCode::READ_FAILURE,
        message: String::new(),
        extra: ErrorExtra::ReadFailure {
            consistency: Consistency::One,
            received: 0,
            block_for: 1,
            failures: Failures {
                num_failures: 1,
                reasons: vec![(ip, 2)],
            },
            data_present: false,
        },
    };
    let (mut v4, mut v5) = (Vec::new(), Vec::new());
    e.encode(4, &mut v4);
    e.encode(5, &mut v5);
    assert_eq!(
        v5.len(),
        v4.len() + 5 + 2,
        "v5 adds an [inetaddr] and a [short]"
    );
}

#[test]
fn warnings_flag_and_ready_never_compressed() {
    let wire = encode_frame(4, 0, &[], &Response::Ready, Compression::Lz4);
    assert_eq!(wire, vec![0x84, 0, 0, 0, opcode::READY, 0, 0, 0, 0]);
    let wire = encode_frame(
        4,
        0,
        &["w".into()],
        &Response::Result(ResultBody::Void),
        Compression::None,
    );
    assert_eq!(wire[1], flags::WARNING);
    let wire = encode_frame(
        5,
        0,
        &[],
        &Response::Result(ResultBody::Void),
        Compression::Lz4,
    );
    assert_eq!(wire[1], 0, "v5 frames are never compressed");
    let wire = encode_frame(
        4,
        0,
        &[],
        &Response::Result(ResultBody::Void),
        Compression::Lz4,
    );
    assert_eq!(wire[1], flags::COMPRESSION);
}

#[test]
fn tracing_id_comes_first() {
    let id = [7u8; 16];
    let wire = encode_frame_traced(
        4,
        1,
        Some(id),
        &["w".into()],
        &Response::Result(ResultBody::Void),
        Compression::None,
    );
    assert_eq!(&wire[HEADER_LEN..HEADER_LEN + 16], &id);
    let frame = decode_envelope(&mut BytesMut::from(wire.as_slice()), MAX_FRAME_BODY_BYTES)
        .expect("ok")
        .expect("frame");
    let d = decode_response(&frame, Compression::None).expect("decodes");
    assert_eq!(d.tracing_id, Some(id));
    assert_eq!(d.warnings, vec!["w".to_string()]);
}

#[test]
fn global_table_spec_is_used_when_columns_share_a_table() {
    let col = |name: &str, table: &str| ColumnSpec {
        keyspace: "ks".into(),
        table: table.into(),
        name: name.into(),
        ty: varve_types::CqlType::Int,
    };
    let one = ResultBody::Rows(Rows {
        metadata: ResultMetadata::new(vec![col("a", "t"), col("b", "t")]),
        rows: vec![],
    });
    let two = ResultBody::Rows(Rows {
        metadata: ResultMetadata::new(vec![col("a", "t"), col("b", "u")]),
        rows: vec![],
    });
    let (mut a, mut b) = (Vec::new(), Vec::new());
    one.encode(4, &mut a);
    two.encode(4, &mut b);
    assert_eq!(&a[4..8], &1i32.to_be_bytes(), "global flag set");
    assert_eq!(&b[4..8], &0i32.to_be_bytes(), "global flag clear");
}

/// The size hint of a rows result counts every value exactly: the frame is
/// at most the hint, and short of it by no more than the allowance for
/// the header and metadata (two columns here).
#[test]
fn rows_size_hint_covers_the_values() {
    let col = |name: &str| ColumnSpec {
        keyspace: "ks".into(),
        table: "t".into(),
        name: name.into(),
        ty: varve_types::CqlType::Blob,
    };
    for value_len in [0, 1, 32 * 1024] {
        let rows: Vec<Vec<Option<Bytes>>> = (0..64)
            .map(|i| vec![Some(Bytes::from(vec![i as u8; value_len])), None])
            .collect();
        let resp = Response::Result(ResultBody::Rows(Rows {
            metadata: ResultMetadata::new(vec![col("a"), col("b")]),
            rows,
        }));
        let hint = resp.encoded_len_hint();
        let len = encode_frame(4, 1, &[], &resp, Compression::None).len();
        assert!(
            len <= hint && hint - len <= 256,
            "{value_len}: {len} against {hint}"
        );
    }
}

proptest! {
    #[test]
    fn v4_results_round_trip(r in arb_result(false), lz4 in any::<bool>()) {
        let c = if lz4 { Compression::Lz4 } else { Compression::None };
        let resp = Response::Result(r);
        prop_assert_eq!(round_trip(4, &[], &resp, c).response, resp);
    }

    #[test]
    fn v5_results_round_trip(r in arb_result(true)) {
        let resp = Response::Result(r);
        prop_assert_eq!(round_trip(5, &[], &resp, Compression::None).response, resp);
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        crate::fuzz_decode(&data);
    }

    #[test]
    fn plausible_frames_never_panic(
        version in 3u8..6, flags in any::<u8>(), op in 0u8..0x11,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut data = FrameHeader { version, is_response: false, flags, stream: 1, opcode: op, body_len: body.len() as u32 }.encode().to_vec();
        data.extend_from_slice(&body);
        crate::fuzz_decode(&data);
        data[0] |= 0x80;
        crate::fuzz_decode(&data);
    }
}

/// Values around the splice threshold: short, one byte short of it, at it
/// and past it (or null).
fn arb_spliceable_value() -> impl Strategy<Value = Option<Bytes>> {
    let min = crate::SPLICE_MIN_BYTES;
    proptest::option::of(
        (
            prop_oneof![0..16usize, Just(min - 1), Just(min), Just(min + 7)],
            any::<u8>(),
        )
            .prop_map(|(len, b)| Bytes::from(vec![b; len])),
    )
}

proptest! {
    /// A spliced frame's pieces, put together, are exactly the frame
    /// `encode_frame_into` writes (with tracing and warnings too, after
    /// other frames in the same buffer), and every value at least
    /// `SPLICE_MIN_BYTES` long is left out of the bytes.
    #[test]
    fn spliced_frames_are_the_plain_frames(
        version in 4u8..6,
        rows in proptest::collection::vec(proptest::collection::vec(arb_spliceable_value(), 2), 0..6),
        traced in any::<bool>(),
        warned in any::<bool>(),
    ) {
        let col = |name: &str| ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty: varve_types::CqlType::Blob,
        };
        let long = rows
            .iter()
            .flatten()
            .flatten()
            .filter(|v| v.len() >= crate::SPLICE_MIN_BYTES)
            .count();
        let resp = Response::Result(ResultBody::Rows(Rows {
            metadata: ResultMetadata::new(vec![col("a"), col("b")]),
            rows,
        }));
        let warnings = if warned { vec!["w".to_string()] } else { vec![] };
        let envelope = Envelope {
            version,
            stream: 3,
            tracing_id: traced.then_some([9; 16]),
            warnings: &warnings,
        };
        let mut plain = Vec::new();
        let mut spliced = crate::Spliced::default();
        for _ in 0..2 {
            encode_frame_into(&mut plain, &envelope, &resp, Compression::None);
            encode_frame_spliced(&mut spliced, &envelope, &resp);
        }
        prop_assert_eq!(spliced.values.len(), 2 * long);
        prop_assert_eq!(spliced.len(), plain.len());
        prop_assert_eq!(spliced.to_vec(), plain);
    }
}
