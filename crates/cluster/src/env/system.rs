//! The production [`Network`] and [`Clock`]: tokio's TCP and timers and
//! the system's wall clock. The only place in the crate allowed to call
//! them directly (crates/cluster/clippy.toml).

#![allow(clippy::disallowed_methods)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::time::Instant;

use super::{BoxFuture, BoxStream, Clock, Listener, Network};
use crate::net::limits::INTERNODE_TCP_USER_TIMEOUT;

/// TCP through tokio. Every stream has Nagle's algorithm off (frames are
/// already gathered into one write per wake-up) and, on Linux,
/// [`INTERNODE_TCP_USER_TIMEOUT`].
///
/// Connections leave from `source` when one is set (the node's
/// `listen_address`, as Cassandra binds its outbound connections), so a
/// peer, a firewall or a routing rule sees which node opened them; on
/// 127.0.0.x the kernel would otherwise pick 127.0.0.1 for every node.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioNetwork {
    source: Option<IpAddr>,
}

impl TokioNetwork {
    /// Connections from the address the kernel picks.
    pub const ANY_SOURCE: TokioNetwork = TokioNetwork { source: None };

    /// Connections from `source` (an ephemeral port on it); an
    /// unspecified address (`0.0.0.0`, `::`) leaves the choice to the
    /// kernel.
    pub fn from_source(source: IpAddr) -> TokioNetwork {
        TokioNetwork {
            source: (!source.is_unspecified()).then_some(source),
        }
    }

    async fn open(&self, addr: SocketAddr) -> io::Result<TcpStream> {
        let Some(source) = self.source else {
            return TcpStream::connect(addr).await;
        };
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        socket.bind(SocketAddr::new(source, 0))?;
        socket.connect(addr).await
    }
}

struct TokioListener(TcpListener);

impl Listener for TokioListener {
    fn accept(&self) -> BoxFuture<'_, io::Result<(BoxStream, SocketAddr)>> {
        Box::pin(async move {
            let (stream, addr) = self.0.accept().await?;
            configure(&stream)?;
            Ok((Box::new(stream) as BoxStream, addr))
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

impl Network for TokioNetwork {
    fn bind(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<Box<dyn Listener>>> {
        Box::pin(async move {
            let listener = TcpListener::bind(addr).await?;
            Ok(Box::new(TokioListener(listener)) as Box<dyn Listener>)
        })
    }

    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<BoxStream>> {
        Box::pin(async move {
            let stream = self.open(addr).await?;
            configure(&stream)?;
            Ok(Box::new(stream) as BoxStream)
        })
    }
}

/// Nagle off, and the user timeout where the system has one.
fn configure(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    set_user_timeout(stream, INTERNODE_TCP_USER_TIMEOUT)
}

#[cfg(target_os = "linux")]
fn set_user_timeout(stream: &TcpStream, timeout: Duration) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let ms = libc::c_uint::try_from(timeout.as_millis()).unwrap_or(libc::c_uint::MAX);
    // SAFETY: setsockopt on a socket this stream owns, with a pointer to a
    // c_uint that lives for the call and its exact size.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            (&ms as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set_user_timeout(_stream: &TcpStream, _timeout: Duration) -> io::Result<()> {
    Ok(())
}

/// tokio's monotonic clock and timers, and the system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn wall_micros(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            // A clock set before 1970.
            Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn streams_connect_over_loopback() {
        let net = TokioNetwork::ANY_SOURCE;
        let listener = net.bind(([127, 0, 0, 1], 0).into()).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut client = net.connect(addr).await.expect("connect");
        let (mut server, _) = listener.accept().await.expect("accept");
        client.write_all(b"ping").await.expect("write");
        let mut got = [0u8; 4];
        server.read_exact(&mut got).await.expect("read");
        assert_eq!(&got, b"ping");
    }

    #[tokio::test]
    async fn connections_leave_from_the_source_address() {
        let any = TokioNetwork::ANY_SOURCE;
        let listener = any.bind(([127, 0, 0, 1], 0).into()).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        for (net, from) in [
            (
                TokioNetwork::from_source([127, 0, 0, 7].into()),
                [127, 0, 0, 7],
            ),
            (
                TokioNetwork::from_source([0, 0, 0, 0].into()),
                [127, 0, 0, 1],
            ),
        ] {
            let _client = net.connect(addr).await.expect("connect");
            let (_, peer) = listener.accept().await.expect("accept");
            assert_eq!(peer.ip(), IpAddr::from(from));
        }
    }

    /// The user timeout a socket has, in milliseconds.
    #[cfg(target_os = "linux")]
    fn user_timeout_ms(stream: &TcpStream) -> libc::c_uint {
        use std::os::fd::AsRawFd;
        let mut ms: libc::c_uint = 0;
        let mut len = std::mem::size_of::<libc::c_uint>() as libc::socklen_t;
        // SAFETY: getsockopt into a c_uint of the size given, on a socket
        // the stream owns.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_USER_TIMEOUT,
                (&mut ms as *mut libc::c_uint).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        ms
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn internode_sockets_get_the_user_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let stream = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        assert_eq!(user_timeout_ms(&stream), 0, "the kernel's default");
        configure(&stream).expect("configures");
        assert_eq!(
            u128::from(user_timeout_ms(&stream)),
            INTERNODE_TCP_USER_TIMEOUT.as_millis()
        );
        assert!(stream.nodelay().expect("nodelay"));
    }

    #[tokio::test]
    async fn the_clock_moves_forward() {
        let clock = SystemClock;
        let before = clock.now();
        clock.sleep(Duration::from_millis(1)).await;
        assert!(clock.now() > before);
        // After 2020-01-01.
        assert!(clock.wall_micros() > 1_577_836_800_000_000);
    }
}
