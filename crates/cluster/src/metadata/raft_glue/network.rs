//! openraft's `RaftNetwork` over our messaging: RAFT_VOTE, RAFT_APPEND
//! and RAFT_SNAPSHOT requests to the peer's address, each under the
//! timeout openraft gives, and the handlers that answer them. Each
//! request names the host id it is meant for: a node that replaced a
//! dead one at the same address refuses requests still sent to the dead
//! one (its vote or its log would otherwise count as the dead node's).
//!
//! A send that cannot be queued, or a messaging that shut down, is
//! `Unreachable` (openraft then backs off, [`UNREACHABLE_BACKOFF_MIN`]
//! doubling up to [`UNREACHABLE_BACKOFF_MAX`]); no answer within the
//! timeout, a failure answer or a payload that does not decode is a
//! `NetworkError`, retried at the next heartbeat. Timeouts are not backed
//! off: the simulation showed that fewer requests on a connection a
//! partition left broken keep it open longer (messaging closes it once a
//! write stalls), and convergence after a heal took up to twice as long.
//! The price is openraft's log: it logs every failed request at ERROR,
//! one line per heartbeat to a peer that is down. An append whose payload would pass
//! `MAX_RAFT_PAYLOAD_BYTES` asks openraft to send fewer entries.

use std::time::Duration;

use bytes::Bytes;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::codec::{
    decode, encode_append_request, encode_snapshot_request, encode_vote_request, payload_fits,
    read_append_response, read_snapshot_answer, read_vote_response,
};
use super::{Peer, TypeConfig};
use crate::net::handshake::HostId;
use crate::net::wire::{Reader, WireError};
use crate::net::{Messaging, RequestError, Verb};

/// Why a payload is not sent.
#[derive(Debug, thiserror::Error)]
enum SendFailure {
    #[error("{0}")]
    Send(#[from] crate::net::SendError),
    #[error("{0}")]
    Request(#[from] RequestError),
    #[error("bad response: {0}")]
    Decode(#[from] WireError),
    #[error("payload of {0} bytes is over MAX_RAFT_PAYLOAD_BYTES")]
    TooLarge(usize),
}

type RpcError<E = openraft::error::Infallible> = RPCError<HostId, Peer, RaftError<HostId, E>>;

fn rpc_error<E: std::error::Error>(failure: SendFailure) -> RpcError<E> {
    match failure {
        SendFailure::Send(_) | SendFailure::Request(RequestError::Shutdown) => {
            RPCError::Unreachable(Unreachable::new(&failure))
        }
        other => RPCError::Network(NetworkError::new(&other)),
    }
}

/// The first pause after a peer did not answer.
pub const UNREACHABLE_BACKOFF_MIN: Duration = Duration::from_millis(500);
/// The longest pause: how late a peer that is back may hear again.
pub const UNREACHABLE_BACKOFF_MAX: Duration = Duration::from_secs(4);

/// The pauses between tries to a peer whose requests cannot be queued:
/// doubling from the minimum to the maximum.
fn unreachable_backoff() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(UNREACHABLE_BACKOFF_MIN), |d| {
        Some((*d * 2).min(UNREACHABLE_BACKOFF_MAX))
    })
}

/// Makes a client per peer.
#[derive(Clone, Debug)]
pub struct Network {
    pub messaging: Messaging,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: HostId, node: &Peer) -> PeerClient {
        PeerClient {
            messaging: self.messaging.clone(),
            target,
            peer: node.clone(),
        }
    }
}

/// Sends one peer's RAFT_* requests.
#[derive(Debug)]
pub struct PeerClient {
    messaging: Messaging,
    target: HostId,
    peer: Peer,
}

impl PeerClient {
    async fn call<T>(
        &self,
        verb: Verb,
        payload: Vec<u8>,
        option: &RPCOption,
        read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
    ) -> Result<T, SendFailure> {
        if !payload_fits(payload.len()) {
            return Err(SendFailure::TooLarge(payload.len()));
        }
        let response = self
            .messaging
            .request(
                self.peer.addr,
                verb,
                Bytes::from(payload),
                option.hard_ttl(),
            )?
            .await?;
        Ok(decode(&response.payload, read)?)
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    fn backoff(&self) -> Backoff {
        Backoff::new(unreachable_backoff())
    }

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<HostId>, RpcError> {
        let entries = rpc.entries.len() as u64;
        let payload = encode_append_request(self.target, &rpc);
        if !payload_fits(payload.len()) && entries > 1 {
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(entries / 2),
            ));
        }
        self.call(Verb::RAFT_APPEND, payload, &option, read_append_response)
            .await
            .map_err(rpc_error)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<HostId>, RpcError<InstallSnapshotError>> {
        let payload = encode_snapshot_request(self.target, &rpc);
        let answer = self
            .call(Verb::RAFT_SNAPSHOT, payload, &option, read_snapshot_answer)
            .await
            .map_err(rpc_error)?;
        answer.map_err(|e| {
            RPCError::RemoteError(RemoteError::new_with_node(
                self.target,
                self.peer.clone(),
                RaftError::APIError(e),
            ))
        })
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<HostId>,
        option: RPCOption,
    ) -> Result<VoteResponse<HostId>, RpcError> {
        let payload = encode_vote_request(self.target, &rpc);
        self.call(Verb::RAFT_VOTE, payload, &option, read_vote_response)
            .await
            .map_err(rpc_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_maximum() {
        let pauses: Vec<u64> = unreachable_backoff()
            .take(6)
            .map(|d| d.as_millis() as u64)
            .collect();
        assert_eq!(pauses, vec![500, 1000, 2000, 4000, 4000, 4000]);
    }
}
