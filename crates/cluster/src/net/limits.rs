//! Every limit of internode messaging as a named constant.
//!
//! The values are those of docs/format/internode.md (section 3) and
//! docs/design/cluster.md (section 4.2); each is tested at N (accepted)
//! and N + 1 (refused), in the module that enforces it. Byte counts are
//! `usize`; a frame's payload length travels as a `u32` and is compared
//! after widening, never narrowed.

use std::time::Duration;

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// Largest payload of one frame; a longer one makes the frame Invalid.
/// A mutation is at most 16 MiB with the default commitlog segment size,
/// so every mutation fits.
pub const MAX_FRAME_PAYLOAD_BYTES: usize = 32 * MIB;

/// Largest payload of HELLO, HELLO_ACK and HELLO_REJECT.
pub const MAX_HANDSHAKE_PAYLOAD_BYTES: usize = 4 * KIB;

/// Payloads of at most this many bytes go on the small connection, longer
/// ones on the bulk connection.
pub const BULK_THRESHOLD_BYTES: usize = 16 * KIB;

/// Longest cluster name a HELLO may carry.
pub const MAX_CLUSTER_NAME_BYTES: usize = 256;

/// Longest message of a failure body or of a HELLO_REJECT.
pub const MAX_FAILURE_MESSAGE_BYTES: usize = KIB;

/// Longest release string (`varve 0.1.0`) a HELLO may carry.
pub const MAX_RELEASE_BYTES: usize = 64;

/// Most slices in one READ or RANGE_READ (query's `MAX_IN_PRODUCT`);
/// enforced by the payload codecs of the steps that add those verbs.
pub const MAX_SLICES_PER_READ: usize = 10_000;

/// Most entries in one message: tables in a MUTATION, mutations in a
/// BATCH_STORE, partitions in a RANGE_READ_RSP; enforced by the payload
/// codecs of the steps that add those verbs.
pub const MAX_ENTRIES_PER_MESSAGE: usize = 65_536;

/// Largest GOSSIP payload. Equal to [`BULK_THRESHOLD_BYTES`], so gossip
/// always travels on the small connection's urgent queue; a node fills its
/// deltas up to this size and leaves the rest for the next round.
pub const MAX_GOSSIP_PAYLOAD_BYTES: usize = BULK_THRESHOLD_BYTES;

/// Most digests, or most node deltas, in one GOSSIP message (256 digests
/// take 8 KiB). A larger cluster rotates which nodes a SYN names.
pub const MAX_GOSSIP_NODES: usize = 256;

/// Most keys of one node in a GOSSIP delta, and in the state a node keeps
/// for each peer (ten keys and the heartbeat are used today).
pub const MAX_GOSSIP_ENTRIES_PER_NODE: usize = 64;

/// Longest value of one gossip key (a data centre name, a schema version).
pub const MAX_GOSSIP_VALUE_BYTES: usize = 512;

/// A replica stops adding rows to a response past this many bytes and
/// answers "more" (used by the read verbs, later steps).
pub const REPLICA_RESPONSE_BYTES_SOFT_MAX: usize = 8 * MIB;

/// Frames queued for one peer's small connection (urgent and normal
/// queues together); an enqueue past it fails at once.
pub const SMALL_QUEUE_BYTES_MAX: usize = 4 * MIB;

/// Frames queued for one peer's bulk connection.
pub const BULK_QUEUE_BYTES_MAX: usize = 64 * MIB;

/// Frames queued for all peers together.
pub const OUTBOUND_BYTES_MAX: usize = 256 * MIB;

/// Frames read from one peer but not yet handled; past it the node stops
/// reading that peer's connections and TCP pushes back on the sender.
pub const INBOUND_BYTES_MAX_PER_PEER: usize = 64 * MIB;

/// Most frames gathered into one vectored write.
pub const WRITE_BATCH_FRAMES_MAX: usize = 64;

/// Most bytes gathered into one vectored write (a single larger frame is
/// still written whole).
pub const WRITE_BATCH_BYTES_MAX: usize = 256 * KIB;

/// How much a connection's read buffer grows by at a time: it never
/// reserves a length announced by the peer, only room for what arrives.
pub const READ_CHUNK_BYTES: usize = 64 * KIB;

/// The whole handshake, from the accepted connection (or the connect) to
/// HELLO_ACK.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Writing one batch of frames. A write that cannot finish in this time
/// means the peer has not read for that long (its buffers and ours are
/// full): the connection is closed and the next frame opens a new one.
/// The application's side of what cassandra.yaml's
/// `internode_tcp_user_timeout` (30 s) asks of the kernel: without it a
/// connection whose segments vanished (a partition, a peer gone silently,
/// a middlebox that lost its state) blocks its lane until TCP gives up,
/// about 15 minutes on Linux.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long data written to an internode socket may stay unacknowledged
/// by the peer before the kernel closes the connection (`TCP_USER_TIMEOUT`,
/// cassandra.yaml's `internode_tcp_user_timeout`, 30 s): a peer that
/// vanished without a reset is noticed even before a send buffer fills.
pub const INTERNODE_TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// Opening a TCP connection (cassandra.yaml `internode_tcp_connect_timeout`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// First wait before reconnecting after a failed attempt.
pub const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(100);

/// Longest wait between reconnection attempts; also the wait after a
/// HELLO_REJECT other than "shutting down".
pub const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Backoff waits vary by up to this many percent either way.
pub const RECONNECT_JITTER_PERCENT: u64 = 20;

/// Invalid frames and rejected handshakes are logged at most this often
/// per peer address.
pub const LOG_INTERVAL: Duration = Duration::from_secs(60);

// The relations the values must keep, checked when the crate compiles.
// Every queue holds at least one frame of its lane.
const _: () = assert!(SMALL_QUEUE_BYTES_MAX > BULK_THRESHOLD_BYTES);
const _: () = assert!(BULK_QUEUE_BYTES_MAX > MAX_FRAME_PAYLOAD_BYTES);
const _: () = assert!(OUTBOUND_BYTES_MAX >= BULK_QUEUE_BYTES_MAX + SMALL_QUEUE_BYTES_MAX);
// A largest frame can always be read.
const _: () = assert!(INBOUND_BYTES_MAX_PER_PEER > MAX_FRAME_PAYLOAD_BYTES);
// Payload lengths fit the u32 header field.
const _: () = assert!(MAX_FRAME_PAYLOAD_BYTES <= u32::MAX as usize);
const _: () = assert!(MAX_HANDSHAKE_PAYLOAD_BYTES < BULK_THRESHOLD_BYTES);
// Gossip stays on the urgent queue, and a full SYN of digests fits.
const _: () = assert!(MAX_GOSSIP_PAYLOAD_BYTES <= BULK_THRESHOLD_BYTES);
const _: () = assert!(MAX_GOSSIP_NODES * 32 + 16 <= MAX_GOSSIP_PAYLOAD_BYTES);
// One node's largest entry fits a message with room to spare.
const _: () = assert!(MAX_GOSSIP_VALUE_BYTES * 4 <= MAX_GOSSIP_PAYLOAD_BYTES);
const _: () = assert!(RECONNECT_BACKOFF_MIN.as_millis() < RECONNECT_BACKOFF_MAX.as_millis());
const _: () = assert!(RECONNECT_JITTER_PERCENT < 100);
